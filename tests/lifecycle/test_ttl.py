"""A time to live (issue 28; docs/lifecycle.md, "Time to live"): a record written with ``ttl`` or
``expires_at`` is closed at that instant for every read — on a real SQLite file and a real
PostgreSQL database, in another handle that never writes, at earlier and later ``as_of`` — and
the close is stored, audited, by the next write or ``expire()``; ``refresh_ttl`` reads extend
exactly the records they return. Over HTTP, MCP's schema and the CLI too."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import pytest

from chronomem import Memory, SimClock
from chronomem.client import Client
from chronomem.errors import AccessDeniedError, ConflictError, InvalidInputError
from chronomem.server.keys import create_key
from chronomem.stores import open_store

from ..cli.invoke import run
from ..conftest import T0, unit
from ..server.service import running

HOUR = timedelta(hours=1)


def _texts(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.record.text for h in hits]


@pytest.fixture
def door(mem: Memory, clock: SimClock) -> str:
    """A door code kept for one hour beside a fact kept for good, written at T0."""
    clock.set(T0)
    written = mem.remember("the door code is 4321", kind="fact", ttl=HOUR, embedding=unit(1, 0))
    mem.remember("the kettle is blue", kind="fact", embedding=unit(0.6, 0.8))
    assert written.id is not None
    return written.id


def test_an_expired_record_is_closed_for_every_read_from_its_expiry(
    mem: Memory, clock: SimClock, door: str
) -> None:
    record = mem.get(door)
    assert (record.expires_at, record.ttl) == (T0 + HOUR, 3600.0)
    assert _texts(mem.peek("door", query_embedding=unit(1, 0)))[0] == "the door code is 4321"
    clock.set(T0 + HOUR)  # at the instant itself it is closed
    assert _texts(mem.peek("door", query_embedding=unit(1, 0))) == ["the kettle is blue"]
    assert [r.text for r in mem.records()] == ["the kettle is blue"]
    assert mem.records(filter={"status": "open"}) == mem.records()
    assert [r.id for r in mem.records(status="closed")] == [door]
    # ... and was open for a read of an earlier instant, as any close
    earlier = mem.peek("door", query_embedding=unit(1, 0), as_of=T0 + HOUR / 2)
    assert _texts(earlier)[0] == "the door code is 4321"
    assert [r.id for r in mem.records(as_of=T0 + HOUR / 2, status="open")] == [
        r.id for r in mem.records(as_of=T0 + HOUR / 2)
    ]
    # by id and in history it shows the close the next write stores
    shown = mem.get(door)
    assert (shown.status.value, shown.closed_reason) == ("closed", "expired")
    assert (shown.superseded_at, shown.valid_until) == (T0 + HOUR, T0 + HOUR)
    history = mem.peek("door", query_embedding=unit(1, 0), include_history=True)
    assert history[0].record.closed_reason == "expired"
    assert door not in mem.close_where({"kind": "fact"}, "tidy", dry_run=True).record_ids


def test_the_next_write_stores_the_close_audited(mem: Memory, clock: SimClock, door: str) -> None:
    clock.set(T0 + 2 * HOUR)
    assert [e.action for e in mem.audit(door)] == []  # a read stores nothing
    mem.remember("a later note", embedding=unit(0, 1))
    entries = mem.audit(door)
    assert [(e.action, e.actor, e.reason) for e in entries] == [("close", "ttl", "expired")]
    assert entries[0].detail == {"expires_at": (T0 + HOUR).isoformat()}
    assert entries[0].at == T0 + 2 * HOUR
    assert mem.expire() == []  # stored once
    with pytest.raises(ConflictError):
        mem.close_record(door, "too late")


def test_expire_sweeps_without_another_write(mem: Memory, clock: SimClock, door: str) -> None:
    assert mem.expire() == []
    clock.set(T0 + HOUR)
    assert mem.expire() == [door]
    assert [e.reason for e in mem.audit(door)] == ["expired"]


def test_another_handle_that_never_writes_sees_the_expiry(db_path: Path, clock: SimClock) -> None:
    clock.set(T0)
    with Memory.open(db_path, embedder=None, clock=clock) as writer:
        rid = writer.remember("parking spot 12", ttl=HOUR, embedding=unit(1, 0)).id
    reader_clock = SimClock(T0 + HOUR / 2)
    with Memory.open(db_path, embedder=None, clock=reader_clock) as reader:
        assert [h.record.id for h in reader.peek("spot", query_embedding=unit(1, 0))] == [rid]
        reader_clock.set(T0 + 2 * HOUR)
        assert reader.peek("spot", query_embedding=unit(1, 0)) == []
    with sqlite3.connect(db_path) as conn:  # nothing was written: the stored row is open
        assert conn.execute("SELECT status FROM records").fetchall() == [("open",)]


def test_writers_in_several_handles_store_the_close_once(
    location: str | Path, clock: SimClock
) -> None:
    clock.set(T0)
    with Memory.open(location, embedder=None, clock=clock) as first:
        rid = first.remember("a one-hour pass", ttl=HOUR).id
        clock.set(T0 + 2 * HOUR)
        handles = [Memory.open(location, embedder=None, clock=clock) for _ in range(4)]
        try:
            with ThreadPoolExecutor(4) as pool:
                done = list(pool.map(lambda m: m[1].remember(f"note {m[0]}").stored,
                                     enumerate(handles)))  # fmt: skip
            assert done == [True] * 4
        finally:
            for m in handles:
                m.close()
        assert [(e.action, e.reason) for e in first.audit(rid)] == [("close", "expired")]


def test_refresh_ttl_extends_exactly_the_returned_records(
    mem: Memory, clock: SimClock, door: str
) -> None:
    other = mem.remember("the bin code is 999", ttl=HOUR, embedding=unit(0, 1)).id
    assert other is not None
    clock.set(T0 + HOUR / 2)
    hits = mem.peek("door", query_embedding=unit(1, 0), k=1, refresh_ttl=True)
    assert hits[0].record.expires_at == T0 + HOUR / 2 + HOUR  # the hit shows the new expiry
    assert mem.get(door).expires_at == T0 + HOUR / 2 + HOUR
    assert mem.get(other).expires_at == T0 + HOUR  # not returned: not refreshed
    assert mem.get(door).last_accessed_at == T0  # peek still touches nothing
    clock.set(T0 + HOUR)
    listed = mem.records(refresh_ttl=True)
    assert other not in {r.id for r in listed}  # expired: never revived
    assert mem.get(door).expires_at == T0 + 2 * HOUR
    assert mem.get(other).closed_reason == "expired"
    kettle = next(r for r in listed if r.text == "the kettle is blue")
    assert kettle.expires_at is None  # no time to live: nothing to refresh
    mem.recall("door", query_embedding=unit(1, 0), k=1, refresh_ttl=True)
    assert mem.get(door).expires_at == T0 + 2 * HOUR


def test_expires_at_and_what_supersession_keeps(mem: Memory, clock: SimClock) -> None:
    clock.set(T0)
    rid = mem.remember("on call: ana", kind="fact", expires_at=T0 + 3 * HOUR).id
    assert rid is not None
    assert mem.get(rid).ttl == 3 * 3600.0
    new = mem.supersede(rid, "on call: ben").id
    assert new is not None
    assert mem.get(new).expires_at is None  # a time to live is not inherited
    clock.set(T0 + 4 * HOUR)
    assert [r.text for r in mem.records()] == ["on call: ben"]
    assert mem.get(rid).status.value == "superseded"  # closed before it would have expired


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"ttl": 0}, "ttl"),
        ({"ttl": -5}, "ttl"),
        ({"ttl": True}, "ttl"),
        ({"ttl": "1h"}, "ttl"),
        ({"ttl": 1e12}, "ttl"),
        ({"ttl": timedelta(0)}, "ttl"),
        ({"ttl": 60, "expires_at": T0 + HOUR}, "ttl"),
        ({"expires_at": T0}, "expires_at"),
        ({"expires_at": T0 - HOUR}, "expires_at"),
    ],
)
def test_a_bad_time_to_live_is_refused_naming_it(
    db_path: Path, clock: SimClock, fields: dict[str, object], field: str
) -> None:
    clock.set(T0)
    with Memory.open(db_path, embedder=None, clock=clock) as m:
        with pytest.raises(InvalidInputError) as raised:
            m.remember("x", **fields)  # type: ignore[arg-type]
        assert raised.value.field == field
        assert m.records() == []


def test_time_to_live_over_http_and_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "ttl.db"
    store = open_store(db)
    write = create_key(store, space="default", scope="write", label=None, now=T0)[1]
    read = create_key(store, space="default", scope="read", label=None, now=T0)[1]
    admin = create_key(store, space="default", scope="admin", label=None, now=T0)[1]
    store.close()
    with running(db, embedder=None) as (url, _), Client(url, key=admin) as owner:
        owner.set_clock(T0)
        with Client(url, key=write) as client:
            a = client.remember("coupon AB12", ttl=timedelta(hours=2)).id
            b = client.remember("coupon CD34", ttl=600).id
            assert a is not None
            assert b is not None
            assert client.get(a).expires_at == T0 + 2 * HOUR
            assert client.get(b).expires_at == T0 + timedelta(minutes=10)
            with pytest.raises(InvalidInputError):
                client.remember("never", ttl=-1)
            owner.advance_clock(timedelta(minutes=5))
            client.records(refresh_ttl=True)
            assert client.get(b).expires_at == T0 + timedelta(minutes=15)
            owner.advance_clock(HOUR)
            assert [r.id for r in client.records()] == [a]
            assert client.expire() == [b]
        with Client(url, key=read) as client:
            assert [r.id for r in client.records()] == [a]
            with pytest.raises(AccessDeniedError):
                client.records(refresh_ttl=True)
            with pytest.raises(AccessDeniedError):
                client.expire()
    code, out, _ = run(capsys, "remember", "a ticket", "--ttl", "30m", "--db", str(db), "--json")
    assert code == 0
    ticket = json.loads(out)["id"]
    with Memory.open(db, embedder=None) as m:
        record = m.get(ticket)
        assert record.ttl == 1800.0
        assert record.expires_at == record.recorded_at + timedelta(minutes=30)
    code, out, _ = run(capsys, "expire", "--db", str(db))
    assert (code, out.strip()) == (0, "0 expired record(s) closed")
    with pytest.raises(SystemExit) as usage:
        run(capsys, "remember", "x", "--ttl", "soon", "--db", str(db))
    assert usage.value.code == 2


_PEEK = """
import sys
from datetime import datetime
from chronomem import Memory, SimClock
clock = SimClock(datetime.fromisoformat(sys.argv[2]))
with Memory.open(sys.argv[1], embedder=None, clock=clock) as m:
    print(",".join(h.record.text for h in m.peek("spot", query_embedding=[1.0, 0.0])))
"""


def test_another_process_sees_the_expiry_without_a_write(
    location: str | Path, clock: SimClock
) -> None:
    clock.set(T0)
    with Memory.open(location, embedder=None, clock=clock) as m:
        m.remember("parking spot 12", ttl=HOUR, embedding=unit(1, 0))
    seen = []
    for at in (T0 + HOUR / 2, T0 + 2 * HOUR):
        done = subprocess.run(
            [sys.executable, "-c", _PEEK, str(location), at.isoformat()],
            capture_output=True, text=True, timeout=180, check=True,
        )  # fmt: skip
        seen.append(done.stdout.strip())
    assert seen == ["parking spot 12", ""]
    with Memory.open(location, embedder=None, clock=clock) as m:
        assert m.audit() == []  # nobody wrote: the close is not stored yet, reads were right
