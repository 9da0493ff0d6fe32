"""What the SQL of every concern needs from a backend, and the small helpers they share.

:class:`SQLBackend` is the surface the concern modules (records, lifecycle, columns, full text,
graph, audit, migrations) program against; :class:`~chronomem.stores.sql.store.SQLStore`
implements it and SQLite and PostgreSQL fill in the dialect hooks:

- ``_hint(column)``: keeps the planner on the primary key when a query names a space (SQLite's
  unary ``+``; nothing in PostgreSQL);
- ``_us(column)`` / ``_bind(micros)`` / ``_read(value)``: instants as stored (INTEGER
  microseconds in SQLite, ``timestamptz`` in PostgreSQL);
- ``_json_each(expression)``: expands a JSON array column into rows with a ``value`` column;
- ``_greatest(a, b)``: the larger of two values;
- ``_joined(column)``: an aggregate joining a group's integers into one comma-separated string
  (SQLite's ``group_concat``, PostgreSQL's ``string_agg``);
- ``_for_share(select)``: a SELECT that holds its rows against updates until the transaction ends
  (PostgreSQL's ``FOR SHARE``; SQLite's write transaction already excludes every writer);
- ``_index_vectors(space, rows)``: a backend with a vector index adds new records' vectors;
  ``_vectors_replaced(dim)``: after a model switch it rebuilds that index.

``vector_model`` is the model whose vectors this connection's handle writes: every write carrying
vectors checks it against the store's inside its transaction (:func:`check_vector_model`).

Statements use ``?`` placeholders on every backend.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

import numpy as np

from chronomem.arrays import F32
from chronomem.clock import from_micros, to_micros
from chronomem.errors import EmbedderMismatchError, StoreError
from chronomem.stores.base import Touch

__all__ = [
    "Cursor",
    "SQLBackend",
    "bump",
    "by_ids",
    "check_vector_model",
    "put_meta",
    "chunks",
    "in_insertion_order",
    "instant_param",
    "json_text",
    "json_tuple",
    "marks",
    "passages_from_blob",
    "read_instant",
    "vector_blob",
    "vector_from_blob",
]

_CHUNK = 900  # ids per IN (...) list


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class SQLBackend(Protocol):
    """A connection with transactions and the dialect hooks (see the module docstring). The
    underscored names are package-internal: only ``stores/sql`` and the backends use them."""

    location: str
    vector_model: str | None

    def write(self) -> AbstractContextManager[None]: ...

    def snapshot(self) -> AbstractContextManager[None]: ...

    def own_touches(self, space: str, after_seq: int, seq: int) -> list[tuple[Touch, ...]] | None:
        """See :meth:`chronomem.stores.base.MemoryStore.own_touches`."""
        ...

    @property
    def _writing(self) -> bool:
        """Whether the open transaction is a write (what it reads may still roll back)."""
        ...

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor: ...

    def _executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """All rows of one statement, with database errors translated."""
        ...

    def _hint(self, column: str) -> str: ...

    def _us(self, column: str) -> str: ...

    def _bind(self, micros: int | None) -> Any: ...

    def _read(self, value: Any) -> int | None: ...

    def _json_each(self, expression: str) -> str: ...

    def _greatest(self, a: str, b: str) -> str: ...

    def _joined(self, column: str) -> str: ...

    def _for_share(self, sql: str) -> str: ...

    def _index_vectors(self, space: str, rows: Sequence[tuple[int, str, F32]]) -> None: ...

    def _vectors_replaced(self, dim: int) -> None: ...


def put_meta(db: SQLBackend, key: str, value: str | None) -> None:
    """Inside a write transaction: set (``None``: remove) a ``store_meta`` key."""
    if value is None:
        db._execute("DELETE FROM store_meta WHERE key = ?", (key,))
    else:
        db._execute(
            "INSERT INTO store_meta (key, value) VALUES (?, ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )


def check_vector_model(db: SQLBackend) -> None:
    """Inside a write transaction that stores vectors: refuse them when the store's model is no
    longer the one they were made with (another process switched it: ``reembed``). The model's
    row stays share-locked until the write commits, so a cut-over (which updates it first) waits
    for every write of old vectors in flight, and every later one sees the new model."""
    expected = db.vector_model
    if expected is None:
        return
    rows = db._execute(
        db._for_share(
            "SELECT key, value FROM store_meta WHERE key IN ('embedding_model', 'embedding_dim')"
        )
    ).fetchall()
    stored = dict(rows)
    model = stored.get("embedding_model")
    if model is not None and model != expected:
        dim = stored.get("embedding_dim")
        raise EmbedderMismatchError(
            f"{db.location} switched to {model!r} (reembed); refusing vectors of {expected!r}: "
            f"reopen it with the new model",
            expected_model=model, expected_dim=None if dim is None else int(dim),
            got_model=expected, got_dim=None,
        )  # fmt: skip


def json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def json_tuple(text: str) -> tuple[Any, ...]:
    return () if text == "[]" else tuple(json.loads(text))


def vector_blob(vector: F32 | None) -> bytes | None:
    return None if vector is None else np.asarray(vector, dtype="<f4").tobytes()


def vector_from_blob(blob: Any) -> F32 | None:
    return None if blob is None else np.frombuffer(bytes(blob), dtype="<f4").astype(np.float32)


def passages_from_blob(blob: Any, dim: int | None, location: str) -> F32 | None:
    """A record's passage vectors, one row each, from their concatenated float32 bytes."""
    flat = vector_from_blob(blob)
    if flat is None or dim is None:
        return None
    if flat.shape[0] % dim:
        raise StoreError(
            f"{location}: passage vectors of {flat.shape[0]} floats are not {dim}-wide"
        )
    return flat.reshape(-1, dim)


