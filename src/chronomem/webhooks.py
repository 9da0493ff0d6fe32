"""Signing and checking webhook deliveries (docs/design/change-feed.md), for the service that
sends them and for the receivers: no dependency beyond the standard library.

A delivery's ``Chronomem-Signature`` header is ``t=<unix seconds>,v1=<hex>``, the hex being
HMAC-SHA256 of ``"<t>.<body>"`` under the subscription's secret; the timestamp is inside the
signed bytes, so a captured delivery cannot be replayed later than ``tolerance`` seconds.

>>> header = sign("whsec_test", b'{"seq": 1}', timestamp=1_700_000_000)
>>> verify("whsec_test", b'{"seq": 1}', header, now=1_700_000_010)
True
>>> verify("whsec_test", b'{"seq": 2}', header, now=1_700_000_010)
False
"""

from __future__ import annotations

import hashlib
import hmac

from chronomem.clock import SystemClock

__all__ = ["EVENT_ID_HEADER", "SIGNATURE_HEADER", "sign", "verify"]

SIGNATURE_HEADER = "Chronomem-Signature"
EVENT_ID_HEADER = "Chronomem-Event-Id"


def _digest(secret: str, body: bytes, timestamp: int) -> str:
    signed = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def sign(secret: str, body: bytes, *, timestamp: int | None = None) -> str:
    """The ``Chronomem-Signature`` header value for ``body`` sent at ``timestamp`` (now)."""
    at = int(SystemClock().now().timestamp()) if timestamp is None else timestamp
    return f"t={at},v1={_digest(secret, body, at)}"


def verify(
    secret: str, body: bytes, header: str, *, tolerance: float = 300.0, now: float | None = None
) -> bool:
    """Whether ``header`` signs exactly ``body`` under ``secret`` and was made within
    ``tolerance`` seconds of ``now``. Compares in constant time."""
    fields = dict(part.partition("=")[::2] for part in header.split(","))
    try:
        at = int(fields["t"])
    except (KeyError, ValueError):
        return False
    current = SystemClock().now().timestamp() if now is None else now
    if abs(current - at) > tolerance:
        return False
    given = fields.get("v1", "").encode("ascii", "replace")  # compare_digest takes ASCII str only
    return hmac.compare_digest(given, _digest(secret, body, at).encode())
