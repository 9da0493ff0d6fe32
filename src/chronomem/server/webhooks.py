"""The service's webhook deliveries (docs/design/change-feed.md): one loop per ``serve`` process
POSTs each subscription's changes in order, signed, moving its cursor after each 2xx; a failed
attempt is recorded and retried with exponential backoff, never skipped. Subscriptions are
leased in the store, so replicas over one database do not deliver one at the same time."""

from __future__ import annotations

import logging
import secrets
import threading

import httpx
from pydantic import TypeAdapter

from chronomem.clock import Clock, SystemClock, from_micros, to_micros
from chronomem.errors import InvalidInputError
from chronomem.model.change import Change, Webhook, WebhookFailure
from chronomem.stores.base import MemoryStore
from chronomem.webhooks import EVENT_ID_HEADER, SIGNATURE_HEADER, sign

__all__ = ["Deliverer", "backoff", "check_url", "delivery_body", "new_webhook"]

_log = logging.getLogger(__name__)
#: Changes one pass sends to one subscription before moving to the next.
_BATCH = 50


def backoff(attempt: int, *, base: float = 1.0, cap: float = 300.0) -> float:
    """Seconds before retrying after the ``attempt``-th failure in a row: 1, 2, 4, … to 5 min."""
    return float(min(cap, base * 2 ** max(0, attempt - 1)))


_CHANGE = TypeAdapter(Change)


def delivery_body(change: Change) -> bytes:
    """A change as JSON, exactly as ``GET …/changes`` writes it: what a delivery POSTs and
    what a stream's ``data:`` line holds."""
    return _CHANGE.dump_json(change)


