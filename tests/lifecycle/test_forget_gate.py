"""Narrow delete with real purge, and the near-duplicate write gate (DESIGN §3)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from chronomem import (
    DependentsExistError,
    EvidenceStatus,
    Memory,
    NotFoundError,
    ScrubResult,
    SimClock,
    WriteGate,
)

from ..conftest import FixedEmbedder, unit

SECRET = "the staging database password is Tr0ub4dor-and-3-zebras"


def _raw_bytes(db_path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in (db_path, Path(f"{db_path}-wal")) if p.exists())


def _ordinary_and_a_secret(mem: Memory) -> str:
    """Thirty ordinary records, then the secret; its id."""
    for i in range(30):
        mem.remember(f"ordinary memory number {i} about the deploy", embedding=unit(1, i, 0))
    return str(mem.remember(SECRET, sensitivity="secret", embedding=unit(0, 1, 1)).id)


def test_forgetting_a_cited_or_chained_record_is_refused(mem: Memory, clock: SimClock) -> None:
    cited = mem.remember("Maria agreed to decorate", embedding=unit(1, 0, 0)).id
    insight = mem.remember(
        "Maria is a good friend", kind="reflection", evidence=[cited], embedding=unit(0, 1, 0)
    ).id
    with pytest.raises(DependentsExistError) as err:
        mem.forget(cited, "cleanup")
    assert err.value.dependants == (insight,)
    assert insight in str(err.value)

    old = mem.remember("use npm", kind="instruction", embedding=unit(0, 0, 1)).id
    clock.advance(days=1)
    new = mem.supersede(old, "use pnpm", embedding=unit(0, 1, 1)).id
    with pytest.raises(DependentsExistError, match=str(new)):
        mem.forget(old, "cleanup")
    with pytest.raises(DependentsExistError, match=old):
        mem.forget(new, "cleanup")  # type: ignore[arg-type]
    assert mem.stats()["records"] == 4


def test_forgetting_noise_deletes_it_everywhere(mem: Memory) -> None:
    keep = mem.remember("the kettle boiled", embedding=unit(1, 0, 0)).id
    noise = mem.remember("asdf test test", embedding=unit(1, 0.1, 0)).id
    assert len(mem.peek("q", query_embedding=unit(1, 0, 0))) == 2  # arrays loaded
    result = mem.forget(noise, "keyboard noise", actor="ops")
    assert not result.purged
    with pytest.raises(NotFoundError):
        mem.get(noise)
    assert [h.record.id for h in mem.peek("q", query_embedding=unit(1, 0, 0))] == [keep]
    assert mem.peek("asdf", kinds=["observation"], preset="default", query_embedding=None) != []
    entry = mem.audit(noise)[-1]
    assert (entry.action, entry.reason, entry.actor) == ("forget", "keyboard noise", "ops")


def test_purging_a_secret_leaves_no_trace_and_flags_dependants(
    db_path: Path, clock: SimClock
) -> None:
    with Memory.open(db_path, embedder=None, clock=clock) as mem:
        secret = _ordinary_and_a_secret(mem)
        insight = mem.remember(
            "staging credentials exist", kind="reflection", evidence=[secret],
            embedding=unit(0, 0, 1),
        ).id  # fmt: skip
        assert mem.peek("Tr0ub4dor zebras", preset="default")  # found before
        assert b"Tr0ub4dor" in _raw_bytes(db_path)

        result = mem.forget(secret, "credential leaked into memory")
        assert result.purged
        assert result.scrubbed
        assert result.flagged == (insight,)
        assert mem.get(insight).evidence_status is EvidenceStatus.MISSING
        with pytest.raises(NotFoundError):
            mem.get(secret)
        with pytest.raises(NotFoundError):
            mem.feedback(secret, "harmful")
        assert all(
            h.record.id != secret for h in mem.peek("q", query_embedding=unit(0, 1, 1), k=50)
        )
        assert all("Tr0ub4dor" not in e.reason and "Tr0ub4dor" not in str(e.detail)
                   for e in mem.audit() if e.reason)  # fmt: skip
        raw = _raw_bytes(db_path)
        for fragment in (SECRET, "Tr0ub4dor", "tr0ub4dor", "zebras"):
            assert fragment.encode() not in raw, fragment
        assert all("Tr0ub4dor" not in h.record.text for h in mem.peek("Tr0ub4dor", k=50))


def test_a_purge_another_process_s_read_holds_back_is_finished_by_scrub(
    db_path: Path, clock: SimClock
) -> None:
    with Memory.open(db_path, embedder=None, clock=clock) as mem:
        secret = _ordinary_and_a_secret(mem)
        reader = sqlite3.connect(db_path, isolation_level=None)
        reader.execute("BEGIN")
        reader.execute("SELECT COUNT(*) FROM records").fetchall()  # a snapshot held open
        try:
            result = mem.forget(secret, "credential leaked")
            assert not result.scrubbed
            assert result.remains is not None
            assert "another process holds a read open" in result.remains
        finally:
            reader.execute("ROLLBACK")
            reader.close()
        assert mem.scrub() == ScrubResult(scrubbed=True)
        assert Path(f"{db_path}-wal").stat().st_size == 0
        for fragment in (SECRET, "Tr0ub4dor", "tr0ub4dor", "zebras"):
            assert fragment.encode() not in _raw_bytes(db_path), fragment


def test_purge_true_also_purges_a_normal_record(db_path: Path, clock: SimClock) -> None:
    with Memory.open(db_path, embedder=None, clock=clock) as mem:
        rid = mem.remember("Jane Doe lives at 12 Quarry Lane", embedding=unit(1, 0)).id
        mem.forget(rid, "GDPR erasure request", purge=True)
        assert b"Quarry" not in _raw_bytes(db_path)
        assert mem.audit(rid)[-1].action == "purge"


def test_the_gate_rejects_near_duplicates_in_the_same_domain(mem: Memory, clock: SimClock) -> None:
    first = mem.remember("deploys happen on Fridays", kind="fact", domain="ops",
                         embedding=unit(1, 0.01, 0))  # fmt: skip
    again = mem.remember("Deploys happen on Fridays.", kind="fact", domain="ops",
                         embedding=unit(1, 0.012, 0))  # fmt: skip
    assert (again.stored, again.id, again.duplicate_of) == (False, None, first.id)
    assert again.reason is not None
    assert "near-duplicate" in again.reason
    elsewhere = mem.remember("deploys happen on Fridays", kind="fact", domain="calendar",
                             embedding=unit(1, 0.01, 0))  # fmt: skip
    assert elsewhere.stored
    clock.advance(days=1)
    correction = mem.supersede(first.id, "deploys happen on Fridays", embedding=unit(1, 0.01, 0))  # type: ignore[arg-type]
    assert correction.stored
    for _ in range(2):  # observations are never gated: repetition is information
        assert mem.remember("the alarm rang", embedding=unit(0, 0, 1)).stored
    batch = mem.remember_many(
        [{"text": "a", "embedding": unit(0, 1, 0)}, {"text": "b", "embedding": unit(0, 1, 0.01)}],
        kind="instruction",
    )
    assert [r.stored for r in batch] == [True, False]
    assert batch[1].duplicate_of == batch[0].id


def test_the_gate_never_merges_texts_stating_different_numbers(mem: Memory) -> None:
    """all-MiniLM-L6-v2 puts "Pin libfoo to 2.1" and "… to 2.2" at cosine 0.966, "at 10am" and
    "at 11am" at 0.962 — above its gate threshold: they are two facts, and both are kept."""
    pin = mem.remember("Pin libfoo to 2.1", kind="instruction", embedding=unit(1, 0.01, 0))
    other = mem.remember("Pin libfoo to 2.2", kind="instruction", embedding=unit(1, 0.011, 0))
    assert pin.stored
    assert other.stored
    same = mem.remember("pin libfoo to 2.1!", kind="instruction", embedding=unit(1, 0.01, 0))
    assert (same.stored, same.duplicate_of) == (False, pin.id)
    batch = mem.remember_many(
        [{"text": "Standup at 10am", "embedding": unit(0, 1, 0)},
         {"text": "Standup at 11am", "embedding": unit(0, 1, 0.001)},
         {"text": "standup at 10 am", "embedding": unit(0, 1, 0.002)}],
        kind="fact",
    )  # fmt: skip
    assert [r.stored for r in batch] == [True, True, False]


def test_gate_thresholds_are_per_embedder(db_path: Path, clock: SimClock) -> None:
    strict = WriteGate(thresholds={"test/fixed": 0.5})
    embedder = FixedEmbedder({"a": unit(1, 0, 0, 0, 0, 0, 0, 0), "b": unit(1, 1, 0, 0, 0, 0, 0, 0)})
    with Memory.open(db_path, embedder=embedder, clock=clock, write_gate=strict) as mem:
        assert mem.remember("a", kind="fact").stored
        assert not mem.remember("b", kind="fact").stored  # cosine 0.707 >= 0.5
    assert WriteGate().threshold("sentence-transformers/all-MiniLM-L6-v2") == 0.96
    assert WriteGate().threshold("unknown/model") == WriteGate().default_threshold


def test_without_vectors_the_gate_compares_text(mem: Memory) -> None:
    assert mem.remember("Use  UTC everywhere", kind="fact").stored
    again = mem.remember("use utc everywhere", kind="fact")
    assert not again.stored
    assert mem.remember("use UTC in logs", kind="fact").stored
