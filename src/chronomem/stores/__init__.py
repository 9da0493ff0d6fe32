"""Storage backends: :class:`SQLiteStore` (embedded, the default) and ``PostgresStore``
(``chronomem.stores.postgres``, with the ``postgres`` extra)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from chronomem.errors import ConfigError
from chronomem.stores.base import EmbeddingMeta, MemoryStore, RecordColumns, StoredRecord
from chronomem.stores.sqlite import SQLiteStore

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")

__all__ = [
    "EmbeddingMeta",
    "MemoryStore",
    "RecordColumns",
    "SQLiteStore",
    "StoredRecord",
    "open_store",
]


def open_store(
    location: str | os.PathLike[str] | MemoryStore,
    *,
    synchronous: str = "FULL",
    create: bool = True,
) -> MemoryStore:
    """The store a location names: ``postgresql://...`` (or ``postgres://``) opens a
    PostgreSQL database, ``sqlite:///path`` or a plain path a SQLite file; a store object is
    returned as is. ``synchronous`` applies to SQLite. With ``create=False`` a location that
    holds no chronomem store is refused instead of created (``StoreError``: "no chronomem
    store at ..."). Any other URL scheme is a :class:`ConfigError`."""
    if not isinstance(location, str | os.PathLike):
        if not all(hasattr(location, m) for m in ("insert_records", "snapshot", "write")):
            raise ConfigError(
                f"a store location must be a path, a URL or a store; got {location!r}"
            )
        return location
    text = os.fspath(location)
    if not isinstance(text, str):
        raise ConfigError(f"a store location must be a path or a URL; got {location!r}")
    scheme = _SCHEME.match(text)
    if scheme and scheme.group(1).lower() in ("postgresql", "postgres"):
        from chronomem.stores.postgres import PostgresStore

        return PostgresStore(text, create=create)
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///") :]
    elif text.startswith("sqlite://"):
        raise ConfigError(f"use sqlite:///path/to/file (three slashes); got {text!r}")
    elif scheme:
        raise ConfigError(
            f"unsupported store URL scheme {scheme.group(1)!r}: chronomem opens a SQLite file "
            f"(a path or sqlite:///path) or a PostgreSQL database (postgresql://...)"
        )
    if not text:
        raise ConfigError("a store path is required")
    if "\x00" in text:
        raise ConfigError("a store path must not contain NUL characters")
    return SQLiteStore(Path(text), synchronous=synchronous, create=create)
