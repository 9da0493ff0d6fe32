"""An agent's cached bounds (``AgentArrays.bounds``: the extremes that let a read skip its
visibility and lifecycle passes) are kept through writes that cannot move them — a touch — and
widened by appends, instead of being computed again over every row: whatever the writes, they
stay what a pass over every row finds."""

from __future__ import annotations

import contextlib
import os
import random
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from chronomem import Memory, SimClock
from chronomem.retrieval.index import AgentArrays

from ..conftest import T0, store_of
from .test_snapshot import AGENTS, _arrays, _change, _fill, _open

ROOT = Path(__file__).resolve().parents[2]


def _fresh(a: AgentArrays) -> object:
    cached, a._bounds = a._bounds, None
    try:
        return a.bounds()
    finally:
        a._bounds = cached


def _held(mem: Memory) -> list[AgentArrays]:
    held = _arrays(mem, list(AGENTS))
    for a in held:
        a.bounds()  # as a read leaves them
    return held


@pytest.mark.parametrize(("seed", "reopened"), [(3, False), (8, False), (21, True), (34, True)])
def test_cached_bounds_stay_those_of_every_row(tmp_path: Path, seed: int, reopened: bool) -> None:
    """Through touches, ratings, supersessions, closings, forgets and appends; ``reopened``:
    from bounds computed for every agent at once when a snapshot loads (``Span``)."""
    rng = random.Random(seed)
    clock = SimClock(T0)
    path = tmp_path / "memory.db"
    with _open(path, clock, snapshot=0 if reopened else None) as mem:
        ids = _fill(mem, clock, rng, 60)
        _held(mem)
    with _open(path, clock, snapshot=0 if reopened else None) as mem:
        _held(mem)
        assert mem._h.index.loaded_from == ("snapshot" if reopened else "store")
        for _ in range(4):
            _change(mem, clock, rng, ids)  # touches, ratings, supersessions, forgets, appends
            ids[:] = [r for r in ids if mem.get(r).status.value == "open"]
            facts = [r for r in ids if mem.get(r).kind.value == "fact"]
            if facts:  # a closing moves valid_until inwards
                mem.close_record(rng.choice(facts), reason="ended")
            for a in _arrays(mem, list(AGENTS)):
                assert a.bounds() == _fresh(a)
            agent = rng.choice(AGENTS)
            mem.remember(
                "a fact valid until tomorrow", agent=agent, kind="fact",
                valid_until=clock.now() + timedelta(days=1),
            )  # fmt: skip
            for a in _arrays(mem, list(AGENTS)):
                assert a._bounds is not None  # the append widened its agent's, kept the others'
                assert a.bounds() == _fresh(a)


def test_a_touch_keeps_the_bounds_and_an_append_widens_them(tmp_path: Path) -> None:
    clock = SimClock(T0)
    with _open(tmp_path / "memory.db", clock, snapshot=None) as mem:
        _fill(mem, clock, random.Random(5), 40)
        before = {a.agent: (a._bounds, a.last_accessed_at[: a.n].copy()) for a in _held(mem)}
        clock.advance(hours=1)
        hits = mem.recall("river lamp", agents=list(AGENTS), k=10)
        assert hits
        touched = 0
        for a in _arrays(mem, list(AGENTS)):
            bounds, accessed = before[a.agent]
            assert a._bounds is bounds  # not dropped: the next read does no pass for them
            touched += int(np.sum(a.last_accessed_at[: a.n] != accessed))
        assert touched == len(hits)
        clock.advance(hours=1)
        mem.remember("a new fact", agent="ada", kind="fact", valid_until=clock.now())
        ada = _arrays(mem, ["ada"])[0]
        assert ada._bounds is not None
        assert ada._bounds != before["ada"][0]
        assert ada._bounds == _fresh(ada)
        assert ada._bounds.max_recorded == ada.recorded_at[ada.n - 1]


def _write(mem: Memory, op: str, args: list[str]) -> None:
    """One write of the other writer (a handle here, or :data:`_CHILD` in another process)."""
    if op == "recall":  # touching
        assert mem.recall(args[0], agents=list(AGENTS), k=10)
    elif op == "rate":
        for rid in args:
            mem.feedback(rid, "helpful")
    elif op == "supersede":
        mem.supersede(args[0], "a newer word on the river lamp", reason="changed")
    else:
        assert op == "remember"
        mem.remember("a new fact", agent="cy", kind="fact", valid_until=mem.clock.now())


# The other writer as another process: its own connection, its own locks on the file.
_CHILD = """
import sys
from datetime import datetime
from chronomem import SimClock
from tests.retrieval.test_bounds import _write
from tests.retrieval.test_snapshot import _open
path, now, op, *args = sys.argv[1:]
with _open(path, SimClock(datetime.fromisoformat(now)), snapshot=None) as mem:
    _write(mem, op, args)
"""


@pytest.mark.parametrize("writer", ["handle", "process"])
def test_another_writers_writes_keep_the_bounds_those_of_every_row(
    tmp_path: Path, writer: str
) -> None:
    """Writes by a second handle on the file, or by another process, reach the first handle's
    index by its sync: a touching read keeps its bounds; ratings, a supersession and an append
    leave them what a pass over every row finds."""
    rng = random.Random(13)
    clock = SimClock(T0)
    path = tmp_path / "memory.db"
    with contextlib.ExitStack() as stack:
        mine = stack.enter_context(_open(path, clock, snapshot=None))
        other = (
            stack.enter_context(_open(path, clock, snapshot=None)) if writer == "handle" else None
        )

        def write(op: str, *args: str) -> None:
            if other is not None:
                _write(other, op, list(args))
                return
            subprocess.run(
                [sys.executable, "-c", _CHILD, str(path), clock.now().isoformat(), op, *args],
                check=True, capture_output=True, timeout=120, cwd=ROOT,
                env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "src")])},
            )  # fmt: skip

        ids = _fill(mine, clock, rng, 50)
        kept = {a.agent: a._bounds for a in _held(mine)}
        seq = store_of(mine).change_seq(mine.space)
        clock.advance(hours=1)
        write("recall", "river lamp")
        assert store_of(mine).change_seq(mine.space) > seq  # the touch was written
        for a in _arrays(mine, list(AGENTS)):
            assert a._bounds is kept[a.agent]
        clock.advance(hours=1)
        rated = rng.sample(ids, 5)
        write("rate", *rated)
        old = next(r for r in ids if r not in rated and mine.get(r).kind.value == "observation")
        write("supersede", old)
        for a in _arrays(mine, list(AGENTS)):
            assert a.bounds() == _fresh(a)
        assert any(a.bounds().any_feedback for a in _arrays(mine, list(AGENTS)))
        write("remember")
        for a in _arrays(mine, list(AGENTS)):
            assert a._bounds is not None
            assert a.bounds() == _fresh(a)
