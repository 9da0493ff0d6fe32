"""The service's operations as calls (``calls.py`` defines the memory verbs): moving a space's
data in and out, its simulated clock, the service's health."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from chronomem.checks import optional_instant, require_text
from chronomem.client.wire import Call, ClockReading, given, reader, segment, wire
from chronomem.errors import InvalidInputError
from chronomem.model.change import Webhook, WebhookFailure
from chronomem.model.transfer import ImportReport

__all__ = [
    "add_webhook",
    "advance_clock",
    "clock_reading",
    "export",
    "health",
    "import_",
    "remove_webhook",
    "set_clock",
    "webhook",
    "webhook_failures",
    "webhooks",
]


# -- moving data in and out (admin) ---------------------------------------------------------------
def export(path: str | os.PathLike[str]) -> Call[int]:
    """:meth:`chronomem.Memory.export`: the archive is written to ``path`` on this machine."""
    target = Path(path)

    def save(content: bytes) -> int:
        tmp = target.with_name(f".{target.name}.download")
        tmp.write_bytes(content)
        os.replace(tmp, target)
        return sum(
            1 for line in content.splitlines()[1:] if json.loads(line).get("type") == "record"
        )

    return Call("GET", "/export", save)


def import_(path: str | os.PathLike[str]) -> Call[ImportReport]:
    """:meth:`chronomem.Memory.import_`: the archive at ``path`` on this machine is uploaded."""
    source = Path(path)
    if not source.is_file():
        raise InvalidInputError(f"archive not found: {source}", field="path")
    return Call("POST", "/import", reader(ImportReport), content=source.read_bytes())


# -- the space's clock --------------------------------------------------------------------------
def clock_reading() -> Call[ClockReading]:
    """The space's clock: its now and whether it is simulated."""
    return Call("GET", "/clock", reader(ClockReading))


def set_clock(now: datetime | None) -> Call[ClockReading]:
    """Set the space's simulated now (``None``: follow the wall clock again); admin."""
    return Call("PUT", "/clock", reader(ClockReading), {"now": wire(optional_instant(now, "now"))})


def advance_clock(by: timedelta) -> Call[ClockReading]:
    """Move the space's simulated clock forward by ``by``; admin."""
    return Call("POST", "/clock/advance", reader(ClockReading), {"by": wire(by)})


# -- webhook subscriptions to the change feed (admin) -------------------------------------------
def add_webhook(url: str, *, secret: str | None = None, after: int | None = None) -> Call[Webhook]:
    """Subscribe ``url`` to the space's changes after ``after`` (``None``: from now on); the
    answer carries the signing secret (a new random one unless given), the only time it is
    shown."""
    body = given(url=require_text(url, "url"), secret=secret, after=after)
    return Call("POST", "/webhooks", reader(Webhook), body)


def webhooks() -> Call[list[Webhook]]:
    """The space's subscriptions: cursor (``delivered``), failures in a row, last error."""
    return Call("GET", "/webhooks", reader(list[Webhook]))


def webhook(webhook_id: str) -> Call[Webhook]:
    """One subscription; :class:`~chronomem.NotFoundError` if the space has none by that id."""
    return Call("GET", f"/webhooks/{segment(webhook_id, 'webhook_id')}", reader(Webhook))


def webhook_failures(webhook_id: str) -> Call[list[WebhookFailure]]:
    """A subscription's failed delivery attempts (the newest 100), oldest first."""
    path = f"/webhooks/{segment(webhook_id, 'webhook_id')}/failures"
    return Call("GET", path, reader(list[WebhookFailure]))


def remove_webhook(webhook_id: str) -> Call[None]:
    """End a subscription (its failures go with it)."""
    path = f"/webhooks/{segment(webhook_id, 'webhook_id')}"
    return Call("DELETE", path, lambda _: None)


def health() -> Call[dict[str, Any]]:
    """The service's health (no key needed)."""
    return Call("GET", "/v1/health", reader(dict[str, Any]))
