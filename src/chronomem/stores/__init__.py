"""Storage backends: :class:`SQLiteStore` (embedded, the default) and ``PostgresStore``
(``chronomem.stores.postgres``, with the ``postgres`` extra)."""

from __future__ import annotations

import os
from pathlib import Path

from chronomem.errors import ConfigError
from chronomem.stores.base import EmbeddingMeta, MemoryStore, RecordColumns, StoredRecord
from chronomem.stores.sqlite import SQLiteStore

__all__ = [
    "EmbeddingMeta",
    "MemoryStore",
    "RecordColumns",
    "SQLiteStore",
    "StoredRecord",
    "open_store",
]


def open_store(
    location: str | os.PathLike[str] | MemoryStore, *, synchronous: str = "FULL"
) -> MemoryStore:
    """The store a location names: ``postgresql://...`` (or ``postgres://``) opens a
    PostgreSQL database, ``sqlite:///path`` or a plain path a SQLite file; a store object is
    returned as is. ``synchronous`` applies to SQLite."""
    if not isinstance(location, str | os.PathLike):
        return location
    text = os.fspath(location)
    if text.startswith(("postgresql://", "postgres://")):
        from chronomem.stores.postgres import PostgresStore

        return PostgresStore(text)
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///") :]
    elif text.startswith("sqlite://"):
        raise ConfigError(f"use sqlite:///path/to/file (three slashes); got {text!r}")
    if not text:
        raise ConfigError("a store path is required")
    return SQLiteStore(Path(text), synchronous=synchronous)
