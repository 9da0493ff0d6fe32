"""Changes by filter (issue 28; docs/filters.md, "Changing many records"): close, verify and
forget every record a filter selects, in one transaction, with a dry run that changes nothing —
on a real SQLite file and a real PostgreSQL database, over HTTP and from the CLI."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from chronomem import Memory, SimClock
from chronomem.client import Client
from chronomem.errors import AccessDeniedError, DependentsExistError, InvalidInputError
from chronomem.server.keys import create_key
from chronomem.stores import open_store

from ..cli.invoke import run
from ..conftest import T0
from ..server.service import running


def _users(m: Memory, clock: SimClock) -> dict[str, list[str]]:
    ids: dict[str, list[str]] = {"ana": [], "ben": []}
    for i in range(6):
        for user in ids:
            clock.advance(timedelta(minutes=1))
            written = m.remember(
                f"{user} note {i}", agent="assistant", kind="fact" if i % 2 else "observation",
                metadata={"user": user}, tags=["diary"] if i < 3 else [],
            )  # fmt: skip
            assert written.id is not None
            ids[user].append(written.id)
    return ids


@pytest.fixture
def filled(location: str | Path, clock: SimClock) -> tuple[Memory, dict[str, list[str]]]:
    clock.set(T0)
    m = Memory.open(location, embedder=None, clock=clock)
    return m, _users(m, clock)


def test_a_dry_run_lists_and_changes_nothing(filled: tuple[Memory, dict[str, list[str]]]) -> None:
    m, ids = filled
    before = [(r.id, r.status, r.last_verified_at) for r in m.records(limit=100)]
    audit = len(m.audit())
    spec = {"metadata.user": "ana", "tags": "diary"}
    for result in (
        m.close_where(spec, "moved out", dry_run=True),
        m.verify_where(spec, dry_run=True),
        m.forget_where(spec, "erase", purge=True, dry_run=True),
    ):
        assert result.dry_run
        assert set(result.record_ids) == set(ids["ana"][:3])
    assert [(r.id, r.status, r.last_verified_at) for r in m.records(limit=100)] == before
    assert len(m.audit()) == audit
    m.close()


def test_close_and_verify_where_change_exactly_the_selection(
    filled: tuple[Memory, dict[str, list[str]]], clock: SimClock
) -> None:
    m, ids = filled
    clock.advance(timedelta(hours=1))
    closed = m.close_where({"metadata.user": "ben", "kind": "fact"}, "ben left")
    assert set(closed.record_ids) == {ids["ben"][i] for i in (1, 3, 5)}
    for record_id in closed.record_ids:
        record = m.get(record_id)
        assert record.status.value == "closed"
        assert record.closed_reason == "ben left"
        entry = m.audit(record_id)[-1]
        assert (entry.action, entry.detail["filter"]) == (
            "close", "metadata.user $eq 'ben' AND kind $eq 'fact'"
        )  # fmt: skip
    assert {r.id for r in m.records(limit=100)} == set(ids["ana"]) | {
        ids["ben"][i] for i in (0, 2, 4)
    }
    # closed records are no longer open: closing them again selects nothing
    assert m.close_where({"metadata.user": "ben", "kind": "fact"}, "again").record_ids == ()
    # the past is intact: as of an hour ago they were open
    earlier = m.records(as_of=clock.now() - timedelta(minutes=30), limit=100)
    assert set(closed.record_ids) <= {r.id for r in earlier}
    verified = m.verify_where({"metadata.user": "ana"}, reason="checked with Ana")
    assert set(verified.record_ids) == set(ids["ana"])
    assert all(m.get(i).last_verified_at == clock.now() for i in ids["ana"])
    m.close()


def test_forget_where_refuses_what_the_rest_depends_on_and_purges_when_asked(
    filled: tuple[Memory, dict[str, list[str]]],
) -> None:
    m, ids = filled
    citing = m.remember("a summary of Ana's week", agent="assistant", evidence=[ids["ana"][0]])
    with pytest.raises(DependentsExistError) as refused:
        m.forget_where({"metadata.user": "ana"}, "erase Ana")
    assert tuple(refused.value.dependants) == (citing.id,)
    assert len(m.records(filter={"metadata.user": "ana"}, limit=100)) == 6  # nothing went
    # a selection that holds its dependants goes whole, without a purge
    both = m.forget_where(
        {"$or": [{"metadata.user": "ana"}, {"metadata.user": {"$exists": False}}]},
        "erase Ana and what cites her",
        dry_run=True,
    )
    assert set(both.record_ids) == {*ids["ana"], citing.id}
    erased = m.forget_where({"metadata.user": "ana"}, "GDPR erasure", purge=True)
    assert set(erased.purged) == set(ids["ana"])
    assert erased.flagged == (citing.id,)
    assert m.get(citing.id).evidence_status.value == "evidence_missing"
    assert m.records(filter={"metadata.user": "ana"}, include_history=True) == []
    purges = [e for e in m.audit() if e.record_id in ids["ana"]]
    assert {e.action for e in purges} == {"purge"}
    assert all(e.detail == {"filter_fields": ["metadata.user"]} for e in purges)
    assert all("ana" not in json.dumps(e.detail) for e in purges)  # no value of the filter
    m.close()


def test_a_purge_by_filter_leaves_no_byte_in_the_file(db_path: Path, clock: SimClock) -> None:
    clock.set(T0)
    with Memory.open(db_path, embedder=None, clock=clock) as m:
        for i in range(20):
            m.remember(f"zanzibar-secret-{i}", metadata={"user": "ana"})
            m.remember(f"kept note {i}", metadata={"user": "ben"})
        result = m.forget_where({"metadata.user": "ana"}, "erase", purge=True)
        assert len(result.purged) == 20
        assert result.scrubbed
    data = b"".join(p.read_bytes() for p in db_path.parent.glob(db_path.name + "*"))
    assert b"zanzibar-secret" not in data
    assert b"kept note" in data


def test_an_empty_filter_is_refused(db_path: Path) -> None:
    with Memory.open(db_path, embedder=None) as m:
        m.remember("x")
        for call in (
            lambda: m.forget_where({}, "everything"),
            lambda: m.close_where(None, "everything"),  # type: ignore[arg-type]
        ):
            with pytest.raises(InvalidInputError) as raised:
                call()
            assert raised.value.field == "filter"
        assert len(m.records()) == 1


def test_changes_by_filter_over_http_and_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "bulk.db"
    store = open_store(db)
    write = create_key(store, space="default", scope="write", label=None, now=T0)[1]
    admin = create_key(store, space="default", scope="admin", label=None, now=T0)[1]
    store.close()
    with running(db, embedder=None) as (url, _):
        with Client(url, key=write) as client:
            for i in range(4):
                client.remember(
                    f"note {i}", agent="a", metadata={"user": "ana" if i % 2 else "ben"}
                )
            dry = client.close_where({"metadata.user": "ana"}, "left", dry_run=True)
            assert dry.dry_run
            assert len(dry.record_ids) == 2
            done = client.close_where({"metadata.user": "ana"}, "left")
            assert set(done.record_ids) == set(dry.record_ids)
            assert client.verify_where({"agent": "a"}).record_ids  # the two still open
            with pytest.raises(AccessDeniedError):
                client.forget_where({"metadata.user": "ben"}, "erase", purge=True)
        with Client(url, key=admin) as client:
            purged = client.forget_where({"metadata.user": "ben"}, "erase", purge=True)
            assert len(purged.purged) == 2
            listed = client.records(filter={"metadata.user": "ana"}, include_history=True)
            assert {r.id for r in listed} == set(done.record_ids)
    code, out, _ = run(
        capsys, "verify-where", "--db", str(db), "--filter", '{"agent": "a"}', "--dry-run"
    )
    assert (code, out.splitlines()[0]) == (0, "0 records would be verified")
    code, out, _ = run(
        capsys, "forget-where", "--db", str(db), "--filter", '{"metadata.user": "ana"}',
        "--reason", "erase", "--json",
    )  # fmt: skip
    assert code == 0
    assert set(json.loads(out)["record_ids"]) == set(done.record_ids)
    with pytest.raises(SystemExit) as usage:
        run(capsys, "forget-where", "--db", str(db), "--reason", "x")
    assert usage.value.code == 2
    assert "--filter" in capsys.readouterr().err


def test_open_records_outside_their_window_are_changed_too(db_path: Path, clock: SimClock) -> None:
    clock.set(T0)
    with Memory.open(db_path, embedder=None, clock=clock) as m:
        m.remember(
            "ended",
            kind="fact",
            valid_until=T0 - timedelta(days=1),
            occurred_at=T0 - timedelta(days=2),
        )
        m.remember("not yet", kind="fact", valid_from=T0 + timedelta(days=1))
        assert len(m.records(status="open")) == 2
        assert len(m.verify_where({"kind": "fact"}).record_ids) == 2
        assert len(m.close_where({"kind": "fact"}, "done").record_ids) == 2


def test_a_refusal_names_ten_records_and_lists_every_dependant(db_path: Path) -> None:
    with Memory.open(db_path, embedder=None) as m:
        cited = [m.remember(f"note {i}", metadata={"user": "ana"}).id for i in range(12)]
        citing = [m.remember(f"summary {i}", evidence=[c]).id for i, c in enumerate(cited)]
        with pytest.raises(DependentsExistError) as refused:
            m.forget_where({"metadata.user": "ana"}, "erase")
        assert "and 2 more" in str(refused.value)
        assert sorted(refused.value.dependants) == sorted(citing)
