"""Crisis-read quality: does a read that names a crisis put the root cause's witness first, every
witness of the causal chain in the top 5, and keep the memories that answer by meaning?

Synthetic scenarios with known ground truth, in the shape of CivilizationOS's TCMF benchmark
(built here, not copied): topics are near-orthogonal unit vectors in 64 dimensions, and a memory
or event "on" a topic is ``normalise(alpha · topic + sqrt(1 - alpha²) · noise)``, so two
realisations of one topic have cosine ≈ alpha² and of different topics ≈ 0. A scenario is a
causal chain root → … → crisis of depth 2–5 (links from the root to the crisis), each event on
its own topic; the crisis sounds like its surface topic S and the question is a fresh
realisation of S.

- one *witness* memory per chain event before the crisis, on that event's topic (worded unlike
  the crisis: cosine to the question ≈ 0);
- *noise*: background memories on unrelated topics;
- *pure* tier: loud symptom memories on S (alpha 0.9, importance 7–9): close to the question,
  causally irrelevant;
- *mixed* tier: two *semantic* memories on S with high alignment (0.92) whose cause is not in
  the graph — they answer by meaning and are gold too — and symptom distractors with lower
  alignment (0.6, importance 7–9).
- *scoped* tier (issue 30): the mixed tier plus three events of the crisis's scope in the month
  before it, on unrelated topics and not linked to the chain (scope-fallback events), each with
  a witness memory: it shares the crisis's scope and nothing else, and must not pass the
  evidence. ``scoped@3`` is the share of scenarios with such a memory in the top 3 and
  ``scoped>symptom`` the share where one outranks every symptom memory (both best at 0).

Witnesses are tied to their event either by ``event_id`` ("witness" association) or only by
their vectors ("cosine" association, as in CivilizationOS, where memories name no event). Every
system ranks the same memories; metrics over 300 scenarios per tier with 95% bootstrap
intervals: recall@5 of the gold (the witnesses, plus the semantic memories in the mixed tier),
the root witness's rank, nDCG@10 (root 2, other gold 1), and in the mixed tier semantic@5 (the
share of semantic memories in the top 5). Baselines on the same vectors: plain cosine to the
question, and causal-only (association with an ancestor × path strength, nothing else).

    python bench/tcmf_quality.py [--scenarios 300]

Writes ``bench/results/tcmf_quality.{json,md}``.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine, write_results
from chronomem import PRESETS, Memory, SimClock

DIM, TOPICS = 64, 24
T0 = datetime(2024, 1, 1, tzinfo=UTC)
QUESTION = "why did the crisis happen?"
ASSOCIATIONS = ("witness", "cosine")
TIERS = ("pure", "mixed", "scoped")
SYSTEMS = ("chronomem default", "chronomem tcmf", "cosine", "causal-only")


@dataclass
class Memo:
    text: str
    vector: np.ndarray
    importance: float
    tick: int
    label: str  # root | chain | semantic | distractor | noise | scoped
    event: int | None = None  # the event it witnessed (chain events first, then scope events)


@dataclass
class Scenario:
    events: list[tuple[str, np.ndarray, int]]  # root first, crisis last: (text, vector, tick)
    question: np.ndarray
    memos: list[Memo] = field(default_factory=list)
    scope_events: list[tuple[str, np.ndarray, int]] = field(default_factory=list)


def _realise(rng: np.random.Generator, topic: np.ndarray, alpha: float) -> np.ndarray:
    noise = rng.standard_normal(topic.shape[0])
    noise /= np.linalg.norm(noise)
    v = alpha * topic + math.sqrt(1.0 - alpha * alpha) * noise
    return (v / np.linalg.norm(v)).astype(np.float32)


def generate(tier: str, seed: int, depths: tuple[int, int] = (2, 5)) -> Scenario:
    rng = np.random.default_rng(seed)
    topics = rng.standard_normal((TOPICS, DIM))
    topics /= np.linalg.norm(topics, axis=1, keepdims=True)
    order = [int(t) for t in rng.permutation(TOPICS)]
    depth = int(rng.integers(depths[0], depths[1] + 1))  # links from the root to the crisis
    surface, causes, others = order[0], order[1 : 1 + depth], order[1 + depth :]
    ticks = sorted(int(t) for t in rng.choice(np.arange(1, 120), size=depth + 1, replace=False))
    events = [(f"event {i} of the chain", _realise(rng, topics[t], 0.95), ticks[i])
              for i, t in enumerate(causes)]  # fmt: skip
    crisis_tick = ticks[-1]
    events.append(("the crisis: surface symptoms", _realise(rng, topics[surface], 0.95),
                   crisis_tick))  # fmt: skip
    sc = Scenario(events=events, question=_realise(rng, topics[surface], 0.9))

    def imp(low: float, high: float) -> float:
        return float(round(rng.uniform(low, high), 1))

    for i, t in enumerate(causes):
        sc.memos.append(Memo(f"I saw it happen, note {i}", _realise(rng, topics[t], 0.9),
                             imp(4, 7), ticks[i] + int(rng.integers(0, 3)),
                             "root" if i == 0 else "chain", event=i))  # fmt: skip
    if tier in ("mixed", "scoped"):
        for s in range(2):
            sc.memos.append(Memo(f"evidence on the surface {s}",
                                 _realise(rng, topics[surface], 0.92), imp(4, 7),
                                 crisis_tick - int(rng.integers(0, 4)), "semantic"))  # fmt: skip
    if tier == "scoped":
        for j in range(3):
            t = others[j]
            tick = max(1, crisis_tick - int(rng.integers(1, 24 * 20)))
            sc.scope_events.append((f"a scope event {j}", _realise(rng, topics[t], 0.95), tick))
            sc.memos.append(Memo(f"I was there when it happened {j}",
                                 _realise(rng, topics[t], 0.9), imp(4, 7), tick,
                                 "scoped", event=depth + 1 + j))  # fmt: skip
    alpha = 0.9 if tier == "pure" else 0.6
    for d in range(6):
        sc.memos.append(Memo(f"a symptom was reported {d}", _realise(rng, topics[surface], alpha),
                             imp(7, 9), crisis_tick - int(rng.integers(0, 5)),
                             "distractor"))  # fmt: skip
    for n in range(8):
        t = others[int(rng.integers(0, len(others)))]
        sc.memos.append(Memo(f"background chatter {n}", _realise(rng, topics[t], 0.9),
                             imp(2, 5), int(rng.integers(1, crisis_tick + 1)),
                             "noise"))  # fmt: skip
    sc.memos = [sc.memos[i] for i in rng.permutation(len(sc.memos))]
    return sc


def _at(tick: int) -> datetime:
    return T0 + timedelta(hours=tick)


@dataclass
class Stored:
    mem: Memory
    crisis: str
    ids: list[str]  # per memo
    as_of: datetime


def store(mem: Memory, clock: SimClock, sc: Scenario, association: str) -> Stored:
    """Write a scenario into ``mem``'s space, in time order, as a simulation would."""
    event_ids: list[str] = []
    for text, vector, tick in sc.events:
        kind = "crisis" if len(event_ids) == len(sc.events) - 1 else "decision"
        event_ids.append(mem.add_event(text, occurred_at=_at(tick), kind=kind, scope="council",
                                       embedding=vector).id)  # fmt: skip
    for cause, effect in pairwise(event_ids):
        mem.link(cause, effect)
    for text, vector, tick in sc.scope_events:
        event_ids.append(mem.add_event(text, occurred_at=_at(tick), scope="council",
                                       embedding=vector).id)  # fmt: skip
    ids: list[str] = [""] * len(sc.memos)
    for i in sorted(range(len(sc.memos)), key=lambda i: sc.memos[i].tick):
        m = sc.memos[i]
        clock.set(_at(m.tick))
        witnessed = event_ids[m.event] if association == "witness" and m.event is not None else None
        ids[i] = mem.remember(m.text, agent=f"citizen{i % 4}", importance=m.importance,
                              embedding=m.vector, event_id=witnessed).id  # fmt: skip
    as_of = _at(sc.events[-1][2] + 1)
    clock.set(as_of)
    return Stored(mem, event_ids[len(sc.events) - 1], ids, as_of)


