"""Value types of chronomem: records, write results, hits and their breakdowns."""

from chronomem.model.audit import AuditEntry, ForgetResult, ScrubResult
from chronomem.model.event import Ancestor, Event, EventKind, Link, Provenance
from chronomem.model.ids import IdFactory, id_instant
from chronomem.model.record import (
    EMBEDDING_KEY,
    Breakdown,
    CausalPart,
    EvidenceStatus,
    Hit,
    Kind,
    Record,
    Sensitivity,
    Status,
    Weights,
    WriteResult,
)

__all__ = [
    "EMBEDDING_KEY",
    "Ancestor",
    "AuditEntry",
    "Breakdown",
    "CausalPart",
    "Event",
    "EventKind",
    "EvidenceStatus",
    "ForgetResult",
    "Hit",
    "IdFactory",
    "Kind",
    "Link",
    "Provenance",
    "Record",
    "ScrubResult",
    "Sensitivity",
    "Status",
    "Weights",
    "WriteResult",
    "id_instant",
]
