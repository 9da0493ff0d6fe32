"""Webhook subscriptions to a space's change feed (docs/design/change-feed.md): their cursors,
the lease that keeps replicas from delivering one subscription at once, and failed attempts."""

from __future__ import annotations

from typing import Any

from chronomem.model.change import Change, Webhook, WebhookFailure
from chronomem.stores.sql import changes as feed
from chronomem.stores.sql.backend import SQLBackend, instant_param, read_instant

__all__ = [
    "FeedStore",
    "delete_webhook",
    "get_webhook",
    "insert_webhook",
    "lease_webhook",
    "webhook_delivered",
    "webhook_failed",
    "webhook_failures",
    "webhooks",
]

#: Failed attempts kept per subscription (the oldest go first).
KEPT_FAILURES = 100
_COLUMNS = "id, space, url, created_at, delivered, failures, last_error, next_attempt_at, secret"


def _webhook(db: SQLBackend, row: Any, *, secret: bool) -> Webhook:
    return Webhook(
        id=row[0], space=row[1], url=row[2], created_at=read_instant(db, row[3]),  # type: ignore[arg-type]
        delivered=int(row[4]), failures=int(row[5]), last_error=row[6],
        next_attempt_at=read_instant(db, row[7]), secret=row[8] if secret else None,
    )  # fmt: skip


def insert_webhook(db: SQLBackend, hook: Webhook) -> None:
    if hook.secret is None:
        raise ValueError("a webhook is stored with its secret")
    with db.write():
        db._execute(
            f"INSERT INTO webhooks ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                hook.id, hook.space, hook.url, instant_param(db, hook.created_at),
                hook.delivered, hook.failures, hook.last_error,
                instant_param(db, hook.next_attempt_at), hook.secret,
            ),
        )  # fmt: skip


def webhooks(db: SQLBackend, space: str | None = None) -> list[Webhook]:
    """The subscriptions of ``space`` (``None``: of every space), oldest first, no secrets."""
    sql = f"SELECT {_COLUMNS} FROM webhooks"
    rows = db._query(sql + " WHERE space = ? ORDER BY created_at, id", (space,)) if space \
        else db._query(sql + " ORDER BY created_at, id")  # fmt: skip
    return [_webhook(db, r, secret=False) for r in rows]


def get_webhook(db: SQLBackend, webhook_id: str, *, secret: bool = False) -> Webhook | None:
    rows = db._query(f"SELECT {_COLUMNS} FROM webhooks WHERE id = ?", (webhook_id,))
    return _webhook(db, rows[0], secret=secret) if rows else None


def delete_webhook(db: SQLBackend, space: str, webhook_id: str) -> bool:
    with db.write():
        cur = db._execute("DELETE FROM webhooks WHERE id = ? AND space = ?", (webhook_id, space))
        if cur.rowcount:
            db._execute("DELETE FROM webhook_failures WHERE webhook_id = ?", (webhook_id,))
    return cur.rowcount > 0


def lease_webhook(db: SQLBackend, webhook_id: str, owner: str, now_us: int, until_us: int) -> bool:
    """Take (or renew) the right to deliver this subscription until ``until_us``: granted when
    nobody holds it, ``owner`` does, or the holder's lease ran out."""
    with db.write():
        cur = db._execute(
            "UPDATE webhooks SET lease_owner = ?, lease_until = ? WHERE id = ?"
            " AND (lease_owner IS NULL OR lease_owner = ? OR lease_until < ?)",
            (owner, db._bind(until_us), webhook_id, owner, db._bind(now_us)),
        )
    return cur.rowcount == 1


def webhook_delivered(db: SQLBackend, webhook_id: str, seq: int) -> None:
    """A 2xx acknowledged the change ``seq``: the cursor moves past it, failures reset."""
    with db.write():
        db._execute(
            "UPDATE webhooks SET delivered = ?, failures = 0, last_error = NULL,"
            " next_attempt_at = NULL WHERE id = ? AND delivered < ?",
            (seq, webhook_id, seq),
        )


def webhook_failed(db: SQLBackend, failure: WebhookFailure, next_attempt_us: int) -> None:
    """Record a failed attempt and when the next is due; keep the newest failures only."""
    with db.write():
        db._execute(
            "INSERT INTO webhook_failures (webhook_id, at, seq, event_id, attempt, status,"
            " error) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                failure.webhook_id, instant_param(db, failure.at), failure.seq,
                failure.event_id, failure.attempt, failure.status, failure.error,
            ),
        )  # fmt: skip
        db._execute(
            "UPDATE webhooks SET failures = failures + 1, last_error = ?, next_attempt_at = ?"
            " WHERE id = ?",
            (failure.error, db._bind(next_attempt_us), failure.webhook_id),
        )
        db._execute(
            "DELETE FROM webhook_failures WHERE webhook_id = ? AND pk NOT IN (SELECT pk FROM"
            " webhook_failures WHERE webhook_id = ? ORDER BY pk DESC LIMIT ?)",
            (failure.webhook_id, failure.webhook_id, KEPT_FAILURES),
        )


def webhook_failures(db: SQLBackend, webhook_id: str) -> list[WebhookFailure]:
    """The subscription's kept failed attempts, oldest first."""
    rows = db._query(
        "SELECT webhook_id, at, seq, event_id, attempt, status, error FROM webhook_failures"
        " WHERE webhook_id = ? ORDER BY pk",
        (webhook_id,),
    )
    return [
        WebhookFailure(
            webhook_id=r[0], at=read_instant(db, r[1]), seq=int(r[2]), event_id=r[3],  # type: ignore[arg-type]
            attempt=int(r[4]), status=None if r[5] is None else int(r[5]), error=r[6],
        )
        for r in rows
    ]  # fmt: skip


class FeedStore:
    """The :class:`~chronomem.stores.base.MemoryStore` methods of the change feed and its
    webhook subscriptions (``sql/changes.py`` and the functions above, as methods)."""

    def changes(self: SQLBackend, space: str, after: int, limit: int) -> list[Change]:
        return feed.changes(self, space, after, limit)

    def feed_head(self: SQLBackend, space: str) -> int:
        return feed.feed_head(self, space)

    def insert_webhook(self: SQLBackend, hook: Webhook) -> None:
        insert_webhook(self, hook)

    def webhooks(self: SQLBackend, space: str | None = None) -> list[Webhook]:
        return webhooks(self, space)

    def get_webhook(self: SQLBackend, webhook_id: str, *, secret: bool = False) -> Webhook | None:
        return get_webhook(self, webhook_id, secret=secret)

    def delete_webhook(self: SQLBackend, space: str, webhook_id: str) -> bool:
        return delete_webhook(self, space, webhook_id)

    def lease_webhook(
        self: SQLBackend, webhook_id: str, owner: str, now_us: int, until_us: int
    ) -> bool:
        return lease_webhook(self, webhook_id, owner, now_us, until_us)

    def webhook_delivered(self: SQLBackend, webhook_id: str, seq: int) -> None:
        webhook_delivered(self, webhook_id, seq)

    def webhook_failed(self: SQLBackend, failure: WebhookFailure, next_attempt_us: int) -> None:
        webhook_failed(self, failure, next_attempt_us)

    def webhook_failures(self: SQLBackend, webhook_id: str) -> list[WebhookFailure]:
        return webhook_failures(self, webhook_id)
