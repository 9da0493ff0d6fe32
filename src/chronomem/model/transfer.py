"""What an archive import did (DESIGN §6)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ImportReport"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportReport:
    """What an import did. ``problems`` lists what could not be carried over exactly (empty when
    the import was exact); each names the line and the record id when known."""

    path: str
    records: int
    audit_entries: int = 0
    events: int = 0
    links: int = 0
    problems: tuple[str, ...] = field(default=())
