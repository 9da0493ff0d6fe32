"""The small integers the in-memory arrays hold for a record's kind, sensitivity and stored
status, and the hash they hold for its domain (``retrieval/index.py``)."""

from __future__ import annotations

from chronomem.model.record import Kind, Sensitivity, Status
from chronomem.text import dedup_key

__all__ = ["KINDS", "KIND_CODES", "SENSITIVITY_CODES", "STATUS_CODES", "domain_key"]

KINDS: tuple[Kind, ...] = tuple(Kind)
KIND_CODES: dict[Kind, int] = {kind: code for code, kind in enumerate(KINDS)}
SENSITIVITY_CODES: dict[str, int] = {s.value: code for code, s in enumerate(Sensitivity)}
STATUS_CODES: dict[str, int] = {s.value: code for code, s in enumerate(Status)}


def domain_key(domain: str | None) -> int:
    """The hash :meth:`AgentArrays.domain_keys` holds for ``domain`` (0 for none): domains
    compare as the write gate compares them, case and spacing aside."""
    return 0 if domain is None else dedup_key("\x00" + domain)
