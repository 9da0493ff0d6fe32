"""Core memory blocks (the MemGPT pattern, DESIGN §3): named, size-limited text an agent always
has in its context — ``persona``, ``human``, ``task`` — edited only by supersession, so every
version stays readable as of its time and every edit is audited."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

__all__ = ["DEFAULT_CORE_LIMIT", "CoreBlock"]

#: Characters a block may hold unless a call says otherwise (MemGPT's default block size).
DEFAULT_CORE_LIMIT = 2000


@dataclass(frozen=True, slots=True, kw_only=True)
class CoreBlock:
    """One block as it stood at an instant: its ``label``, current ``text``, the record that holds
    this version (``record_id``; the versions form a supersession chain, see ``history``), and when
    this version was written."""

    agent: str
    label: str
    text: str
    record_id: str
    updated_at: datetime

    def to_dict(self) -> dict[str, str]:
        return {
            "agent": self.agent,
            "label": self.label,
            "text": self.text,
            "record_id": self.record_id,
            "updated_at": self.updated_at.isoformat(),
        }