def rank_chronomem(preset: str) -> Callable[[Stored, Scenario], list[int]]:
    def ranking(st: Stored, sc: Scenario) -> list[int]:
        hits = st.mem.peek(QUESTION, query_embedding=sc.question, crisis=st.crisis,
                           k=len(sc.memos), preset=preset, as_of=st.as_of)  # fmt: skip
        position = {rid: i for i, rid in enumerate(st.ids)}
        return [position[h.record.id] for h in hits]

    return ranking


def rank_cosine(st: Stored, sc: Scenario) -> list[int]:
    cos = [float(m.vector @ sc.question) for m in sc.memos]
    return sorted(range(len(sc.memos)), key=lambda i: -cos[i])


def rank_causal_only(st: Stored, sc: Scenario, association: str, threshold: float) -> list[int]:
    """Association with any ancestor (1 for a witness, else the cosine at or above the
    threshold) — links all have weight 1, so path strength is 1 — and nothing else."""
    ancestors = [vector for _, vector, _ in sc.events[:-1]]

    def boost(m: Memo) -> float:
        if association == "witness" and m.label in ("root", "chain"):
            return 1.0
        best = max(float(m.vector @ a) for a in ancestors)
        return best if best >= threshold else 0.0

    value = [boost(m) for m in sc.memos]
    return sorted(range(len(sc.memos)), key=lambda i: -value[i])


