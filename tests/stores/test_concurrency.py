"""Several processes writing and recalling (touching) one space at once, on every store.

Each worker process writes records and runs touching recalls at instants that jump backwards and
forwards, so touches from different processes arrive out of order. Afterwards every acknowledged
write must be present exactly once, every record's ``last_accessed_at`` must equal its latest
touch (no lost update, never moved backwards), and workers must have recalled records the others
wrote (their in-memory arrays follow other processes' writes). Supersession of one record by
several processes at once must let exactly one win.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from chronomem import InvalidInputError, Memory, SimClock

from ..conftest import T0, store_of, unit

SRC = str(Path(__file__).resolve().parents[2] / "src")
WORKERS = 4
ROUNDS = 40

_WORKER = """
import sys
from datetime import datetime, timedelta
import numpy as np
import pytest

from chronomem import InvalidInputError, Memory, SimClock

url, worker, rounds, start = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
t0 = datetime.fromisoformat(start)
rng = np.random.default_rng(worker)
clock = SimClock(t0)
sys.stdin.readline()  # every worker starts together
with Memory.open(url, embedder=None, clock=clock, preset="generative-agents") as mem:
    for i in range(rounds):
        clock.set(t0 + timedelta(minutes=int(rng.integers(0, 600)), microseconds=worker))
        vector = rng.normal(size=8)
        print("W", mem.remember(f"w{worker} r{i}", agent="town", embedding=vector).id, flush=True)
        clock.set(t0 + timedelta(minutes=int(rng.integers(0, 900)), microseconds=worker))
        hits = mem.recall("q", agent="town", k=3, query_embedding=rng.normal(size=8))
        print("T", clock.now().isoformat(), *[h.record.id for h in hits], flush=True)
"""

_SUPERSEDER = """
import sys
from chronomem import ConflictError, Memory
url, target, worker = sys.argv[1], sys.argv[2], sys.argv[3]
with Memory.open(url, embedder=None) as mem:
    sys.stdin.readline()
    try:
        print("WON", mem.supersede(target, f"replacement by {worker}", embedding=[0.0, 1.0]).id)
    except ConflictError as exc:
        print("LOST", type(exc).__name__)
"""


def _start(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
    )


def _run_together(workers: list[subprocess.Popen[str]]) -> list[str]:
    for w in workers:
        assert w.stdin is not None
        w.stdin.write("go\n")
        w.stdin.flush()
    outputs = []
    for w in workers:
        out, err = w.communicate(timeout=300)
        assert w.returncode == 0, err
        outputs.append(out)
    return outputs


def test_concurrent_writers_and_touching_readers_lose_nothing(location: str | Path) -> None:
    with Memory.open(location, embedder=None, clock=SimClock(T0)) as mem:
        seed = mem.remember("the town square", agent="town", embedding=unit(*[1.0] * 8)).id
    workers = [
        _start(_WORKER, str(location), str(w), str(ROUNDS), T0.isoformat())
        for w in range(WORKERS)
    ]  # fmt: skip
    outputs = _run_together(workers)

    acknowledged: dict[str, int] = {}
    latest_touch: dict[str, datetime] = {}
    seen_from_others = 0
    for worker, out in enumerate(outputs):
        mine: set[str] = set()
        for line in out.splitlines():
            kind, *rest = line.split()
            if kind == "W":
                acknowledged[rest[0]] = worker
                mine.add(rest[0])
            else:
                at = datetime.fromisoformat(rest[0])
                for rid in rest[1:]:
                    latest_touch[rid] = max(latest_touch.get(rid, at), at)
                    seen_from_others += rid not in mine and rid != seed
    assert len(acknowledged) == WORKERS * ROUNDS  # no id was handed out twice
    assert seen_from_others > 0

    with Memory.open(location, embedder=None, clock=SimClock(T0)) as mem, store_of(mem).snapshot():
        stored = {i.record.id: i.record for i in store_of(mem).iter_records(mem.space)}
    assert set(acknowledged) | {seed} == set(stored)
    assert latest_touch  # the recalls touched something
    for rid, record in stored.items():
        expected = max(latest_touch.get(rid, record.recorded_at), record.recorded_at)
        assert record.last_accessed_at == expected, rid


def test_concurrent_supersessions_of_one_record_let_exactly_one_win(
    location: str | Path,
) -> None:
    with Memory.open(location, embedder=None, clock=SimClock(T0)) as mem:
        target = mem.remember("use npm", kind="instruction", embedding=[1.0, 0.0]).id
    outputs = _run_together(
        [_start(_SUPERSEDER, str(location), target, str(w)) for w in range(WORKERS)]
    )
    won = [out.split()[1] for out in outputs if out.startswith("WON")]
    assert len(won) == 1, outputs
    assert sum(out.startswith("LOST ConflictError") for out in outputs) == WORKERS - 1
    with Memory.open(location, embedder=None, clock=SimClock(T0 + timedelta(days=1))) as mem:
        assert [r.id for r in mem.history(target)] == [target, won[0]]
        assert mem.get(target).superseded_by == won[0]
        assert mem.stats()["records"] == 2  # the losers' successors were rolled back


def test_the_first_vector_from_two_handles_fixes_one_dimension(
    location: str | Path, clock: SimClock
) -> None:
    """Two handles opened on an empty store (as two processes would): the second to write
    adopts the dimension the first fixed, and refuses another one."""
    first, second, third = (Memory.open(location, embedder=None, clock=clock) for _ in "abc")
    with first, second, third:
        first.remember("from the first", embedding=unit(1.0, 0.0, 0.0))
        assert second.remember("from the second", embedding=unit(0.0, 1.0, 0.0)).stored
        assert second.dim == 3
        with pytest.raises(InvalidInputError, match=r"have dimension 3 .* got 4"):
            third.remember("from the third", embedding=[1.0, 0.0, 0.0, 0.0])
        texts = sorted(h.record.text for h in third.peek("from", k=5))
        assert texts == ["from the first", "from the second"]
