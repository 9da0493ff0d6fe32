"""Webhook deliveries of the change feed (docs/design/change-feed.md) to a real local receiver:
signed, in order, retried with backoff and never skipped, leased between replicas, no text of a
purged record, and every event received (deduplicated by id) across a restart of a real
``chronomem serve``."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from chronomem import Memory, SimClock
from chronomem.server.webhooks import Deliverer, backoff, new_webhook
from chronomem.stores import open_store
from chronomem.webhooks import EVENT_ID_HEADER, SIGNATURE_HEADER, sign, verify

from ..conftest import T0, unit
from ..waiting import within
from .service import serving_process

V = [1.0, 0.0, 0.0, 0.0]


@dataclass
class Receiver:
    """A webhook receiver on 127.0.0.1: answers each POST with the next status of ``plan``
    (then 200), after ``delay`` seconds, and keeps what it was sent."""

    plan: list[int] = field(default_factory=list)
    delay: float = 0.0
    got: list[tuple[dict[str, str], bytes, int]] = field(default_factory=list)
    url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answered(self) -> list[dict[str, Any]]:
        """The bodies it answered 2xx to, in arrival order."""
        with self.lock:
            return [json.loads(body) for _, body, status in self.got if status < 300]


@contextmanager
def receiver(**kwargs: Any) -> Iterator[Receiver]:
    r = Receiver(**kwargs)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            time.sleep(r.delay)
            with r.lock:
                status = r.plan.pop(0) if r.plan else 200
                r.got.append((dict(self.headers), body, status))
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    r.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield r
    finally:
        server.shutdown()
        server.server_close()


def test_signatures_check_the_body_the_secret_and_the_time() -> None:
    body = b'{"seq":1}'
    header = sign("whsec_0123456789abcdef", body, timestamp=1_700_000_000)
    assert verify("whsec_0123456789abcdef", body, header, now=1_700_000_100)
    assert not verify("whsec_0123456789abcdef", b'{"seq":2}', header, now=1_700_000_100)
    assert not verify("whsec_other_secret_000", body, header, now=1_700_000_100)
    assert not verify("whsec_0123456789abcdef", body, header, now=1_700_000_301)  # too old
    assert not verify("whsec_0123456789abcdef", body, "v1=abc", now=1_700_000_000)
    assert not verify("whsec_0123456789abcdef", body, "t=1700000000,v1=é", now=1_700_000_000)
    assert [backoff(n) for n in (1, 2, 3, 9, 10, 40)] == [1, 2, 4, 256, 300, 300]


def test_deliveries_are_signed_in_order_and_retried_without_skipping(
    tmp_path: Path,
) -> None:
    clock = SimClock(T0)
    with Memory.open(tmp_path / "s.db", space="town", embedder=None, clock=clock) as mem, \
            receiver(plan=[500, 503]) as hook_receiver:  # fmt: skip
        store = mem._h.store
        mem.remember("before the subscription", embedding=unit(1, 0, 0, 0))
        hook = new_webhook("town", hook_receiver.url, None, after=store.feed_head("town"))
        store.insert_webhook(hook)
        texts = [
            "파티는 다섯 시에 시작해요",
            "会議は明日の九時からです",
            "user: the ferry leaves at 9",
        ]
        ids = [mem.remember(t, embedding=unit(1, 0, 0, 0)).id for t in texts]
        deliverer = Deliverer(store, clock=clock, base_delay=1.0)
        try:
            assert deliverer.run_once() == 0  # 500: attempt 1 failed, next in 1 s
            assert deliverer.run_once() == 0  # not due yet: nothing sent
            assert len(hook_receiver.got) == 1
            clock.advance(seconds=1)
            assert deliverer.run_once() == 0  # 503: attempt 2, next in 2 s
            state = store.get_webhook(hook.id)
            assert state is not None
            assert (state.failures, state.delivered) == (2, 1)
            assert state.next_attempt_at == clock.now() + timedelta(seconds=2)
            clock.advance(seconds=2)
            assert deliverer.run_once() == 3
        finally:
            deliverer.stop()
        delivered = hook_receiver.answered()
        assert [(e["seq"], e["record_id"]) for e in delivered] == [(2, ids[0]), (3, ids[1]),
                                                                    (4, ids[2])]  # fmt: skip
        assert [e["text"] for e in delivered] == texts  # Korean, Japanese, a chat turn: as written
        # every attempt of change 2 carried the same event id, each signed with the secret
        assert [h[EVENT_ID_HEADER] for h, _, _ in hook_receiver.got[:3]] == [delivered[0]["id"]] * 3
        for headers, body, _ in hook_receiver.got:
            assert verify(hook.secret or "", body, headers[SIGNATURE_HEADER],
                          now=clock.now().timestamp())  # fmt: skip
        failures = store.webhook_failures(hook.id)
        assert [(f.seq, f.attempt, f.status) for f in failures] == [(2, 1, 500), (2, 2, 503)]
        state = store.get_webhook(hook.id)
        assert state is not None
        assert (state.delivered, state.failures, state.last_error) == (
            4,
            0,
            None,
        )


class _LosesOneCursorMove:
    """A store whose first ``webhook_delivered`` fails, as a crash between a receiver's 2xx
    and the cursor's move would leave it."""

    def __init__(self, store: Any) -> None:
        self._store, self.failed = store, False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def webhook_delivered(self, webhook_id: str, seq: int) -> None:
        if not self.failed:
            self.failed = True
            raise RuntimeError("the process died here")
        self._store.webhook_delivered(webhook_id, seq)


