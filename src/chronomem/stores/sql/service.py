"""What the HTTP service keeps in the store, so every process serving it agrees: API keys (their
SHA-256 digests, never the secrets) and each space's simulated clock."""

from __future__ import annotations

from typing import Any

from chronomem.model.change import SERVICE_FEED, ChangeRow
from chronomem.model.keys import ApiKey, Scope
from chronomem.stores.sql import changes
from chronomem.stores.sql.backend import SQLBackend, instant_param, read_instant

__all__ = [
    "ServiceStore",
    "api_keys",
    "get_key",
    "insert_key",
    "revoke_key",
    "set_space_clock",
    "space_clock",
]

_KEY_COLUMNS = "id, space, scope, label, digest, created_at, revoked_at"


def _key(db: SQLBackend, row: Any) -> ApiKey:
    key_id, space, scope, label, digest, created_at, revoked_at = row
    return ApiKey(
        id=key_id,
        space=space,
        scope=Scope(scope),
        label=label,
        digest=bytes(digest),
        created_at=read_instant(db, created_at),  # type: ignore[arg-type]
        revoked_at=read_instant(db, revoked_at),
    )


def insert_key(db: SQLBackend, key: ApiKey) -> None:
    with db.write():
        db._execute(
            f"INSERT INTO api_keys ({_KEY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                key.id, key.space, key.scope.value, key.label, key.digest,
                instant_param(db, key.created_at), instant_param(db, key.revoked_at),
            ),
        )  # fmt: skip
        _key_changed(db, key, "created")


def get_key(db: SQLBackend, key_id: str) -> ApiKey | None:
    rows = db._query(f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE id = ?", (key_id,))
    return _key(db, rows[0]) if rows else None


def api_keys(db: SQLBackend) -> list[ApiKey]:
    rows = db._query(f"SELECT {_KEY_COLUMNS} FROM api_keys ORDER BY created_at, id")
    return [_key(db, row) for row in rows]


def revoke_key(db: SQLBackend, key_id: str, at_us: int) -> bool:
    with db.write():
        cur = db._execute(
            "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
            (db._bind(at_us), key_id),
        )
        key = get_key(db, key_id) if cur.rowcount == 1 else None
        if key is not None:
            _key_changed(db, key, "revoked")
    return cur.rowcount == 1


def _key_changed(db: SQLBackend, key: ApiKey, change: str) -> None:
    """A key's creation or revocation in the feed of its space (a key bound to no space: the
    service's feed): its id and scope — not its label, which a reader of the space's feed need
    not see, nor anything of its secret."""
    detail = {"key_id": key.id, "scope": key.scope.value, "change": change}
    feed = SERVICE_FEED if key.space is None else key.space
    changes.append_changes(db, feed, [ChangeRow(kind="key", detail=detail)])


def space_clock(db: SQLBackend, space: str) -> int | None:
    rows = db._query("SELECT now_us FROM space_clocks WHERE space = ?", (space,))
    return int(rows[0][0]) if rows else None


def set_space_clock(db: SQLBackend, space: str, now_us: int | None) -> None:
    with db.write():
        if now_us is None:
            db._execute("DELETE FROM space_clocks WHERE space = ?", (space,))
        else:
            db._execute(
                "INSERT INTO space_clocks (space, now_us) VALUES (?, ?) ON CONFLICT (space)"
                " DO UPDATE SET now_us = excluded.now_us",
                (space, now_us),
            )


class ServiceStore:
    """The :class:`~chronomem.stores.base.MemoryStore` methods the HTTP service needs: its API
    keys and each space's simulated clock (the functions above, as methods)."""

    def insert_key(self: SQLBackend, key: ApiKey) -> None:
        insert_key(self, key)

    def get_key(self: SQLBackend, key_id: str) -> ApiKey | None:
        return get_key(self, key_id)

    def api_keys(self: SQLBackend) -> list[ApiKey]:
        return api_keys(self)

    def revoke_key(self: SQLBackend, key_id: str, at_us: int) -> bool:
        return revoke_key(self, key_id, at_us)

    def space_clock(self: SQLBackend, space: str) -> int | None:
        return space_clock(self, space)

    def set_space_clock(self: SQLBackend, space: str, now_us: int | None) -> None:
        set_space_clock(self, space, now_us)
