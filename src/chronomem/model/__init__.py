"""Value types of chronomem: records, write results, hits and their breakdowns."""

from chronomem.model.audit import AuditEntry, ForgetResult
from chronomem.model.ids import IdFactory, id_instant
from chronomem.model.record import (
    Breakdown,
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
    "AuditEntry",
    "Breakdown",
    "EvidenceStatus",
    "ForgetResult",
    "Hit",
    "IdFactory",
    "Kind",
    "Record",
    "Sensitivity",
    "Status",
    "Weights",
    "WriteResult",
    "id_instant",
]
