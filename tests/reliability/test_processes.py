"""Four processes writing and touching one store at once, on every store (docs/reliability.md,
"Several processes"): nothing acknowledged is lost or doubled, no access time ever moves
backwards — not in the store, not in what any process observes — and the store stays
consistent.

The workers remember, supersede, rate and purge their own records and run touching recalls over
everyone's at instants that jump back and forth (so touches arrive out of order), and peek to
observe access times while the others write."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from chronomem import Memory

from ..conftest import store_of
from .conftest import Plan, Stores
from .harness import Acknowledged, lost_writes, reopen, start_worker, violations

WORKERS = 4


def test_four_processes_lose_nothing_and_never_move_an_access_time_back(
    stores: Stores, plan: Plan, figures: dict[str, Any]
) -> None:
    with stores.new() as location:
        Memory.open(location, embedder=None).close()  # created once, before the race
        workers = [
            start_worker(
                location, "--seed", str(w + 1), "--jumps", "--seconds", str(plan.process_seconds)
            )
            for w in range(WORKERS)
        ]
        outputs = []
        for w in workers:
            out, err = w.communicate(timeout=plan.process_seconds + 120)
            assert w.returncode == 0, err
            outputs.append(out)
        each = [Acknowledged().read(out) for out in outputs]
        merged = Acknowledged()
        for out in outputs:
            merged.read(out)
        assert all(a.done for a in each)

        backwards = 0
        for acked in each:  # what each process saw, in its order
            last: dict[str, datetime] = {}
            for rid, at in acked.seen:
                backwards += at < last.get(rid, at)
                last[rid] = max(at, last.get(rid, at))
        latest: dict[str, datetime] = {}
        for at, ids in merged.touched:
            for rid in ids:
                latest[rid] = max(at, latest.get(rid, at))

        with reopen(location) as mem:
            assert violations(mem) == []
            assert lost_writes(mem, merged) == []
            with store_of(mem).snapshot():
                stored = {i.record.id: i.record for i in store_of(mem).iter_records(mem.space)}
        written = set(merged.remembered) | {new for _, new in merged.superseded}
        assert set(stored) == written - merged.purged  # each exactly once (ids are unique)
        wrong = [
            rid
            for rid, record in stored.items()
            if record.last_accessed_at != max(latest.get(rid, record.recorded_at),
                                              record.recorded_at)
        ]  # fmt: skip
        assert wrong == []
        assert backwards == 0
        from_others = 0
        for acked in each:
            mine = set(acked.remembered) | {new for _, new in acked.superseded}
            from_others += sum(rid not in mine for _, ids in acked.touched for rid in ids)
        assert from_others > 0  # the processes read each other's writes
    name = f"{WORKERS} processes on one store ({stores.name}, {plan.process_seconds:g} s)"
    figures[f"{name}: acknowledged writes"] = merged.writes
    figures[f"{name}: lost or doubled"] = 0
    figures[f"{name}: access times observed moving backwards"] = backwards
