"""The change feed (docs/design/change-feed.md): every kind of change, in commit order, on
every store; no text of a purged record; long polls and Server-Sent Events over real HTTP."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import httpx
import pytest

from chronomem import InvalidInputError, Memory, SimClock
from chronomem.client import Client
from chronomem.server.keys import create_key, revoke_key

from ..conftest import T0, FixedEmbedder, unit
from ..waiting import within
from .service import running

V = unit(1, 0, 0, 0)


def _kinds(mem: Memory, after: int = 0) -> list[str]:
    return [c.kind for c in mem.changes(after, limit=1000)]


def test_every_kind_of_change_is_in_the_feed_in_order(mem: Memory, clock: SimClock) -> None:
    a = mem.remember("the bakery opens at 7", agent="ana", embedding=V).id
    b, c = (w.id for w in mem.remember_many(
        [{"text": "the mill grinds on tuesdays", "embedding": unit(0, 1, 0, 0)},
         {"text": "the well is dry", "embedding": unit(0, 0, 1, 0)}], agent="ana",
    ))  # fmt: skip
    clock.advance(hours=1)
    new = mem.supersede(a, "the bakery opens at 8", reason="new hours", embedding=V).id
    mem.close_record(b, reason="the mill burned")
    mem.verify(c)
    mem.feedback(c, "harmful", "it rained")
    mem.forget(c, reason="wrong", purge=True)
    fire = mem.add_event("the mill burns", embedding=V)
    flood = mem.add_event("the river floods", embedding=unit(0, 1, 0, 0))
    mem.link(fire.id, flood.id)
    mem.unlink(fire.id, flood.id)
    store = mem._h.store
    key, _ = create_key(store, space=mem.space, scope="read", label="reader", now=clock.now())
    revoke_key(store, key.id, now=clock.now())
    feed = mem.changes(limit=1000)
    assert [c.seq for c in feed] == list(range(1, len(feed) + 1))
    assert [c.kind for c in feed] == [
        "write", "write", "write", "write", "supersede", "close", "verify", "feedback",
        "purge", "event", "event", "link", "unlink", "key", "key",
    ]  # fmt: skip
    assert [c.record_id for c in feed[:5]] == [a, b, c, new, a]
    assert feed[4].detail["by"] == new
    assert feed[4].reason == "new hours"
    assert [c.detail["change"] for c in feed[-2:]] == ["created", "revoked"]
    assert feed[-1].detail["key_id"] == key.id
    assert "digest" not in feed[-1].detail
    assert (feed[9].detail["event_id"], feed[12].detail) == (
        fire.id,
        {"cause": fire.id, "effect": flood.id},
    )
    assert len({c.id for c in feed}) == len(feed)  # ids are unique
    assert mem.stats()["last_change"] == len(feed)
    # the text of a write while its record is stored; the purged one's is gone
    assert [c.text for c in feed[:4]] == [
        "the bakery opens at 7",
        "the mill grinds on tuesdays",
        None,
        "the bakery opens at 8",
    ]
    # a page after a position
    assert [c.seq for c in mem.changes(3, limit=2)] == [4, 5]
    assert mem.changes(len(feed)) == []


def test_a_review_decision_is_a_change(mem: Memory) -> None:
    bad = mem.remember("deploy on fridays", kind="instruction", embedding=V).id
    for why in ("outage", "another outage", "a third"):
        mem.feedback(bad, "harmful", why)
    [pushed] = [p for p in mem.review() if p.category == "pushed-down"]
    head = mem.stats()["last_change"]
    mem.reject(pushed.id, "still our policy", actor="lead")
    [decision] = mem.changes(head)
    assert (decision.kind, decision.actor, decision.reason) == (
        "review",
        "lead",
        "still our policy",
    )
    assert decision.detail == {"proposal_id": pushed.id, "decision": "rejected"}


def test_records_flagged_by_a_change_to_their_evidence_are_changes(mem: Memory) -> None:
    cited = mem.remember("Maria agreed to decorate", embedding=V).id
    insight = mem.remember("Maria is a good friend", kind="reflection", evidence=[cited],
                           embedding=unit(0, 1, 0, 0)).id  # fmt: skip
    head = mem.stats()["last_change"]
    mem.close_record(cited, reason="she cancelled")
    flagged = [(c.kind, c.record_id) for c in mem.changes(head)]
    assert ("flag", insight) in flagged
    assert ("close", cited) in flagged
    [flag] = [c for c in mem.changes(head) if c.kind == "flag"]
    assert flag.detail["evidence_status"] == mem.get(insight).evidence_status.value


def test_secret_and_personal_records_never_show_their_text(mem: Memory) -> None:
    mem.remember("the safe code is 4711", sensitivity="secret", embedding=V)
    mem.remember("ana's phone is 555", sensitivity="personal", embedding=V)
    mem.remember("the square is sunny", embedding=V)
    assert [c.text for c in mem.changes()] == [None, None, "the square is sunny"]


def test_the_feed_rejects_bad_positions(mem: Memory) -> None:
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(InvalidInputError, match="after"):
            mem.changes(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="limit"):
        mem.changes(0, limit=1001)


def test_a_rolled_back_change_leaves_no_event(mem: Memory) -> None:
    mem.remember("first", embedding=V)
    store = mem._h.store

    def aborted() -> None:
        with store.write():
            mem.remember("never stored", embedding=V)
            raise RuntimeError("abort")

    with pytest.raises(RuntimeError):
        aborted()
    mem.remember("second", embedding=V)
    assert [(c.seq, c.text) for c in mem.changes()] == [(1, "first"), (2, "second")]


def test_concurrent_writers_commit_their_changes_in_seq_order(location: str | Path) -> None:
    """Four handles (four connections) write one space at once while a reader follows the feed
    by position: the reader never meets a seq below one it has read, and ends with every write
    — the property resumption by position needs (PostgreSQL commits out of id order under
    concurrency; the feed's numbers come from the space's row lock)."""
    writers = [Memory.open(location, embedder=None) for _ in range(4)]
    reader = Memory.open(location, embedder=None)
    written: list[str] = []
    done = threading.Event()

    def write(m: Memory, n: int) -> None:
        for i in range(25):
            written.append(m.remember(f"writer {n} note {i}", embedding=V, agent=f"w{n}").id)

    threads = [threading.Thread(target=write, args=(m, n)) for n, m in enumerate(writers)]
    seen: list[int] = []
    ids: set[str] = set()

    def follow() -> None:
        position = 0
        while True:
            last_round = done.is_set()
            for change in reader.changes(position, limit=7):
                seen.append(change.seq)
                ids.add(change.record_id or "")
                position = change.seq
            if last_round and position == reader.stats()["last_change"]:
                return

    follower = threading.Thread(target=follow)
    follower.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done.set()
    follower.join(timeout=60)
    for m in (*writers, reader):
        m.close()
    assert seen == list(range(1, 101))
    assert ids == set(written)


# -- over HTTP ----------------------------------------------------------------------------------
def test_a_long_poll_answers_when_a_change_commits(tmp_path: Path) -> None:
    with running(tmp_path / "s.db", embedder=FixedEmbedder(dim=4)) as (url, _), \
            Client(url, space="town") as client:  # fmt: skip
        client.remember("first", agent="ana")
        assert [c.text for c in client.changes()] == ["first"]
        start = time.monotonic()
        assert client.changes(1, wait=0.5) == []  # nothing new: empty after the wait
        assert time.monotonic() - start >= 0.45

        def later() -> None:
            time.sleep(0.6)
            with Memory.open(tmp_path / "s.db", space="town", embedder=None) as other:
                other.remember("from another process's handle", embedding=unit(1, 0, 0, 0))

        writer = threading.Thread(target=later)
        start = time.monotonic()
        writer.start()
        [change] = client.changes(1, wait=20)
        waited = time.monotonic() - start
        writer.join()
        assert change.text == "from another process's handle"
        assert change.seq == 2
        assert 0.5 < waited < 15  # answered when the write committed, not at the wait's end (20 s)
        with pytest.raises(InvalidInputError, match="wait"):
            client.changes(0, wait=61)
        for after in (-1, 2**64):  # beyond a store's integers too (found by the fuzz test)
            answer = httpx.get(f"{url}/v1/spaces/town/changes", params={"after": after})
            assert answer.status_code == 422
            assert httpx.get(f"{url}/v1/changes", params={"after": after}).status_code == 422


def _events(lines: list[str]) -> list[tuple[int, dict[str, object]]]:
    out, seq = [], None
    for line in lines:
        if line.startswith("id: "):
            seq = int(line[4:])
        elif line.startswith("data: ") and seq is not None:
            out.append((seq, json.loads(line[6:])))
    return out


def _read_stream(url: str, n: int, **kwargs: object) -> list[tuple[int, dict[str, object]]]:
    lines: list[str] = []
    with httpx.stream("GET", url, timeout=20, **kwargs) as answer:  # type: ignore[arg-type]
        assert answer.headers["content-type"].startswith("text/event-stream")
        for line in answer.iter_lines():
            lines.append(line)
            if len(_events(lines)) == n:
                break
    return _events(lines)


def test_server_sent_events_stream_and_resume(tmp_path: Path) -> None:
    with running(tmp_path / "s.db", embedder=FixedEmbedder(dim=4)) as (url, _), \
            Client(url, space="town") as client:  # fmt: skip
        for text in ("one", "two", "three"):
            client.remember(text)
        stream = f"{url}/v1/spaces/town/changes/stream"
        first = _read_stream(stream, 2)
        assert [(s, e["text"]) for s, e in first] == [(1, "one"), (2, "two")]
        # a reconnecting EventSource sends the last id it saw: the stream resumes after it
        resumed: list[tuple[int, dict[str, object]]] = []
        reader = threading.Thread(target=lambda: resumed.extend(
            _read_stream(stream, 2, headers={"Last-Event-ID": "2"})
        ))  # fmt: skip
        reader.start()
        time.sleep(0.5)
        client.remember("four")  # committed while the stream waits
        reader.join(timeout=20)
        assert [(s, e["text"]) for s, e in resumed] == [(3, "three"), (4, "four")]
        for bad in ("x", str(2**64)):
            assert httpx.get(stream, headers={"Last-Event-ID": bad}).status_code == 422


def test_the_feed_needs_read_and_webhooks_admin(tmp_path: Path) -> None:
    clock = SimClock(T0)
    with running(tmp_path / "s.db", loopback=False, embedder=FixedEmbedder(dim=4)) as (url, sp):
        _, read = create_key(sp.admin, space="town", scope="read", label=None, now=clock.now())
        _, other = create_key(sp.admin, space="elsewhere", scope="admin", label=None,
                              now=clock.now())  # fmt: skip
        _, admin = create_key(sp.admin, space=None, scope="admin", label="ops", now=clock.now())
        base = f"{url}/v1/spaces/town"
        bearer = {"Authorization": f"Bearer {read}"}
        assert httpx.get(f"{base}/changes").status_code == 401
        assert httpx.get(f"{base}/changes", headers=bearer).status_code == 200
        elsewhere = {"Authorization": f"Bearer {other}"}
        assert httpx.get(f"{base}/changes", headers=elsewhere).status_code == 404
        assert httpx.get(f"{base}/webhooks", headers=bearer).status_code == 403
        hook = {"url": "http://127.0.0.1:9/x"}
        assert httpx.post(f"{base}/webhooks", json=hook, headers=bearer).status_code == 403
        # the service's own feed: the admin key bound to no space (admin scope)
        ops = {"Authorization": f"Bearer {admin}"}
        assert httpx.get(f"{url}/v1/changes", headers=bearer).status_code == 403
        [made] = httpx.get(f"{url}/v1/changes", headers=ops).json()
        assert (made["kind"], made["detail"]["scope"], made["space"]) == ("key", "admin", "")
        assert "label" not in made["detail"]  # a key's label is not for the feed's readers
        # an admin key of one space is not an admin of the service
        assert httpx.get(f"{url}/v1/changes", headers=elsewhere).status_code == 403
        # the space's feed has the key bound to it
        kinds = [c["kind"] for c in httpx.get(f"{base}/changes", headers=bearer).json()]
        assert kinds == ["key"]
        assert "" not in sp.admin.spaces()


def test_a_revoked_key_s_stream_ends(tmp_path: Path) -> None:
    clock = SimClock(T0)
    with running(tmp_path / "s.db", loopback=False, embedder=FixedEmbedder(dim=4)) as (url, sp):
        key, token = create_key(sp.admin, space="town", scope="write", label=None,
                                now=clock.now())  # fmt: skip
        bearer = {"Authorization": f"Bearer {token}"}
        base = f"{url}/v1/spaces/town"
        lines: list[str] = []
        ended = threading.Event()

        def follow() -> None:
            with httpx.stream("GET", f"{base}/changes/stream", headers=bearer, timeout=30) as s:
                for line in s.iter_lines():
                    lines.append(line)
            ended.set()

        reader = threading.Thread(target=follow, daemon=True)
        reader.start()
        httpx.post(f"{base}/records", json={"text": "seen"}, headers=bearer).raise_for_status()
        within(10, lambda: any('"seen"' in line for line in lines))
        revoke_key(sp.admin, key.id, now=clock.now())
        with Memory.open(tmp_path / "s.db", space="town", embedder=None) as other:
            other.remember("after the revocation", embedding=unit(1, 0, 0, 0))
        assert ended.wait(10), "the stream went on after its key was revoked"
        assert any('"seen"' in line for line in lines)
        assert not any("after the revocation" in line for line in lines)


def test_stats_name_the_newest_change(tmp_path: Path) -> None:
    with running(tmp_path / "s.db", embedder=FixedEmbedder(dim=4)) as (url, _), \
            Client(url, space="town") as client:  # fmt: skip
        assert client.stats()["last_change"] == 0
        client.remember("one")
        client.remember("two")
        assert client.stats()["last_change"] == 2
        assert [c.seq for c in client.changes(1)] == [2]
