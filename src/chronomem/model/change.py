"""Values of the change feed (docs/design/change-feed.md): one change to a space, and a webhook
subscription to its changes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

__all__ = [
    "CHANGE_KINDS",
    "MAX_CHANGES",
    "MAX_WAIT_S",
    "SERVICE_FEED",
    "Change",
    "ChangeRow",
    "Webhook",
    "WebhookFailure",
]

#: Every kind of change, in the order the design note lists them.
CHANGE_KINDS: Final = (
    "write", "supersede", "close", "verify", "feedback", "forget", "purge", "flag", "review",
    "key", "event", "link", "unlink",
)  # fmt: skip
#: The most changes one read of the feed returns.
MAX_CHANGES: Final = 1000
#: The longest a read of the feed may wait for a change (a long poll), in seconds.
MAX_WAIT_S: Final = 60.0
#: The feed of the service itself (keys bound to no space): a name no space can have.
SERVICE_FEED: Final = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangeRow:
    """A change as a store method appends it, before it has a sequence number."""

    kind: str
    record_id: str | None = None
    agent: str | None = None
    actor: str | None = None
    reason: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    """One change to a space, in the order its space's changes committed.

    ``seq`` counts from 1 per space, with no change ever appearing below one already read;
    ``id`` is unique across stores (what a webhook receiver deduplicates by); ``at`` is the
    wall-clock instant of the commit. ``text`` is a ``write``'s record text while that record
    is in the store and neither secret nor personal — never a purged record's."""

    id: str
    seq: int
    space: str
    at: datetime
    kind: str
    record_id: str | None = None
    agent: str | None = None
    actor: str | None = None
    reason: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)
    text: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "seq": self.seq, "space": self.space, "at": self.at.isoformat(),
            "kind": self.kind, "record_id": self.record_id, "agent": self.agent,
            "actor": self.actor, "reason": self.reason, "detail": dict(self.detail),
            "text": self.text,
        }  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class WebhookFailure:
    """One failed delivery attempt: the event, the answer's status (``None``: no answer) and
    what went wrong."""

    webhook_id: str
    at: datetime
    seq: int
    event_id: str
    attempt: int
    status: int | None
    error: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "webhook_id": self.webhook_id, "at": self.at.isoformat(), "seq": self.seq,
            "event_id": self.event_id, "attempt": self.attempt, "status": self.status,
            "error": self.error,
        }  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class Webhook:
    """A subscription to one space's changes: each is POSTed to ``url``, signed with the
    secret, in order; ``delivered`` is the last ``seq`` a 2xx acknowledged, ``failures`` the
    failed attempts in a row since (``next_attempt_at``: when the next is due)."""

    id: str
    space: str
    url: str
    created_at: datetime
    delivered: int
    failures: int = 0
    last_error: str | None = None
    next_attempt_at: datetime | None = None
    secret: str | None = None  # only in the answer that creates it

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id, "space": self.space, "url": self.url,
            "created_at": self.created_at.isoformat(), "delivered": self.delivered,
            "failures": self.failures, "last_error": self.last_error,
            "next_attempt_at": None if self.next_attempt_at is None
            else self.next_attempt_at.isoformat(),
        }  # fmt: skip
        if self.secret is not None:
            out["secret"] = self.secret
        return out