def test_an_event_whose_cursor_move_was_lost_is_sent_again_the_same(tmp_path: Path) -> None:
    clock = SimClock(T0)
    with Memory.open(tmp_path / "s.db", space="town", embedder=None, clock=clock) as mem, \
            receiver() as hook_receiver:  # fmt: skip
        store = mem._h.store
        store.insert_webhook(new_webhook("town", hook_receiver.url, None, after=0))
        for text in ("one", "two"):
            mem.remember(text, embedding=unit(1, 0, 0, 0))
        deliverer = Deliverer(_LosesOneCursorMove(store), clock=clock)  # type: ignore[arg-type]
        try:
            assert deliverer.run_once() == 0  # delivered, but the cursor did not move
            assert deliverer.run_once() == 2  # so it is sent again, then the next
        finally:
            deliverer.stop()
        bodies = [body for _, body, _ in hook_receiver.got]
        assert [json.loads(b)["seq"] for b in bodies] == [1, 1, 2]
        assert bodies[0] == bodies[1]  # the same event, the same id: the receiver dedupes


def test_a_bad_subscription_neither_stops_the_others_nor_keeps_what_it_answered(
    tmp_path: Path,
) -> None:
    clock = SimClock(T0)
    with Memory.open(tmp_path / "s.db", space="town", embedder=None, clock=clock) as mem, \
            receiver(plan=[500]) as hook_receiver:  # fmt: skip
        store = mem._h.store
        broken = new_webhook("town", "http://[::1/x", None, after=0)  # stored before checks
        store.insert_webhook(broken)
        clock.advance(seconds=1)
        store.insert_webhook(new_webhook("town", hook_receiver.url, None, after=0))
        mem.remember("one", embedding=unit(1, 0, 0, 0))
        deliverer = Deliverer(store, clock=clock)
        try:
            deliverer.run_once()  # the broken one fails, the receiver answers 500
            clock.advance(seconds=1)
            assert deliverer.run_once() == 1  # the receiver's retry is delivered
        finally:
            deliverer.stop()
        failures = store.webhook_failures(broken.id)  # recorded, retried on its own backoff
        assert [(f.attempt, f.status) for f in failures] == [(1, None), (2, None)]
        assert failures[0].error.startswith("InvalidURL")
        hooks = {h.url: h for h in store.webhooks()}
        assert hooks[hook_receiver.url].delivered == 1
        answered = store.webhook_failures(hooks[hook_receiver.url].id)
        assert [(f.status, f.error) for f in answered] == [(500, "HTTP 500")]  # not its body


