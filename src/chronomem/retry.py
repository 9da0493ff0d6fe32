"""Retrying a call to a remote endpoint: which HTTP answers are worth another attempt and how long
to wait before it. Shared by the OpenAI-compatible LLM client and embedder.

Pure control flow: the attempt is a callable the backend supplies (it does the I/O and translates
its own errors), and waiting is the ``sleep`` it passes in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from chronomem.errors import ChronomemError, ConfigError

__all__ = ["RETRY_STATUSES", "Retry", "RetryPolicy"]

T = TypeVar("T")

# Rate limits, timeouts, conflicts of a busy server and server errors: another try may succeed.
RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class Retry(Exception):
    """Raised by an attempt that may succeed if made again. ``error`` is raised when the attempts
    run out; ``retry_after`` is the server's ``Retry-After`` header, if any."""

    def __init__(self, error: ChronomemError, retry_after: str | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """``max_retries`` extra attempts; before the n-th, wait ``backoff * 2 ** (n - 1)`` seconds,
    or the server's ``Retry-After`` in seconds when it sent one, never more than ``max_wait``
    (a ``Retry-After`` date falls back to backoff: reading it would need the wall clock)."""

    max_retries: int = 3
    backoff: float = 0.5
    max_wait: float = 30.0

    def __post_init__(self) -> None:
        if self.max_retries < 0 or self.backoff < 0 or self.max_wait < 0:
            raise ConfigError("max_retries, backoff and max_wait must be non-negative")

    def wait(self, attempt: int, retry_after: str | None) -> float:
        """Seconds to wait before attempt number ``attempt`` (1 = the first retry)."""
        if retry_after:
            try:
                return min(max(float(retry_after), 0.0), float(self.max_wait))
            except ValueError:
                pass
        return float(min(self.backoff * 2.0 ** (attempt - 1), self.max_wait))

    def run(self, attempt: Callable[[], T], sleep: Callable[[float], None]) -> T:
        """``attempt()`` until it returns, at most ``1 + max_retries`` times; an attempt that
        raises :class:`Retry` is made again, any other error propagates at once."""
        last: Retry | None = None
        for n in range(self.max_retries + 1):
            if last is not None:
                sleep(self.wait(n, last.retry_after))
            try:
                return attempt()
            except Retry as exc:
                last = exc
        assert last is not None
        raise last.error from None
