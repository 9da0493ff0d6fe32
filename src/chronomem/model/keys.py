"""API keys of the HTTP service (DESIGN §7): who may call which verbs on which space."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

__all__ = ["ApiKey", "Scope"]


class Scope(StrEnum):
    """What a key may do; each scope includes the ones before it.

    ``read``: peek and every read that does not touch. ``write``: also remember, touching
    recalls and the lifecycle verbs. ``admin``: also keys, purge, export, import and the space's
    simulated clock."""

    READ = "read"
    WRITE = "write"
    ADMIN = "admin"

    def allows(self, needed: Scope) -> bool:
        order = (Scope.READ, Scope.WRITE, Scope.ADMIN)
        return order.index(self) >= order.index(needed)


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiKey:
    """A key as stored: its public id, the space it is bound to (``None``: every space, for
    admin keys only), its scope and label, and when it was created and revoked. The secret
    itself is never stored, only its SHA-256 digest (``digest``)."""

    id: str
    space: str | None
    scope: Scope
    label: str | None
    created_at: datetime
    revoked_at: datetime | None = None
    digest: bytes = b""

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    def to_dict(self) -> dict[str, object]:
        """Everything but the digest, JSON-ready."""
        return {
            "id": self.id,
            "space": self.space,
            "scope": self.scope.value,
            "label": self.label,
            "created_at": self.created_at.isoformat(),
            "revoked_at": None if self.revoked_at is None else self.revoked_at.isoformat(),
        }