class Deliverer:
    """Delivers every subscription of ``store``: :meth:`run_once` is one pass, :meth:`start`
    runs passes every ``poll`` seconds on a daemon thread until :meth:`stop`.

    ``timeout``: seconds each phase of a POST may take (connecting, sending, the answer's
    status line and headers), at most a third of the lease; ``lease``: how long a pass may keep a
    subscription from other replicas (renewed before a POST once half of it has passed, so a
    POST always starts with at least half the lease ahead); ``base_delay``/``max_delay``:
    the backoff. ``clock``: the wall clock (settable for tests)."""

    def __init__(
        self,
        store: MemoryStore,
        *,
        poll: float = 0.5,
        timeout: float = 10.0,
        lease: float = 30.0,
        base_delay: float = 1.0,
        max_delay: float = 300.0,
        clock: Clock | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._store = store
        self.owner = "deliverer_" + secrets.token_hex(8)
        self._poll, self._lease = poll, lease
        self._base, self._cap = base_delay, max_delay
        self._clock = clock or SystemClock()
        phase = min(timeout, lease / 3)
        self._http = httpx.Client(timeout=phase, transport=transport, follow_redirects=False)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._held: dict[str, int] = {}  # subscription -> when this process's lease ends (µs)

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="webhooks", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """End the loop and hand the leases back, so another process (a restarted one, a
        replica) delivers at once instead of when the lease runs out — unless a POST is still
        running, whose subscription keeps its lease until it runs out."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            if self._thread.is_alive():
                _log.warning("webhook deliveries did not stop in 30 s; leases left to run out")
                return
            self._thread = None
        self._http.close()
        now = self._now_us()
        for hook_id in list(self._held):
            try:
                self._store.lease_webhook(hook_id, self.owner, now, 0)
            except Exception:  # the store is going away too: the lease runs out by itself
                _log.warning("webhook %s: lease not handed back", hook_id)
        self._held.clear()

    def _loop(self) -> None:
        while not self._stop.wait(self._poll):
            try:
                self.run_once()
            except Exception:  # a store or network fault must not end deliveries for good
                _log.exception("webhook pass failed; retrying at the next poll")

    def run_once(self) -> int:
        """One pass over every subscription that is due; the number of changes delivered. A
        fault with one subscription (its store rows, anything a POST raises) is logged and
        leaves the others to be delivered."""
        sent = 0
        for hook in self._store.webhooks():
            try:
                sent += self._deliver(hook)
            except Exception:
                _log.exception("webhook %s: pass failed; retrying at the next poll", hook.id)
        return sent

    def _now_us(self) -> int:
        return to_micros(self._clock.now())

    def _holds(self, hook: Webhook) -> bool:
        """Whether this process may deliver ``hook`` now, taking or renewing its lease when
        less than half of it is left."""
        now, span = self._now_us(), int(self._lease * 1_000_000)
        if self._held.get(hook.id, 0) - now > span // 2:
            return True
        if not self._store.lease_webhook(hook.id, self.owner, now, now + span):
            self._held.pop(hook.id, None)
            return False
        self._held[hook.id] = now + span
        return True

    def _deliver(self, hook: Webhook) -> int:
        if hook.next_attempt_at is not None and to_micros(hook.next_attempt_at) > self._now_us():
            return 0
        if self._stop.is_set() or not self._holds(hook):
            return 0
        # read again under the lease: another replica may have moved it since the listing
        keyed = self._store.get_webhook(hook.id, secret=True)
        if keyed is None or keyed.secret is None:  # removed meanwhile
            return 0
        sent = 0
        for change in self._store.changes(keyed.space, keyed.delivered, _BATCH):
            if self._stop.is_set() or not self._holds(keyed):
                break
            problem = self._post(keyed, change)
            if problem is not None:
                self._failed(keyed, change, *problem)
                break
            self._store.webhook_delivered(hook.id, change.seq)
            sent += 1
        return sent

    def _post(self, hook: Webhook, change: Change) -> tuple[int | None, str] | None:
        """``None`` when the receiver answered 2xx; otherwise its status and what went wrong."""
        body = delivery_body(change)
        headers = {
            "Content-Type": "application/json",
            EVENT_ID_HEADER: change.id,
            SIGNATURE_HEADER: sign(hook.secret or "", body, timestamp=self._now_us() // 1_000_000),
            "User-Agent": "chronomem-webhooks",
        }
        try:  # only the status is read: a receiver's answer is neither kept nor waited for
            with self._http.stream("POST", hook.url, content=body, headers=headers) as answer:
                status = answer.status_code
        except Exception as exc:  # no answer, or a URL the client cannot send to
            return None, f"{type(exc).__name__}: {exc}"[:500]
        if 200 <= status < 300:
            return None
        return status, f"HTTP {status}"

    def _failed(self, hook: Webhook, change: Change, status: int | None, error: str) -> None:
        attempt = hook.failures + 1
        now = self._now_us()
        failure = WebhookFailure(
            webhook_id=hook.id, at=from_micros(now), seq=change.seq, event_id=change.id,
            attempt=attempt, status=status, error=error,
        )  # fmt: skip
        delay = backoff(attempt, base=self._base, cap=self._cap)
        self._store.webhook_failed(failure, now + int(delay * 1_000_000))
        _log.warning(
            "webhook %s: change %d not delivered (attempt %d, next in %.0f s): %s",
            hook.id, change.seq, attempt, delay, error,
        )  # fmt: skip


def check_url(url: str) -> str:
    """``url`` if a delivery can be sent to it (http or https, a host); else InvalidInputError."""
    try:
        parsed = httpx.URL(url)
    except Exception as exc:  # httpx raises several kinds for a malformed URL
        raise InvalidInputError(f"not a URL a webhook can be sent to: {exc}", field="url") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise InvalidInputError("a webhook URL is http(s)://host/…", field="url")
    return url


def new_webhook(
    space: str, url: str, secret: str | None, *, after: int, clock: Clock | None = None
) -> Webhook:
    """A subscription starting after ``seq = after``, with ``secret`` or a new one."""
    return Webhook(
        id="wh_" + secrets.token_hex(10), space=space, url=url,
        created_at=(clock or SystemClock()).now(), delivered=after,
        secret=secret or "whsec_" + secrets.token_urlsafe(24),
    )  # fmt: skip