def test_a_purge_before_delivery_leaves_no_text_in_it(tmp_path: Path) -> None:
    clock = SimClock(T0)
    with Memory.open(tmp_path / "s.db", space="town", embedder=None, clock=clock) as mem, \
            receiver(plan=[500]) as hook_receiver:  # fmt: skip
        store = mem._h.store
        hook = new_webhook("town", hook_receiver.url, None, after=0)
        store.insert_webhook(hook)
        secret_id = mem.remember("the vault code is 4711", embedding=unit(1, 0, 0, 0)).id
        deliverer = Deliverer(store, clock=clock)
        try:
            deliverer.run_once()  # fails: the write is still to deliver
            assert b"4711" in hook_receiver.got[0][1]
            mem.forget(secret_id, reason="leaked", purge=True)
            clock.advance(seconds=5)
            assert deliverer.run_once() == 2  # the write (now without text) and the purge
        finally:
            deliverer.stop()
        retried = [body for _, body, status in hook_receiver.got if status == 200]
        assert all(b"4711" not in body for body in retried)
        assert [json.loads(b)["kind"] for b in retried] == ["write", "purge"]
        assert json.loads(retried[0])["text"] is None


def test_replicas_do_not_deliver_one_subscription_at_once(tmp_path: Path) -> None:
    clock = SimClock(T0)
    with Memory.open(tmp_path / "s.db", space="town", embedder=None, clock=clock) as mem, \
            receiver() as hook_receiver:  # fmt: skip
        store = mem._h.store
        hook = new_webhook("town", hook_receiver.url, None, after=0)
        store.insert_webhook(hook)
        mem.remember("one", embedding=unit(1, 0, 0, 0))
        other = open_store(tmp_path / "s.db")
        first, second = Deliverer(store, clock=clock), Deliverer(other, clock=clock, lease=30)
        try:
            assert first.run_once() == 1  # holds the lease for 30 s
            mem.remember("two", embedding=unit(1, 0, 0, 0))
            assert second.run_once() == 0  # another replica holds it
            clock.advance(seconds=31)
            assert second.run_once() == 1  # the lease ran out: this one takes over
        finally:
            first.stop()
            second.stop()
            other.close()
        assert [e["seq"] for e in hook_receiver.answered()] == [1, 2]


def test_a_stopped_deliverer_hands_its_lease_back(tmp_path: Path) -> None:
    """What lets a restarted or another replica's loop deliver at once after a graceful stop
    (after a crash the lease has to run out: the restart test below)."""
    clock = SimClock(T0)
    with Memory.open(tmp_path / "s.db", space="town", embedder=None, clock=clock) as mem, \
            receiver() as hook_receiver:  # fmt: skip
        store = mem._h.store
        store.insert_webhook(new_webhook("town", hook_receiver.url, None, after=0))
        mem.remember("one", embedding=unit(1, 0, 0, 0))
        first, second = Deliverer(store, clock=clock), Deliverer(store, clock=clock)
        try:
            assert first.run_once() == 1
            mem.remember("two", embedding=unit(1, 0, 0, 0))
            assert second.run_once() == 0  # the first holds the lease
            first.stop()
            assert second.run_once() == 1  # handed back: no wait for it to run out
        finally:
            first.stop()
            second.stop()
        assert [e["seq"] for e in hook_receiver.answered()] == [1, 2]


