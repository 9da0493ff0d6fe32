"""Every field survives close/reopen and export/import; rankings and scores are identical."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from chronomem import ConflictError, InvalidInputError, Memory, SimClock

from .conftest import store_of, unit
from .scenario import QUERY, populate


def _dump(mem: Memory) -> list[dict[str, object]]:
    with store_of(mem).snapshot():
        return [
            {
                **i.record.to_dict(),
                "embedding": None if i.embedding is None else i.embedding.tolist(),
            }
            for i in store_of(mem).iter_records(mem.space)
        ]


def _ranking(mem: Memory) -> list[tuple[str, float]]:
    now = mem.clock.now()
    return [
        (h.record.id, h.score)
        for kwargs in ({}, {"as_of": now - timedelta(days=2, hours=3)}, {"include_history": True})
        for h in mem.peek("q", k=10, query_embedding=QUERY, **kwargs)  # type: ignore[arg-type]
    ]


def _audit(mem: Memory) -> list[tuple[object, ...]]:
    return [(e.at, e.action, e.record_id, e.actor, e.reason, dict(e.detail)) for e in mem.audit()]


def test_close_and_reopen_keeps_every_field_and_ranking(
    location: str | Path, clock: SimClock
) -> None:
    with Memory.open(location, embedder=None, clock=clock, preset="generative-agents") as mem:
        populate(mem, clock)
        records, ranking, audit = _dump(mem), _ranking(mem), _audit(mem)
    assert {"supersede", "close", "verify", "feedback"} <= {a[1] for a in audit}
    accessed = [r for r in records if r["last_accessed_at"] != r["recorded_at"]]
    assert len(accessed) >= 2  # the scenario really has access times after creation
    with Memory.open(location, embedder=None, clock=clock, preset="generative-agents") as mem:
        assert _dump(mem) == records
        assert _ranking(mem) == ranking
        assert _audit(mem) == audit


def test_export_import_keeps_ids_every_field_and_ranking(tmp_path: Path, clock: SimClock) -> None:
    archive = tmp_path / "space.jsonl"
    with Memory.open(
        tmp_path / "a.db", embedder=None, clock=clock, preset="generative-agents"
    ) as a:
        populate(a, clock)
        records, ranking, audit = _dump(a), _ranking(a), _audit(a)
        assert a.export(archive) == len(records)
        first_bytes = archive.read_bytes()
        a.export(archive)
        assert archive.read_bytes() == first_bytes  # deterministic
    with Memory.open(
        tmp_path / "b.db", embedder=None, clock=clock, preset="generative-agents"
    ) as b:
        report = b.import_(archive)
        assert (report.records, report.audit_entries) == (len(records), len(audit))
        assert _dump(b) == records
        assert _ranking(b) == ranking
        assert _audit(b) == audit
        b.export(tmp_path / "again.jsonl")
        assert (tmp_path / "again.jsonl").read_bytes() == first_bytes
        with pytest.raises(ConflictError):
            b.import_(archive)  # ids already present: nothing imported twice
        assert len(_dump(b)) == len(records)


def test_import_refuses_dangling_evidence_and_writes_nothing(
    tmp_path: Path, clock: SimClock
) -> None:
    archive = tmp_path / "space.jsonl"
    with Memory.open(tmp_path / "a.db", embedder=None, clock=clock) as a:
        cited = a.remember("cited", embedding=unit(1, 0)).id
        a.remember("insight", kind="reflection", evidence=[cited], embedding=unit(0, 1))
        a.export(archive)
    lines = archive.read_text().splitlines()
    kept = [line for line in lines if json.loads(line).get("id") != cited]
    kept.append('{"type": "record", "id": "bad"}')
    archive.write_text("\n".join(kept) + "\n")
    with Memory.open(tmp_path / "b.db", embedder=None, clock=clock) as b:
        with pytest.raises(InvalidInputError) as err:
            b.import_(archive)
        message = str(err.value)
        assert "evidence" in message
        assert cited in message
        assert "26-character" in message
        assert b.stats()["records"] == 0


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("kind", "dream", "kind must be one of"),
        ("occurred_at", "2024-01-01T09:00:00", "naive"),
        ("occurred_at", "yesterday", "not an ISO 8601 instant"),
        ("importance", 11, "importance must be a number from 1"),
        ("tags", "one-string", "tags must be a list"),
        ("metadata", [1, 2], "metadata must be a mapping"),
        ("embedding", "%%%", "not valid base64"),
        ("depth", -1, "depth must be a number"),
    ],
)
def test_a_bad_archive_field_is_named_and_nothing_is_imported(
    tmp_path: Path, clock: SimClock, field: str, value: object, said: str
) -> None:
    archive = tmp_path / "space.jsonl"
    with Memory.open(tmp_path / "a.db", embedder=None, clock=clock) as a:
        a.remember("kept", embedding=unit(1, 0))
        a.remember("spoiled", embedding=unit(0, 1))
        a.export(archive)
    header, *lines = archive.read_text().splitlines()
    spoiled = json.loads(lines[1])
    spoiled[field] = value
    lines[1] = json.dumps(spoiled)
    archive.write_text("\n".join([header, *lines]) + "\n")
    with Memory.open(tmp_path / "b.db", embedder=None, clock=clock) as b:
        with pytest.raises(InvalidInputError) as err:
            b.import_(archive)
        assert "line 3" in str(err.value)
        assert said in str(err.value)
        assert b.stats()["records"] == 0
