"""Observability (docs/observability.md): OpenTelemetry spans for every verb of
:class:`~chronomem.Memory` and each stage of a read, once :func:`instrument` is called (off
until then: a stage costs one global check), and the id of the request a call serves, which
the audit log records (:func:`request_id` names the requests a client sends)."""

from __future__ import annotations

from chronomem.telemetry.requests import REQUEST_ID, current_request_id, request_id
from chronomem.telemetry.tracing import instrument, instrumented, stage, uninstrument

__all__ = [
    "REQUEST_ID",
    "current_request_id",
    "instrument",
    "instrumented",
    "request_id",
    "stage",
    "uninstrument",
]
