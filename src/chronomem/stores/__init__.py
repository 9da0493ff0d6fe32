"""Storage backends. :class:`SQLiteStore` is the embedded default."""

from chronomem.stores.base import EmbeddingMeta, MemoryStore, RecordColumns, StoredRecord
from chronomem.stores.sqlite import SQLiteStore

__all__ = ["EmbeddingMeta", "MemoryStore", "RecordColumns", "SQLiteStore", "StoredRecord"]
