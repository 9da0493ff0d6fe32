"""What a SQL store records about itself (``store_meta``, ``spaces``): its schema version, the
embedding model and dimension of its vectors, store-wide settings (a model's calibration), and a
switch to another model in progress (``sql/reembed.py``). Mixed into
:class:`~chronomem.stores.sql.store.SQLStore`."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from chronomem.errors import ConflictError
from chronomem.stores.base import EmbeddingMeta
from chronomem.stores.reembedding import Pending, PendingVector, ReembedState
from chronomem.stores.sql import reembed
from chronomem.stores.sql.backend import SQLBackend, bump, put_meta

__all__ = ["StoreMetadata"]


class StoreMetadata:
    """The :class:`~chronomem.stores.base.MemoryStore` methods about the store itself."""

    def schema_version(self: SQLBackend) -> int:
        return int(self._query("SELECT MAX(version) FROM schema_version")[0][0])

    def embedding_meta(self: SQLBackend) -> EmbeddingMeta:
        rows = dict(self._query("SELECT key, value FROM store_meta"))
        dim = rows.get("embedding_dim")
        return EmbeddingMeta(
            model=rows.get("embedding_model"), dim=None if dim is None else int(dim)
        )

    def set_embedding_meta(self: SQLBackend, meta: EmbeddingMeta) -> None:
        with self.write():
            # One atomic statement: of two processes recording a first dimension, one wins.
            won = self._execute(
                "INSERT INTO store_meta (key, value) VALUES ('embedding_dim', ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value"
                " WHERE store_meta.value IS NULL RETURNING value",
                (None if meta.dim is None else str(meta.dim),),
            ).fetchall()
            if not won:
                raise ConflictError(f"{self.location}: the embedding dimension is already set")
            self._execute(
                "INSERT INTO store_meta (key, value) VALUES ('embedding_model', ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (meta.model,),
            )

    def meta_value(self: SQLBackend, key: str) -> str | None:
        rows = self._query("SELECT value FROM store_meta WHERE key = ?", (key,))
        return None if not rows else rows[0][0]

    def set_meta_value(self: SQLBackend, key: str, value: str | None) -> None:
        with self.write():
            put_meta(self, key, value)
            # A store-wide setting (a calibration): handles re-read them when their space's
            # change_seq moves (Handle.sync_model), so move every space's, in the same commit.
            # Two such writes queue on the key's row first; a writer holds one space's row
            # and no store_meta row this takes, so neither waits for the other in a cycle.
            # In name order, as reembed's cut-over does: two multi-space bumps never lock the
            # same rows in opposite orders.
            for (space,) in self._query("SELECT space FROM spaces ORDER BY space"):
                bump(self, space)

    # -- a switch to another embedding model (sql/reembed.py) --------------------------------
    def reembed_state(self: SQLBackend) -> ReembedState | None:
        return reembed.state(self)

    def reembed_start(self: SQLBackend, model: str, dim: int, started: str) -> None:
        reembed.start(self, model, dim, started)

    def reembed_todo(self: SQLBackend, limit: int | None) -> list[Pending]:
        return reembed.todo(self, limit)

    def reembed_put(self: SQLBackend, rows: Sequence[PendingVector]) -> None:
        reembed.put(self, rows)

    def reembed_cut_over(
        self: SQLBackend,
        model: str,
        dim: int,
        stragglers: Callable[[list[Pending]], list[PendingVector]],
    ) -> int:
        return reembed.cut_over(self, model, dim, stragglers)

    def reembed_cancel(self: SQLBackend) -> int:
        return reembed.cancel(self)

    def spaces(self: SQLBackend) -> list[str]:
        # "" is the service's own change feed (chronomem.model.change.SERVICE_FEED), no space
        return sorted(r[0] for r in self._query("SELECT space FROM spaces WHERE space <> ''"))