def metrics(ranking: Sequence[int], sc: Scenario, tier: str) -> dict[str, float]:
    labels = [sc.memos[i].label for i in ranking]
    gold = {"root", "chain"} | ({"semantic"} if tier != "pure" else set())
    n_gold = sum(m.label in gold for m in sc.memos)

    def rel(label: str) -> int:
        return 2 if label == "root" else int(label in gold)

    dcg = sum(rel(x) / math.log2(i + 2) for i, x in enumerate(labels[:10]))
    ideal = sorted((rel(m.label) for m in sc.memos), reverse=True)[:10]
    out = {
        "recall@5": sum(x in gold for x in labels[:5]) / min(5, n_gold),
        "root rank": float(labels.index("root") + 1),
        "nDCG@10": dcg / sum(r / math.log2(i + 2) for i, r in enumerate(ideal)),
        "causal@5": sum(x in {"root", "chain"} for x in labels[:5])
        / min(5, sum(m.label in {"root", "chain"} for m in sc.memos)),
    }
    if tier in ("mixed", "scoped"):
        out["semantic@5"] = sum(x == "semantic" for x in labels[:5]) / 2
        out["semantic@10"] = sum(x == "semantic" for x in labels[:10]) / 2
    if tier == "scoped":
        out["scoped@3"] = float("scoped" in labels[:3])
        out["scoped>symptom"] = float(labels.index("scoped") < labels.index("distractor"))
    return out


def bootstrap(values: Sequence[float], rng: np.random.Generator) -> tuple[float, float, float]:
    data = np.asarray(values, dtype=np.float64)
    means = rng.choice(data, size=(1000, data.size)).mean(axis=1)
    return float(data.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def run(scenarios: int, depths: tuple[int, int]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    threshold = PRESETS["default"].causal.association_threshold(None)
    with tempfile.TemporaryDirectory() as tmp:
        for association in ASSOCIATIONS:
            for tier in TIERS:
                per_system: dict[str, list[dict[str, float]]] = {s: [] for s in SYSTEMS}
                for n in range(scenarios):
                    sc = generate(tier, seed=10_000 * TIERS.index(tier) + n, depths=depths)
                    clock = SimClock(T0)
                    space = f"{association}-{tier}-{n}"
                    with Memory.open(Path(tmp) / "bench.db", embedder=None, clock=clock,
                                     space=space, synchronous="NORMAL") as mem:  # fmt: skip
                        st = store(mem, clock, sc, association)
                        rankings = {
                            "chronomem default": rank_chronomem("default")(st, sc),
                            "chronomem tcmf": rank_chronomem("tcmf")(st, sc),
                            "cosine": rank_cosine(st, sc),
                            "causal-only": rank_causal_only(st, sc, association, threshold),
                        }
                    for system, ranking in rankings.items():
                        per_system[system].append(metrics(ranking, sc, tier))
                rng = np.random.default_rng(0)
                results[f"{association}/{tier}"] = {
                    system: {
                        metric: bootstrap([row[metric] for row in rows], rng) for metric in rows[0]
                    }
                    for system, rows in per_system.items()
                }
    return results


def markdown(
    results: dict[str, Any], command: str, depths: str, seconds: float, info: dict[str, Any]
) -> str:
    lines = [
        f"# TCMF crisis-read quality (synthetic causal chains, depth {depths})",
        "",
        f"Command: `{command}` — revision "
        f"{info['revision']}, {info['date']}, {info['cpu_count']} cores, Python "
        f"{info['python']}, numpy {info['numpy']}; {seconds:.0f} s.",
        "",
        "Mean [95% bootstrap interval] per tier. Gold: the chain's witnesses (and, in the "
        "mixed tier, the two memories that answer by meaning); recall@5 and causal@5 divide "
        "by min(5, gold), so 1.00 is reachable when the gold outnumber five slots. "
        "semantic@5 cannot reach 1 once the chain has four or more witnesses (they come "
        "first); semantic@10 shows the memories that answer by meaning are kept. "
        "'witness': memories name the event they witnessed (`event_id`); 'cosine': they do "
        "not, and associate with events by their vectors alone (CivilizationOS's setting).",
    ]
    for key, systems in results.items():
        association, tier = key.split("/")
        metric_names = list(next(iter(systems.values())))
        lines += ["", f"## {tier} tier, {association} association", ""]
        lines.append("| system | " + " | ".join(metric_names) + " |")
        lines.append("|---|" + "---:|" * len(metric_names))
        for system, values in systems.items():
            cells = [f"{m:.2f} [{lo:.2f}, {hi:.2f}]" for m, lo, hi in values.values()]
            lines.append(f"| {system} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=300, help="per tier (default 300)")
    parser.add_argument(
        "--depth", default="2-5", help="root depths, 'low-high' or one number (default 2-5)"
    )
    parser.add_argument("--name", default="tcmf_quality", help="results file name")
    args = parser.parse_args()
    low, _, high = args.depth.partition("-")
    depths = (int(low), int(high or low))
    started = time.perf_counter()
    results = run(args.scenarios, depths)
    seconds = time.perf_counter() - started
    info = machine()
    command = " ".join(["python bench/tcmf_quality.py", *sys.argv[1:]])
    text = markdown(results, command, args.depth, seconds, info)
    payload = {"machine": info, "command": command, "scenarios": args.scenarios,
               "depths": list(depths), "seconds": seconds, "results": results}  # fmt: skip
    write_results(args.name, payload, text)
    print(text)


if __name__ == "__main__":
    main()
