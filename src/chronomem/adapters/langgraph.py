"""A LangGraph ``BaseStore`` over chronomem (extra ``langgraph``): LangGraph agents keep their
long-term memory in chronomem and get its lifecycle for free.

- A namespace is an agent of the space: ``("users", "ada")`` is agent ``users.ada`` (LangGraph
  forbids periods in labels, so the mapping is exact both ways).
- An item is a record whose ``domain`` is the item's key; its value travels in the record's
  metadata and its text (what search matches) is the value's ``text``/``content``/``memory``
  field, or the value as JSON.
- ``put`` on a key that holds an item **supersedes** it: the old value stays in history, readable
  as of its time. ``delete`` forgets a record nothing depends on, and closes one that has a
  history. ``search`` with a query is a read-only ``peek`` (nothing is touched); without one it
  lists items newest first. ``list_namespaces`` lists the agents.
- ``abatch`` runs ``batch`` in a worker thread; the handle is thread-safe.

Works over a :class:`~chronomem.Memory` or a :class:`~chronomem.client.Client` (the verbs are
the same).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from chronomem.errors import DependentsExistError
from chronomem.model.record import Record

__all__ = ["ChronomemStore"]

_TEXT_FIELDS = ("text", "content", "memory", "page_content")
_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: a is not None and a > b,
    "$gte": lambda a, b: a is not None and a >= b,
    "$lt": lambda a, b: a is not None and a < b,
    "$lte": lambda a, b: a is not None and a <= b,
}


def agent_of(namespace: tuple[str, ...]) -> str:
    return ".".join(namespace)


def namespace_of(agent: str) -> tuple[str, ...]:
    return tuple(agent.split("."))


def text_of(value: Mapping[str, Any]) -> str:
    """What search matches for a value: its text-like field, else the value as JSON."""
    for name in _TEXT_FIELDS:
        field = value.get(name)
        if isinstance(field, str) and field.strip():
            return field
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def matches(value: Mapping[str, Any], conditions: Mapping[str, Any] | None) -> bool:
    """LangGraph's filter: equality, or ``{"$gt": x, ...}`` operators per field."""
    for name, wanted in (conditions or {}).items():
        have = value.get(name)
        if isinstance(wanted, Mapping):
            if not all(_OPERATORS[op](have, x) for op, x in wanted.items()):
                return False
        elif have != wanted:
            return False
    return True


class ChronomemStore(BaseStore):
    """A LangGraph store whose items are chronomem records (see the module docstring)."""

    supports_ttl = False

    def __init__(self, memory: Any, *, kind: str = "observation", scan: int = 1000) -> None:
        """``memory``: a :class:`~chronomem.Memory` or a :class:`~chronomem.client.Client`.
        ``kind``: the kind of the records items become. ``scan``: how many records a filtered
        search examines per page."""
        self.memory = memory
        self.kind = kind
        self.scan = scan

    # -- BaseStore ------------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """As LangGraph's stores do: every read of the batch sees the state before it; puts to one
        key are deduplicated (the last wins) and applied after the reads, in order."""
        out: list[Result] = []
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, GetOp):
                out.append(self._get(op))
            elif isinstance(op, SearchOp):
                out.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                out.append(self._namespaces(op))
            elif isinstance(op, PutOp):
                puts.pop((op.namespace, op.key), None)
                puts[(op.namespace, op.key)] = op
                out.append(None)
            else:
                raise ValueError(f"unknown operation {op!r}")
        for put in puts.values():
            self._put(put)
        return out

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    # -- operations ----------------------------------------------------------------------------
    def _current(self, namespace: tuple[str, ...], key: str) -> Record | None:
        found = self.memory.records(agent=agent_of(namespace), domain=key, limit=1)
        return found[0] if found else None

    def _get(self, op: GetOp) -> Item | None:
        record = self._current(op.namespace, op.key)
        return None if record is None else _item(record)

    def _put(self, op: PutOp) -> None:
        current = self._current(op.namespace, op.key)
        if op.value is None:
            if current is not None:
                self._delete(current)
            return
        value = dict(op.value)
        metadata: dict[str, Any] = {"key": op.key, "value": value, "indexed": op.index is not False}
        if current is not None:  # an item was created when its first version was recorded
            first = current.metadata.get("created_at") or current.recorded_at.isoformat()
            metadata["created_at"] = first
        text = text_of(value)
        if current is None:
            self.memory.remember(
                text, agent=agent_of(op.namespace), kind=self.kind, domain=op.key,
                metadata=metadata, actor="langgraph",
            )  # fmt: skip
        else:
            self.memory.supersede(
                current.id, text, metadata=metadata, reason="LangGraph put", actor="langgraph"
            )

    def _delete(self, record: Record) -> None:
        try:
            self.memory.forget(record.id, "LangGraph delete", actor="langgraph")
        except DependentsExistError:  # a record with a history is closed, not erased
            self.memory.close_record(record.id, "LangGraph delete", actor="langgraph")

    def _agents(self, prefix: tuple[str, ...]) -> list[str]:
        wanted = agent_of(prefix)
        return [
            a
            for a in self.memory.agents()
            if not prefix or a == wanted or a.startswith(wanted + ".")
        ]

    def _search(self, op: SearchOp) -> list[SearchItem]:
        agents = self._agents(op.namespace_prefix)
        if not agents:
            return []
        items: list[SearchItem] = []
        if op.query:
            hits = self.memory.peek(op.query, agents=agents, k=self.scan)
            for hit in hits:
                record = hit.record
                if "key" in record.metadata and record.metadata.get("indexed", True):
                    items.append(_item(record, hit.score))
        else:
            start = 0
            while True:
                page = self.memory.records(agents=agents, limit=self.scan, offset=start)
                items += [_item(r, None) for r in page if "key" in r.metadata]
                if len(page) < self.scan:
                    break
                start += self.scan
        chosen = [i for i in items if matches(i.value, op.filter)]
        return chosen[op.offset : op.offset + op.limit]

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found = {namespace_of(a) for a in self.memory.agents()}
        for condition in op.match_conditions or ():
            path = tuple(condition.path)
            found = {ns for ns in found if _fits(ns, path, condition.match_type)}
        if op.max_depth is not None:
            found = {ns[: op.max_depth] for ns in found}
        ordered = sorted(found)
        return ordered[op.offset : op.offset + op.limit]


def _fits(namespace: tuple[str, ...], path: tuple[str, ...], match_type: str) -> bool:
    if len(path) > len(namespace):
        return False
    start = 0 if match_type == "prefix" else len(namespace) - len(path)
    part = namespace[start : start + len(path)]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))


def _item(record: Record, score: float | None = None) -> SearchItem:
    metadata = record.metadata
    created = metadata.get("created_at")
    return SearchItem(
        namespace=namespace_of(record.agent),
        key=str(metadata.get("key", record.domain)),
        value=dict(metadata.get("value", {"text": record.text})),
        created_at=datetime.fromisoformat(created) if created else record.recorded_at,
        updated_at=record.recorded_at,
        score=score,
    )