def chunks(items: Sequence[str], size: int = _CHUNK) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def marks(n: int) -> str:
    return ", ".join("?" for _ in range(n))


def instant_param(db: SQLBackend, value: datetime | None) -> Any:
    """The parameter for an instant (``None`` stays ``None``)."""
    return db._bind(None if value is None else to_micros(value))


def read_instant(db: SQLBackend, value: Any) -> datetime | None:
    micros = db._read(value)
    return None if micros is None else from_micros(micros)


def bump(db: SQLBackend, space: str, *, graph: bool = False) -> int:
    """Advance the space's ``change_seq`` and return it (inside a write transaction); with
    ``graph`` (a change to its events, links or their vectors) set ``graph_seq`` to it too.

    One statement: it creates the space on its first write. In PostgreSQL the row lock it takes
    serialises writers of one space, so ``change_seq`` commits in order."""
    also = ", graph_seq = spaces.change_seq + 1" if graph else ""
    row = db._execute(
        "INSERT INTO spaces (space, change_seq, graph_seq) VALUES (?, 1, ?) ON CONFLICT (space)"
        f" DO UPDATE SET change_seq = spaces.change_seq + 1{also} RETURNING change_seq",
        (space, 1 if graph else 0),
    ).fetchone()
    return int(row[0])


def by_ids(db: SQLBackend, select: str, space: str, ids: Sequence[str]) -> list[Any]:
    """Rows of ``SELECT … FROM table`` (first column the id) for ``ids`` in that order; missing
    ids are skipped."""
    found: dict[str, Any] = {}
    for chunk in chunks(list(ids)):
        rows = db._query(
            f"{select} WHERE id IN ({marks(len(chunk))}) AND {db._hint('space')} = ?",
            (*chunk, space),
        )
        found.update((row[0], row) for row in rows)
    return [found[i] for i in ids if i in found]


def in_insertion_order(db: SQLBackend, columns: str, table: str, space: str) -> Iterator[Any]:
    """Every row of ``SELECT {columns} FROM {table}`` of one space in primary-key (insertion)
    order, a page of 1000 at a time (keyset paging: each page starts after the last key)."""
    last_pk = 0
    while True:
        rows = db._query(
            f"SELECT pk, {columns} FROM {table}"
            f" WHERE pk > ? AND {db._hint('space')} = ? ORDER BY pk LIMIT 1000",
            (last_pk, space),
        )
        if not rows:
            return
        for row in rows:
            yield row[1:]
        last_pk = rows[-1][0]
