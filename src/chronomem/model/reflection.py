"""What a reflection stored (DESIGN §5)."""

from __future__ import annotations

from dataclasses import dataclass

from chronomem.model.record import Record

__all__ = ["ReflectionResult"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReflectionResult:
    """What a reflection stored: the new ``reflection`` records (each citing its evidence), the
    focal questions, and how many model calls it took (retries included)."""

    agent: str
    records: tuple[Record, ...]
    questions: tuple[str, ...]
    calls: int
