"""Numbered schema steps, applied in order on open and recorded in ``schema_version``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from chronomem.clock import SystemClock
from chronomem.errors import StoreError
from chronomem.stores.sql import fulltext
from chronomem.stores.sql.backend import SQLBackend

__all__ = ["Migration", "is_chronomem", "is_current", "migrate"]


@dataclass(frozen=True, slots=True)
class Migration:
    """A numbered schema step: statements run in one transaction, recorded in
    ``schema_version``. Never edit a released migration; append a new one."""

    version: int
    description: str
    statements: tuple[str, ...]


def is_chronomem(db: SQLBackend, migrations: Sequence[Migration]) -> bool:
    """Whether the ``schema_version`` table in sight is chronomem's: its first step carries
    the description chronomem wrote (another tool's table of that name is not)."""
    try:
        rows = db._query("SELECT description FROM schema_version WHERE version = 1")
    except StoreError:
        return False  # no such columns: another tool's table
    return len(rows) == 1 and rows[0][0] == migrations[0].description


def is_current(
    db: SQLBackend, migrations: Sequence[Migration], *, has_table: Callable[[str], bool]
) -> bool:
    """Whether the store is at this chronomem's latest version with its analyser's index, so
    opening has nothing to write. Read-only; a store newer than ``migrations`` is refused."""
    if not has_table("schema_version"):
        return False
    current = int(db._query("SELECT COALESCE(MAX(version), 0) FROM schema_version")[0][0])
    latest = migrations[-1].version
    if current > latest:
        raise StoreError(
            f"{db.location} has schema version {current}, newer than this chronomem "
            f"understands ({latest}); upgrade chronomem"
        )
    return current == latest and fulltext.analyser_is_current(db)


def migrate(
    db: SQLBackend, migrations: Sequence[Migration], *, has_table: Callable[[str], bool]
) -> None:
    """Apply the steps newer than the store's version in one write transaction, then re-index
    the full text if another analyser built it. A store newer than ``migrations`` is refused.
    A store that is already current is left alone: no write, no write lock."""
    if is_current(db, migrations, has_table=has_table):
        return
    latest = migrations[-1].version
    with db.write():
        if not has_table("schema_version"):
            db._execute(
                "CREATE TABLE schema_version (version INTEGER PRIMARY KEY,"
                " description TEXT NOT NULL, applied_at TEXT NOT NULL)"
            )
        current = db._execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()[0]
        if current > latest:
            raise StoreError(
                f"{db.location} has schema version {current}, newer than this chronomem "
                f"understands ({latest}); upgrade chronomem"
            )
        applied_at = SystemClock().now().isoformat()  # wall time: when this process migrated
        for migration in migrations:
            if migration.version <= current:
                continue
            for statement in migration.statements:
                db._execute(statement)
            db._execute(
                "INSERT INTO schema_version (version, description, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.description, applied_at),
            )
        fulltext.reindex_if_stale(db)
