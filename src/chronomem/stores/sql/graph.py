"""The causal graph's rows (DESIGN §4): events with their vectors, and weighted links."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from chronomem.arrays import F32
from chronomem.model.change import ChangeRow
from chronomem.model.event import Event, EventKind, Link, Provenance
from chronomem.stores.sql import changes
from chronomem.stores.sql.backend import (
    SQLBackend,
    bump,
    by_ids,
    check_vector_model,
    in_insertion_order,
    instant_param,
    json_text,
    read_instant,
    vector_blob,
    vector_from_blob,
)

__all__ = [
    "GraphStore",
    "delete_link",
    "event_embeddings",
    "events_between",
    "get_events",
    "get_link",
    "graph_seq",
    "insert_event",
    "iter_events",
    "links",
    "put_link",
]

_EVENT_COLUMNS = (
    "id, space, text, kind, scope, occurred_at, recorded_at, metadata, embedding IS NOT NULL"
)
_LINK_COLUMNS = "cause, effect, weight, provenance, similarity, created_at"


def _event(db: SQLBackend, row: Sequence[Any]) -> Event:
    rid, space, text, kind, scope, occurred_at, recorded_at, metadata, has = row
    return Event(
        id=rid,
        space=space,
        text=text,
        kind=EventKind(kind),
        scope=scope,
        occurred_at=read_instant(db, occurred_at),  # type: ignore[arg-type]
        recorded_at=read_instant(db, recorded_at),  # type: ignore[arg-type]
        metadata={} if metadata == "{}" else json.loads(metadata),
        has_embedding=bool(has),
    )


def _link(db: SQLBackend, row: Sequence[Any]) -> Link:
    cause, effect, weight, provenance, similarity, created_at = row
    return Link(
        cause=cause,
        effect=effect,
        weight=float(weight),
        provenance=Provenance(provenance),
        similarity=None if similarity is None else float(similarity),
        created_at=read_instant(db, created_at),  # type: ignore[arg-type]
    )


def insert_event(db: SQLBackend, space: str, event: Event, embedding: F32 | None) -> None:
    with db.write():
        if embedding is not None:
            check_vector_model(db)
        bump(db, space, graph=True)
        db._execute(
            "INSERT INTO events (id, space, text, kind, scope, occurred_at, recorded_at,"
            " metadata, embedding) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                event.id, space, event.text, event.kind.value, event.scope,
                instant_param(db, event.occurred_at), instant_param(db, event.recorded_at),
                json_text(dict(event.metadata)), vector_blob(embedding),
            ),
        )  # fmt: skip
        detail = {"event_id": event.id, "kind": event.kind.value}
        changes.append_changes(db, space, [ChangeRow(kind="event", detail=detail)])


def get_events(db: SQLBackend, space: str, ids: Sequence[str]) -> list[Event]:
    rows = by_ids(db, f"SELECT {_EVENT_COLUMNS} FROM events", space, ids)
    return [_event(db, row) for row in rows]


def iter_events(db: SQLBackend, space: str) -> Iterator[tuple[Event, F32 | None]]:
    for row in in_insertion_order(db, f"{_EVENT_COLUMNS}, embedding", "events", space):
        yield _event(db, row[:-1]), vector_from_blob(row[-1])


def event_embeddings(db: SQLBackend, space: str, ids: Sequence[str]) -> dict[str, F32]:
    rows = by_ids(db, "SELECT id, embedding FROM events", space, ids)
    return {rid: v for rid, blob in rows if (v := vector_from_blob(blob)) is not None}


def events_between(
    db: SQLBackend,
    space: str,
    *,
    after_us: int | None = None,
    before_us: int | None = None,
    scope: str | None = None,
) -> list[Event]:
    sql = f"SELECT {_EVENT_COLUMNS} FROM events WHERE space = ?"
    params: list[Any] = [space]
    if after_us is not None:
        sql += " AND occurred_at >= ?"
        params.append(db._bind(after_us))
    if before_us is not None:
        sql += " AND occurred_at < ?"
        params.append(db._bind(before_us))
    if scope is not None:
        sql += " AND scope = ?"
        params.append(scope)
    return [_event(db, r) for r in db._query(sql + " ORDER BY occurred_at, id", params)]


def put_link(db: SQLBackend, space: str, link: Link) -> None:
    with db.write():
        bump(db, space, graph=True)
        db._execute(
            "INSERT INTO links (space, cause, effect, weight, provenance, similarity,"
            " created_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (space, cause, effect)"
            " DO UPDATE SET weight = excluded.weight, provenance = excluded.provenance,"
            " similarity = excluded.similarity, created_at = excluded.created_at",
            (
                space, link.cause, link.effect, link.weight, link.provenance.value,
                link.similarity, instant_param(db, link.created_at),
            ),
        )  # fmt: skip
        detail = {"cause": link.cause, "effect": link.effect, "weight": link.weight}
        changes.append_changes(db, space, [ChangeRow(kind="link", detail=detail)])


def get_link(db: SQLBackend, space: str, cause: str, effect: str) -> Link | None:
    rows = db._query(
        f"SELECT {_LINK_COLUMNS} FROM links WHERE space = ? AND cause = ? AND effect = ?",
        (space, cause, effect),
    )
    return _link(db, rows[0]) if rows else None


def delete_link(db: SQLBackend, space: str, cause: str, effect: str) -> bool:
    with db.write():
        cur = db._execute(
            "DELETE FROM links WHERE space = ? AND cause = ? AND effect = ?",
            (space, cause, effect),
        )
        if cur.rowcount:
            bump(db, space, graph=True)
            unlinked = ChangeRow(kind="unlink", detail={"cause": cause, "effect": effect})
            changes.append_changes(db, space, [unlinked])
    return cur.rowcount > 0


def graph_seq(db: SQLBackend, space: str) -> int:
    rows = db._query("SELECT graph_seq FROM spaces WHERE space = ?", (space,))
    return int(rows[0][0]) if rows else 0


def links(db: SQLBackend, space: str, *, as_of_us: int | None = None) -> list[Link]:
    sql = f"SELECT {_LINK_COLUMNS} FROM links WHERE space = ?"
    params: list[Any] = [space]
    if as_of_us is not None:
        sql += " AND created_at <= ?"
        params.append(db._bind(as_of_us))
    return [_link(db, r) for r in db._query(sql + " ORDER BY cause, effect", params)]


class GraphStore:
    """The :class:`~chronomem.stores.base.MemoryStore` methods of the causal graph (the
    functions above, as methods)."""

    def insert_event(self: SQLBackend, space: str, event: Event, embedding: F32 | None) -> None:
        insert_event(self, space, event, embedding)

    def get_events(self: SQLBackend, space: str, ids: Sequence[str]) -> list[Event]:
        return get_events(self, space, ids)

    def iter_events(self: SQLBackend, space: str) -> Iterator[tuple[Event, F32 | None]]:
        return iter_events(self, space)

    def event_embeddings(self: SQLBackend, space: str, ids: Sequence[str]) -> dict[str, F32]:
        return event_embeddings(self, space, ids)

    def events_between(
        self: SQLBackend,
        space: str,
        *,
        after_us: int | None = None,
        before_us: int | None = None,
        scope: str | None = None,
    ) -> list[Event]:
        return events_between(self, space, after_us=after_us, before_us=before_us, scope=scope)

    def put_link(self: SQLBackend, space: str, link: Link) -> None:
        put_link(self, space, link)

    def get_link(self: SQLBackend, space: str, cause: str, effect: str) -> Link | None:
        return get_link(self, space, cause, effect)

    def delete_link(self: SQLBackend, space: str, cause: str, effect: str) -> bool:
        return delete_link(self, space, cause, effect)

    def links(self: SQLBackend, space: str, *, as_of_us: int | None = None) -> list[Link]:
        return links(self, space, as_of_us=as_of_us)

    def graph_seq(self: SQLBackend, space: str) -> int:
        return graph_seq(self, space)
