"""The SQL layer SQLite and PostgreSQL share: :class:`SQLStore` and one module per concern
(see ``store.py``)."""

from chronomem.stores.sql.backend import Cursor, SQLBackend
from chronomem.stores.sql.migrations import Migration
from chronomem.stores.sql.store import SQLStore

__all__ = ["Cursor", "Migration", "SQLBackend", "SQLStore"]
