"""Retrying a call to a remote endpoint: which HTTP answers are worth another attempt, how long
to wait before it, and one JSON POST that says which of its failures are. Shared by the
OpenAI-compatible LLM client and embedder.

The policy is pure control flow: the attempt is a callable the backend supplies, and waiting is
the ``sleep`` it passes in. :func:`post_once` is the attempt both backends make, raising each
backend's own error types (:class:`Failures`).
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from chronomem.errors import ChronomemError, ConfigError

__all__ = ["RETRY_STATUSES", "Failures", "Retry", "RetryPolicy", "post_once"]

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


@dataclass(frozen=True, slots=True, kw_only=True)
class Failures:
    """A backend's error types for :func:`post_once`: ``error`` for a connection that failed,
    ``http(message, status=, body=)`` for an error status, ``timeout`` for no answer in time.
    ``retry_unreachable``: a refused or dropped connection is worth another attempt (a local
    server may be restarting)."""

    error: type[ChronomemError]
    http: Callable[..., ChronomemError]
    timeout: type[ChronomemError]
    retry_unreachable: bool


def post_once(
    url: str, data: bytes, *, api_key: str | None, timeout: float, failures: Failures
) -> bytes:
    """POST ``data`` (JSON) to ``url`` once and return the answer's body. Raises :class:`Retry`
    for what is worth another attempt (429/5xx with its ``Retry-After``, timeouts, a connection
    the server dropped after taking the request, and — with ``failures.retry_unreachable`` —
    refused connections), and the backend's own errors for the rest."""
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")

    def unreachable(error: ChronomemError) -> Exception:
        return Retry(error) if failures.retry_unreachable else error

    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw: bytes = response.read()
            return raw
    except urllib.error.HTTPError as exc:
        body = exc.read().decode("utf-8", "replace")[:500]
        error = failures.http(f"{url} answered HTTP {exc.code}: {body[:200]}", status=exc.code,
                              body=body)  # fmt: skip
        if exc.code in RETRY_STATUSES:
            raise Retry(error, exc.headers.get("Retry-After")) from None
        raise error from None
    except TimeoutError:
        raise Retry(failures.timeout(f"{url} did not answer within {timeout}s")) from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise Retry(failures.timeout(f"{url} did not answer within {timeout}s")) from None
        raise unreachable(failures.error(f"cannot reach {url}: {exc.reason}")) from None
    except OSError as exc:  # the server took the request and dropped the connection: transient
        raise Retry(failures.error(f"the connection to {url} failed: {exc}")) from None
