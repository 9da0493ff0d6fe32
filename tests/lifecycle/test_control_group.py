"""The npm -> pnpm control group with the real embedding model (issue acceptance)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from chronomem import Memory, SimClock, Status

pytestmark = pytest.mark.slow

JANUARY = datetime(2025, 1, 15, 9, tzinfo=UTC)
JUNE = datetime(2025, 6, 2, 9, tzinfo=UTC)
NOVEMBER = datetime(2025, 11, 20, 9, tzinfo=UTC)


def test_superseded_instructions_leave_current_answers_and_keep_history(
    minilm,
    db_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    clock = SimClock(JANUARY)
    with Memory.open(db_path, embedder=minilm, clock=clock) as mem:
        npm = mem.remember("Install packages with npm", kind="instruction", agent="dev").id
        make = mem.remember("Run the tests with make test", kind="instruction", agent="dev").id
        mem.remember("The CI runs on two cores", kind="fact", agent="dev")
        clock.set(JUNE)
        pnpm = mem.supersede(npm, "Install packages with pnpm, not npm", reason="team moved").id
        clock.set(NOVEMBER)

        # (1) Today the replacement answers, and the old instruction is not returned at all.
        now = mem.peek("How do I install packages?", agent="dev")
        assert now[0].record.id == pnpm
        assert npm not in {h.record.id for h in now}

        # (2) January, three ways: as of then, valid then, or with history.
        for kwargs in ({"as_of": JANUARY.replace(day=20)}, {"valid_at": JANUARY.replace(day=20)},
                       {"include_history": True}):  # fmt: skip
            hits = mem.peek("How do I install packages?", agent="dev", **kwargs)
            by_id = {h.record.id: h.record for h in hits}
            assert npm in by_id, kwargs
            assert by_id[npm].status is Status.SUPERSEDED
            assert by_id[npm].superseded_by == pnpm
            assert by_id[npm].superseded_at == JUNE
            if "include_history" not in kwargs:
                assert pnpm not in by_id  # not yet written, or not yet valid, in January

        # (3) Control: an instruction never superseded is current and unmarked.
        tests = mem.peek("How do I run the tests?", agent="dev")
        assert tests[0].record.id == make
        assert tests[0].record.status is Status.OPEN
        assert tests[0].record.superseded_by is None
        assert [e.action for e in mem.audit(npm)] == ["supersede"]
