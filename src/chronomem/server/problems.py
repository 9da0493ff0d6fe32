"""Errors over HTTP (DESIGN §7): every error is an ``application/problem+json`` document (RFC
9457) carrying the error class, the field and the message; one table maps chronomem's error tree to
statuses. The Python client turns a document back into the same exception class."""

from __future__ import annotations

from typing import Any

from chronomem import errors
from chronomem.errors import ChronomemError

__all__ = ["MEDIA_TYPE", "STATUS", "from_error", "from_http", "problem", "status_of"]

MEDIA_TYPE = "application/problem+json"

# Most specific first: the first class an error is an instance of decides its status.
STATUS: tuple[tuple[type[ChronomemError], int], ...] = (
    (errors.DependentsExistError, 409),
    (errors.EmbedderMismatchError, 409),
    (errors.ConflictError, 409),
    (errors.NotFoundError, 404),
    (errors.InvalidInputError, 422),
    (errors.ConfigError, 400),
    (errors.LLMError, 502),
    (errors.EmbedderError, 503),
    (errors.StoreError, 503),
    (ChronomemError, 500),
)

# Structured context an error carries (``err.field``, ``err.record_id``, ...), sent as members.
_CONTEXT = (
    "field", "record_id", "event_id", "dependants", "expected_model", "expected_dim",
    "got_model", "got_dim", "reasons", "status",
)  # fmt: skip


def status_of(exc: ChronomemError) -> int:
    return next(code for cls, code in STATUS if isinstance(exc, cls))


def problem(
    status: int, error: str, detail: str, *, field: str | None = None, **members: Any
) -> dict[str, Any]:
    """A problem document: ``type``, ``title``, ``status``, ``detail``, plus ``error`` (the
    chronomem error class, or an HTTP-level name such as ``Unauthorized``) and ``field``."""
    return {
        "type": f"urn:chronomem:problem:{error}",
        "title": error,
        "status": status,
        "detail": detail,
        "error": error,
        "field": field,
        **members,
    }


def from_error(exc: ChronomemError) -> dict[str, Any]:
    members = {
        name: list(value) if isinstance(value, tuple) else value
        for name in _CONTEXT
        if (value := getattr(exc, name, None)) is not None and name != "status"
    }
    field = getattr(exc, "field", None)
    members.pop("field", None)
    if isinstance(exc, errors.LLMHTTPError):
        members["upstream_status"] = exc.status
    return problem(status_of(exc), type(exc).__name__, str(exc), field=field, **members)


_HTTP_NAMES = {404: "NotFound", 405: "MethodNotAllowed", 413: "PayloadTooLarge"}


def from_http(status: int, detail: str) -> dict[str, Any]:
    """The document for an HTTP-level refusal (no such route, method, a body too large)."""
    return problem(status, _HTTP_NAMES.get(status, "HTTPError"), detail)
