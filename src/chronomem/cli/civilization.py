"""The demo's civilization section: 40 citizens, two causal chains, crisis context blocks with
plain similarity next to TCMF (issue: causal graph)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

from chronomem.clock import SimClock
from chronomem.engine import Memory

__all__ = ["CHAINS", "build_town", "run_civilization"]

START = datetime(1348, 3, 1, 8, tzinfo=UTC)
CITIZENS = [
    "Ada", "Bartholomew", "Cecily", "Dunstan", "Edith", "Florian", "Gisela", "Hamo", "Isolde",
    "Jocelyn", "Kendrick", "Lettice", "Matilda", "Nicholas", "Odo", "Petronilla", "Quentin",
    "Rohesia", "Simon", "Theobald", "Ursula", "Walter", "Ysolde", "Agnes", "Baldwin", "Clement",
    "Denise", "Emma", "Fulk", "Godfrey", "Hawise", "Ivo", "Juliana", "Lambert", "Mabel", "Nigel",
    "Osbert", "Philippa", "Ralph", "Sibyl",
]  # fmt: skip

# Each chain: (event text, kind, days after START, weight of the link to the next event,
# memories of citizens who witnessed it — worded unlike the crisis question).
CHAINS: dict[str, Sequence[tuple[str, str, int, float, Sequence[str]]]] = {
    "riot": (
        (
            "A drought left the river valley without rain for three months",
            "happening",
            0,
            0.9,
            (
                "The river was so low I could walk across it",
                "No rain has fallen on my barley since the spring sowing",
            ),
        ),
        (
            "The council ordered grain rationing",
            "decision",
            40,
            0.8,
            (
                "Each family now gets two measures of grain a week",
                "My ration token only buys half a loaf",
            ),
        ),
        (
            "A black market for bread grew behind the tannery",
            "outcome",
            55,
            0.9,
            ("A stranger behind the tannery sold me a loaf for a silver penny",),
        ),
        (
            "Angry crowds gathered at the granary gates",
            "outcome",
            68,
            1.0,
            ("People shout at the granary gates every evening",),
        ),
        ("Riot in the market square", "crisis", 75, 0.0, ()),
    ),
    "plague": (
        (
            "The council cut the healers' budget",
            "decision",
            10,
            0.9,
            ("The treasury stopped paying the town physicians",),
        ),
        (
            "The council refused to fund a quarantine house",
            "decision",
            45,
            1.0,
            ("Our petition for a quarantine house was turned down",),
        ),
        (
            "Sailors in the harbour fell ill with a fever",
            "happening",
            62,
            1.0,
            (
                "Two sailors off the Genoese ship came down with a strange fever",
                "A dockworker died of a fever that spread to his family",
            ),
        ),
        ("Plague in the market district", "crisis", 80, 0.0, ()),
    ),
}

# Memories that sound like the crises (what plain similarity finds) and everyday noise.
SYMPTOMS = (
    ("Stalls were smashed in the market square during the riot", 3),
    ("Stones were thrown at the guards in the market square", 2),
    ("Fires burned in the market square all night", 1),
    ("The sick are coughing in every house of the market district", 2),
    ("The market district is full of plague victims", 2),
    ("Corpses are carried out of houses near the market every morning", 1),
)
EVERYDAY = (
    "I mended the roof of my workshop", "The choir practised for the saint's day festival",
    "The new bridge over the canal was opened by the reeve", "The tannery smells terrible today",
    "My daughter learned her letters from the priest", "I sold three pigs at a fair price",
    "The bell of Saint Olave's cracked", "A minstrel sang in the tavern until midnight",
    "The mill wheel needs a new paddle", "My cousin married a cooper from the next village",
    "Wolves were seen near the east pasture", "I traded wool for a copper pot",
)  # fmt: skip
SCOPE_DISTRACTORS = (
    ("Jugglers performed in the market district", 70),
    ("A new well was dug in the market district", 30),
)


def build_town(mem: Memory, clock: SimClock) -> dict[str, str]:
    """Write the town's graph and memories; return the crisis event ids by name."""
    crises: dict[str, str] = {}
    citizen = iter(CITIZENS * 3)
    for name, chain in CHAINS.items():
        ids = []
        for text, kind, day, _, _ in chain:
            clock.set(START + timedelta(days=day))
            event = mem.add_event(text, kind=kind, scope="market district")
            ids.append(event.id)
            memories = [m for t, _, d, _, ms in chain if t == text for m in ms]
            mem.remember_many(
                [{"text": m, "agent": next(citizen), "event_id": event.id, "importance": 6}
                 for m in memories]
            )  # fmt: skip
        for (cause, effect), (_, _, _, weight, _) in zip(pairwise(ids), chain, strict=False):
            mem.link(cause, effect, weight)
        crises[name] = ids[-1]
    for text, day in SCOPE_DISTRACTORS:
        clock.set(START + timedelta(days=day))
        mem.add_event(text, scope="market district")
    clock.set(START + timedelta(days=81))
    items: list[dict[str, Any]] = []
    for text, holders in SYMPTOMS:
        items += [{"text": text, "agent": next(citizen), "importance": 7} for _ in range(holders)]
    for i, person in enumerate(CITIZENS):
        for j in range(11):
            items.append({"text": EVERYDAY[(i + j) % len(EVERYDAY)], "agent": person,
                          "importance": 2})  # fmt: skip
    mem.remember_many(items)
    clock.set(START + timedelta(days=82))
    return crises


QUESTIONS = {
    "riot": "Why did a riot break out in the market square?",
    "plague": "Why is there plague in the market district?",
}


def run_civilization(path: Path, embedder: object, title: Any) -> None:
    title(
        "5. A town of 40 citizens, two causal chains: what led to the crisis?\n"
        "   (plain similarity vs TCMF — the causal graph lifts memories of the causes)"
    )
    clock = SimClock(START)
    with Memory.open(path, embedder=embedder, clock=clock, space="town") as mem:  # type: ignore[arg-type]
        crises = build_town(mem, clock)
        records = mem.stats()["records"]
        print(f"  {len(CITIZENS)} citizens, {records} memories, {len(mem.links())} causal links")
        for name, crisis in crises.items():
            question = QUESTIONS[name]
            plain = mem.context(question, k=6, touch=False, budget_tokens=260)
            tcmf = mem.context(question, crisis=crisis, k=6, touch=False, budget_tokens=420)
            print(f"\n  --- {name}: plain similarity (no crisis) ---\n")
            print(_indent(plain.text))
            print(f"  --- {name}: TCMF (crisis={crisis}) ---\n")
            print(_indent(tcmf.text))


def _indent(text: str) -> str:
    return "\n".join("    " + line if line else "" for line in text.splitlines()) + "\n"