def test_webhook_subscriptions_over_http(tmp_path: Path) -> None:
    from .service import running

    with running(tmp_path / "s.db", embedder=None) as (url, _), receiver() as hook_receiver:
        base = f"{url}/v1/spaces/town"
        made = httpx.post(f"{base}/webhooks", json={"url": hook_receiver.url, "after": 0})
        assert made.status_code == 201
        hook = made.json()
        assert hook["secret"].startswith("whsec_")
        assert hook["delivered"] == 0
        listed = httpx.get(f"{base}/webhooks").json()
        assert [h["id"] for h in listed] == [hook["id"]]
        assert listed[0]["secret"] is None
        assert httpx.post(f"{base}/webhooks", json={"url": "ftp://x"}).status_code == 422
        short = {"url": hook_receiver.url, "secret": "short"}
        assert httpx.post(f"{base}/webhooks", json=short).status_code == 422
        bad = httpx.post(f"{base}/webhooks", json={"url": "http://[::1/x"})
        assert (bad.status_code, bad.json()["field"]) == (422, "url")
        ahead = httpx.post(f"{base}/webhooks", json={"url": hook_receiver.url, "after": 5})
        assert (ahead.status_code, ahead.json()["field"]) == (422, "after")
        httpx.post(f"{base}/records", json={"text": "hello", "embedding": V}).raise_for_status()
        within(20, hook_receiver.answered)  # the service's delivery loop polls every 0.5 s
        [event] = hook_receiver.answered()
        assert event["text"] == "hello"
        assert httpx.get(f"{base}/webhooks/{hook['id']}/failures").json() == []
        assert httpx.get(f"{base}/webhooks/nope").status_code == 404
        assert httpx.delete(f"{base}/webhooks/{hook['id']}").status_code == 204
        assert httpx.get(f"{base}/webhooks").json() == []
        assert httpx.delete(f"{base}/webhooks/{hook['id']}").status_code == 404


def test_a_receiver_sees_every_change_across_a_service_restart(tmp_path: Path) -> None:
    """The acceptance check: a real ``chronomem serve`` is killed (SIGKILL: nothing shut down)
    while it delivers and started again; deduplicated by event id, the receiver has every
    change of the feed exactly once, each redelivery identical to its first delivery. The
    killed process's lease (2 s here) runs out and the restarted one takes over."""
    db = tmp_path / "served.db"
    lease = ("--webhook-lease", "2")
    with receiver(delay=0.03) as hook_receiver:
        with serving_process(db, "--no-embedder", *lease, stop=signal.SIGKILL) as url:
            base = f"{url}/v1/spaces/town"
            made = httpx.post(f"{base}/webhooks", json={"url": hook_receiver.url, "after": 0})
            secret = made.json()["secret"]
            items = [{"text": f"before restart {i}", "embedding": V} for i in range(40)]
            httpx.post(f"{base}/records/batch", json={"items": items}).raise_for_status()
            within(20, lambda: len(hook_receiver.answered()) >= 5)
        assert len(hook_receiver.answered()) < 40, "the stop came after every delivery"
        with serving_process(db, "--no-embedder", *lease) as url:
            base = f"{url}/v1/spaces/town"
            items = [{"text": f"after restart {i}", "embedding": V} for i in range(10)]
            httpx.post(f"{base}/records/batch", json={"items": items}).raise_for_status()
            feed = httpx.get(f"{base}/changes", params={"limit": 1000}).json()
            start = time.monotonic()
            while time.monotonic() < start + 60:
                if {e["id"] for e in hook_receiver.answered()} >= {e["id"] for e in feed}:
                    break
                time.sleep(0.1)
            assert time.monotonic() - start < 25
    assert len(feed) == 50
    by_id: dict[str, dict[str, Any]] = {}
    for event in hook_receiver.answered():
        assert by_id.setdefault(event["id"], event) == event  # a redelivery is the same event
    assert set(by_id) == {e["id"] for e in feed}
    assert sorted(e["seq"] for e in by_id.values()) == list(range(1, 51))
    for headers, body, _ in hook_receiver.got:
        assert verify(secret, body, headers[SIGNATURE_HEADER])
