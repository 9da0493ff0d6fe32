"""The lifecycle under extraction, end to end, on LongMemEval's knowledge updates (issue 29).

For each of LongMemEval's ``knowledge-update`` questions whose turns mark an earlier and a later
value (70 of the oracle file's 78; its 8 abstention questions mark none), the sessions are stored
in order through ``remember_messages`` (timestamps from the dataset, the clock at each session's
date) and each is extracted right after it by a *scripted extractor that replays the gold
facts*: the turns of a session that LongMemEval marks ``has_answer`` state that session's value,
and it proposes them as one fact citing them all — ``ADD`` the first time, ``SUPERSEDE`` of the
fact it proposed before after that (found among the memories the prompt shows). No model judges
anything: the bench measures what the lifecycle does with correct proposals, against a
Mem0-style baseline in the same run that only ever adds.

Measured per question:

- **newest current**: the agent's open facts are exactly the latest value;
- **old readable as of its time**: a read of the facts as of just after the first value's
  extraction returns the first value, and none of the later;
- **history**: the chain from the first fact holds every value, oldest first;
- **cited**: every extracted fact cites turns that exist and hold what it says;
- **current first**: ``peek(question, kinds=["fact"])`` ranks the latest value first (lexical
  relevance; the baseline's older values compete at full strength).

    python bench/extraction.py [--limit 78]

Writes ``bench/results/extraction.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine, write_results
from chronomem import Memory, SimClock
from chronomem.extraction.policy import ExtractionPolicy
from chronomem.llm.scripted import ScriptedLLM

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "longmemeval"
_TURN = re.compile(r"^\[(\d+)\] ")
_MEMORY = re.compile(r"^\((\d+)\) \[\w+\] (.*)$")


def _date(text: str) -> datetime:
    return datetime.strptime(text.split(" (")[0] + text[-6:], "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


def _fact(texts: Sequence[str]) -> str:
    """The value turns state, as a gold extractor writes it: their words on one line, at most
    900 characters (a memory is one statement: ``extraction.validate.MAX_MEMORY_CHARS``)."""
    return " ".join(" ".join(t.split()) for t in texts)[:900]


class GoldExtractor:
    """Answers each extraction prompt with the gold fact of the turns it shows: the turns
    LongMemEval marks ``has_answer``, as ``ADD`` or as ``SUPERSEDE`` of the fact it stated
    last (looked up among the memories the prompt shows)."""

    def __init__(self, gold: set[str], *, supersede: bool) -> None:
        self.gold = gold  # the marked turns, each on one line
        self.supersede = supersede
        self.last: str | None = None

    def __call__(self, messages: Sequence[dict[str, str]]) -> str:
        prompt = messages[0]["content"]
        cited, texts, shown = [], [], {}
        for line in prompt.splitlines():
            turn = _TURN.match(line)
            if turn and line.split("): ", 1)[-1] in self.gold:
                cited.append(int(turn[1]))
                texts.append(line.split("): ", 1)[-1])
            found = _MEMORY.match(line)
            if found:
                shown[found[2]] = int(found[1])
        if not cited:
            return json.dumps({"memories": []})
        fact = _fact(texts)
        proposal: dict[str, Any] = {"op": "ADD", "kind": "fact", "text": fact, "turns": cited}
        if self.supersede and self.last is not None and self.last in shown:
            proposal = {**proposal, "op": "SUPERSEDE", "memory": shown[self.last]}
        self.last = fact
        return json.dumps({"memories": [proposal]})


def run_question(item: dict[str, Any], *, supersede: bool, tmp: Path) -> dict[str, bool]:
    dates = [_date(d) for d in item["haystack_dates"]]
    order = sorted(range(len(dates)), key=lambda i: dates[i])
    marked = [  # each session's marked turns, in the order the sessions were held
        [
            " ".join(t["content"].split())
            for t in item["haystack_sessions"][i]
            if t.get("has_answer")
        ]
        for i in order
    ]
    gold = [_fact(turns) for turns in marked if turns]  # the values, oldest first
    clock = SimClock(dates[order[0]])
    extractor = GoldExtractor({t for turns in marked for t in turns}, supersede=supersede)
    policy = ExtractionPolicy(turns_per_call=200)
    firsts: list[datetime] = []
    with Memory.open(
        tmp / f"{item['question_id']}-{supersede}.db", embedder=None, clock=clock
    ) as m:
        for i in order:
            clock.set(dates[i])
            session = item["haystack_session_ids"][i]
            messages = [
                {"role": t["role"], "content": t["content"],
                 "timestamp": (dates[i] + timedelta(seconds=k)).isoformat()}
                for k, t in enumerate(item["haystack_sessions"][i])
            ]  # fmt: skip
            m.remember_messages(messages, session=session)
            clock.set(dates[i] + timedelta(seconds=len(messages) + 1))  # right after the session
            before = len(m.records(kinds=["fact"], include_history=True))
            m.extract(session=session, llm=ScriptedLLM([extractor]), policy=policy)
            if len(m.records(kinds=["fact"], include_history=True)) > before:
                firsts.append(clock.now())
        facts = m.records(kinds=["fact"], include_history=True, limit=100)
        by_text = {r.text: r for r in facts}
        latest = gold[-1] if gold else None
        open_now = sorted(r.text for r in m.records(kinds=["fact"], limit=100))
        newest_current = latest is not None and open_now == [latest]
        old_readable = False
        if len(firsts) >= 1 and gold:
            then = m.records(kinds=["fact"], as_of=firsts[0] + timedelta(seconds=1), limit=100)
            old_readable = [r.text for r in then] == [gold[0]]
        chain = [] if gold[0] not in by_text else [r.text for r in m.history(by_text[gold[0]].id)]
        cited = all(
            r.evidence and _fact([t.text for t in m.get_many(r.evidence)]) == r.text for r in facts
        )
        hits = m.peek(item["question"], kinds=["fact"], k=3)
        current_first = bool(hits) and hits[0].record.text == latest
    return {
        "newest_current": newest_current, "old_readable": old_readable,
        "history": chain == gold, "cited": cited, "current_first": current_first,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    data = json.loads((DATA / "longmemeval_oracle.json").read_text())
    items = [  # the abstention questions (``_abs``) mark no value: nothing to replay
        x for x in data if x["question_type"] == "knowledge-update"
        and sum(bool(t.get("has_answer")) for s in x["haystack_sessions"] for t in s) >= 2
    ][: args.limit]  # fmt: skip
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, supersede in (("chronomem lifecycle", True), ("add-only baseline", False)):
            results = [run_question(x, supersede=supersede, tmp=Path(tmp)) for x in items]
            rows[name] = {k: sum(r[k] for r in results) / len(results) for k in results[0]}
            rows[name]["questions"] = len(results)
    lines = [
        "# Extraction through the lifecycle: LongMemEval knowledge updates",
        "",
        f"{len(items)} questions (longmemeval_oracle.json, knowledge-update with both values "
        "marked), a scripted "
        "extractor replaying the gold facts; lexical relevance. Fractions of questions.",
        "",
        "| | newest current | old readable as of its time | history | cited | current first |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in rows.items():
        lines.append(
            f"| {name} | {r['newest_current']:.3f} | {r['old_readable']:.3f} | "
            f"{r['history']:.3f} | {r['cited']:.3f} | {r['current_first']:.3f} |"
        )
    print("\n".join(lines))
    write_results("extraction", {"machine": machine(), "rows": rows}, lines)


if __name__ == "__main__":
    main()
