"""The id of the request a call serves: set by the service for each HTTP request (the client's
``X-Request-Id``, else a new one) and carried into the worker thread that runs the verb, where
the audit log records it (``detail.request_id``) and spans name it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["REQUEST_ID", "current_request_id", "request_id"]

REQUEST_ID: ContextVar[str | None] = ContextVar("chronomem_request_id", default=None)


def current_request_id() -> str | None:
    """The id of the request being served in this context, if any."""
    return REQUEST_ID.get()


@contextmanager
def request_id(value: str) -> Iterator[str]:
    """Name the requests made in this block: the service's clients send ``value`` as
    ``X-Request-Id`` (the service keeps 1–128 letters, digits, ``.``, ``_``, ``:``, ``-``)."""
    token = REQUEST_ID.set(value)
    try:
        yield value
    finally:
        REQUEST_ID.reset(token)
