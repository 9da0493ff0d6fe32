"""What a model switch (``Memory.reembed``, docs/design/reembed.md) and a store pass each other:
the records and events still to embed with the new model, their new vectors, and how far the
switch has come. Values only, beside the storage contract (``stores/base.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from chronomem.arrays import F32

__all__ = ["Pending", "PendingVector", "ReembedState"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Pending:
    """A record (``kind`` ``"r"``) or event (``"e"``) a model switch has still to embed: its
    store key, text and speaker, and whether the record had passage vectors."""

    kind: str
    pk: int
    text: str
    speaker: str | None
    passages: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingVector:
    """The new model's vector (and passages) of one :class:`Pending`."""

    kind: str
    pk: int
    embedding: F32
    passages: F32 | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReembedState:
    """A model switch in progress: its target, when it started, and how many of the store's
    records and events (``total``) already have the target's vector (``done``)."""

    model: str
    dim: int
    started: str
    done: int
    total: int
