"""A LangGraph ``BaseStore`` over chronomem (extra ``langgraph``): LangGraph agents keep their
long-term memory in chronomem and get its lifecycle for free. It passes LangGraph's own store
test suites (``tests/test_store.py`` of ``langgraph-checkpoint``, ``-sqlite`` and ``-postgres``,
and their ``test_async_store.py``) except where docs/agents.md lists a deliberate difference.

- A namespace is an agent of the space: ``("users", "ada")`` is agent ``users.ada`` (LangGraph
  forbids periods in labels, so the mapping is exact both ways).
- An item is a record whose ``domain`` is the item's key, exactly (case and spaces included); its
  value travels in the record's metadata, and its text (what lexical search matches) is the
  value's ``text``/``content``/``memory``/``page_content`` field, or the value as JSON.
- ``put`` is a keyed write (``remember(..., replace=True)``): the open version of the key is
  **superseded** in the same transaction — the old value stays in history, readable as of its
  time — and concurrent puts to one key leave exactly one item, in any number of threads or
  processes. ``delete`` forgets a record nothing depends on and closes one that has a history.
- ``search`` with a query is a read-only ``peek`` over every item under the prefix (nothing is
  touched), ranked by the similarity LangGraph's stores give (``SearchItem.score``: the cosine of
  the query and the best of the item's field vectors); chronomem's own score is kept as
  ``item.memory_score``. Items stored with ``index=False`` stay reachable after the scored ones,
  with ``score=None``. Without a query it lists items, most recently updated first.
- Items may have a time to live (``put(..., ttl=minutes)``, ``TTLConfig``): an item whose time
  ran out is closed at that instant (history keeps it) and no read returns it, swept or not;
  ``refresh_ttl`` reads extend exactly the items they return. ``sweep_ttl()`` stores the closes.
- ``index`` is LangGraph's index configuration (``dims``, ``embed``, ``fields``; ``text_fields``
  as the SQLite store spells it): the store embeds each field of a value with it and a record
  matches by the best of them. Without one, search ranks by the Memory's own embedder (or by
  words, with ``embedder=None``).

Works over a :class:`~chronomem.Memory` or a :class:`~chronomem.client.Client` (the verbs are
the same).
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    validate_op_namespace,
)
from langgraph.store.base.embed import ensure_embeddings, get_text_at_path, tokenize_path

from chronomem.adapters.batching import LoopCombiner, ThreadCombiner
from chronomem.adapters.langgraph_filter import matches, narrowing
from chronomem.errors import ConfigError, ConflictError, DependentsExistError, NotFoundError
from chronomem.model.record import Hit, Record
from chronomem.retrieval.options import RankBy, ReadOptions

__all__ = ["ChronomemStore", "MemorySearchItem", "matches"]

_TEXT_FIELDS = ("text", "content", "memory", "page_content")
_PAGE = 1000  # records per listing page
_TEXT_CHARS = 20_000  # of a value's text kept as the record's text (what words match)


def agent_of(namespace: tuple[str, ...]) -> str:
    return ".".join(namespace)


def namespace_of(agent: str) -> tuple[str, ...]:
    return tuple(agent.split("."))


def text_of(value: Mapping[str, Any]) -> str:
    """What lexical search matches for a value: its text-like field, else the value as JSON."""
    for name in _TEXT_FIELDS:
        field = value.get(name)
        if isinstance(field, str) and field.strip():
            return field
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


class MemorySearchItem(SearchItem):
    """A search result: LangGraph's ``SearchItem`` (``score`` is the similarity), plus the record
    it came from (``record_id``) and chronomem's own score for it (``memory_score``, ``None``
    for a listing without a query)."""

    __slots__ = ("memory_score", "record_id")

    def __init__(self, *, record_id: str, memory_score: float | None, **fields: Any) -> None:
        super().__init__(**fields)
        self.record_id = record_id
        self.memory_score = memory_score


class ChronomemStore(BaseStore):
    """A LangGraph store whose items are chronomem records (see the module docstring)."""

    supports_ttl = True

    def __init__(
        self,
        memory: Any,
        *,
        index: IndexConfig | None = None,
        kind: str = "observation",
        rank: Literal["similarity", "memory"] = "similarity",
        ttl: TTLConfig | None = None,
    ) -> None:
        """``memory``: a :class:`~chronomem.Memory` or a :class:`~chronomem.client.Client`
        (with ``index``, open it with ``embedder=None``: the vectors are the index's).
        ``index``: LangGraph's index configuration (``dims``, ``embed``, ``fields``).
        ``kind``: the kind of the records items become. ``rank``: how a query search orders
        its items — ``"similarity"`` (LangGraph's stores: by ``score``) or ``"memory"``
        (chronomem's score: relevance with recency, importance and the lifecycle's factors).
        ``ttl``: LangGraph's TTL configuration (``default_ttl`` in minutes, ``refresh_on_read``);
        an item's time to live is its record's (``remember(ttl=)``)."""
        if rank not in ("similarity", "memory"):
            raise ConfigError(f"rank must be 'similarity' or 'memory'; got {rank!r}")
        self.memory = memory
        self.ttl_config = ttl
        self.kind = kind
        self.rank = rank
        self._by: RankBy = "similarity" if rank == "similarity" else "score"
        self._threads: ThreadCombiner[Op, Result] = ThreadCombiner(self._batch)
        self._loop: LoopCombiner[Op, Result] = LoopCombiner(self._threads.call)
        self.index_config: dict[str, Any] | None = None
        self.embeddings: Any = None
        self._fields: list[tuple[str, list[str] | str]] = []
        if index:
            config: dict[str, Any] = dict(index)
            self.embeddings = ensure_embeddings(config.get("embed"))
            paths = config.get("fields") or config.get("text_fields") or ["$"]
            self._fields = [(p, p if p == "$" else tokenize_path(p)) for p in paths]
            self.index_config = config

    def sweep_ttl(self) -> int:
        """Store the close of every item whose time to live ran out; returns how many. Reads
        never show such an item (it is closed from its expiry) and every write does this first,
        so a sweeper thread is never needed."""
        return len(self.memory.expire())

    async def asweep_ttl(self) -> int:
        return await asyncio.to_thread(self.sweep_ttl)

    # -- BaseStore ------------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """As LangGraph's stores do: every read of the batch sees the state before it (equal reads
        are answered once); puts to one key are deduplicated (the last wins) and applied after
        the reads — every new value in one transaction. Batches of concurrent threads run as
        one (``adapters/batching.py``)."""
        ops = _checked(ops)
        return self._threads.call(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread; the calls that arrive together (``asyncio.gather``
        of many ``aput``/``aget``/``asearch``) run as one batch, as LangGraph's own SQL stores
        batch them."""
        return await self._loop.call(_checked(ops))

    # -- operations ----------------------------------------------------------------------------
    def _batch(self, ops: list[Op]) -> list[Result]:
        out: list[Result] = []
        answered: dict[str, Result] = {}
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, PutOp):
                puts.pop((op.namespace, op.key), None)
                puts[(op.namespace, op.key)] = op
                out.append(None)
                continue
            if not isinstance(op, GetOp | SearchOp | ListNamespacesOp):
                raise ValueError(f"unknown operation {op!r}")
            key = _read_key(op)
            if key not in answered:
                answered[key] = self._read(op)
            out.append(answered[key])
        self._write(list(puts.values()))
        return out

    def _read(self, op: GetOp | SearchOp | ListNamespacesOp) -> Result:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        return self._namespaces(op)

    def _current(
        self, namespace: tuple[str, ...], key: str, *, refresh: bool = False
    ) -> Record | None:
        """The item's open record (its key compared exactly); ``refresh`` extends its time to
        live."""
        found = self.memory.records(
            agent=agent_of(namespace), domain=key, filter={"metadata.key": key}, limit=_PAGE,
            refresh_ttl=refresh,
        )  # fmt: skip
        return next((r for r in found if r.domain == key and "key" in r.metadata), None)

    def _get(self, op: GetOp) -> Item | None:
        record = self._current(op.namespace, op.key, refresh=self._refreshes(op))
        return None if record is None else _item(record)

    def _write(self, puts: list[PutOp]) -> None:
        """Deletes one by one; every new value as a keyed write, all in one transaction."""
        for op in puts:
            if op.value is None:
                self._delete(op.namespace, op.key)
        kept = [op for op in puts if op.value is not None]
        if not kept:
            return
        results = self.memory.remember_many([self._version(op) for op in kept], actor="langgraph")
        refused = [(op.key, r.reason) for op, r in zip(kept, results, strict=True) if not r.stored]
        if refused:  # a keyed write skips the gate: this would be a defect
            raise ConflictError(
                f"LangGraph put of {refused[0][0]!r} was not stored: {refused[0][1]}"
            )

    def _version(self, op: PutOp) -> dict[str, Any]:
        """The keyed write (``remember`` fields) of a put's new value."""
        assert op.value is not None
        value = dict(op.value)
        current = self._current(op.namespace, op.key)
        metadata: dict[str, Any] = {"key": op.key, "value": value, "indexed": op.index is not False}
        if current is not None:  # an item was created when its first version was recorded
            metadata["created_at"] = (
                current.metadata.get("created_at") or current.recorded_at.isoformat()
            )
        vectors = self._vectors(value, op.index)
        return {
            "text": _record_text(value, vectors), "agent": agent_of(op.namespace),
            "kind": self.kind, "domain": op.key, "metadata": metadata, "replace": True,
            "ttl": None if op.ttl is None else op.ttl * 60,
            "embedding": vectors[0][1] if vectors else None,
            "passage_embeddings": [v for _, v in vectors[1:]] or None,
        }  # fmt: skip

    def _vectors(
        self, value: Mapping[str, Any], index: Literal[False] | list[str] | None
    ) -> list[tuple[str, list[float]]]:
        """The texts of the value's indexed fields and their vectors (none without an index
        configuration or with ``index=False``; zero vectors, which have no direction, dropped)."""
        if self.embeddings is None or index is False:
            return []
        fields = self._fields if index is None else [(p, tokenize_path(p)) for p in index]
        texts = [t for _, path in fields for t in get_text_at_path(value, path)]
        if not texts:
            return []
        vectors = self.embeddings.embed_documents(texts)
        return [
            (t, list(v))
            for t, v in zip(texts, vectors, strict=True)
            if any(x != 0 for x in v) and all(math.isfinite(x) for x in v)
        ]

    def _delete(self, namespace: tuple[str, ...], key: str) -> None:
        record = self._current(namespace, key)
        if record is None:
            return
        try:
            try:
                self.memory.forget(record.id, "LangGraph delete", actor="langgraph")
            except DependentsExistError:  # a record with a history is closed, not erased
                self.memory.close_record(record.id, "LangGraph delete", actor="langgraph")
        except (NotFoundError, ConflictError):  # deleted or replaced concurrently: it is gone
            pass

    def _agents(self, prefix: tuple[str, ...]) -> list[str]:
        wanted = agent_of(prefix)
        return [
            a
            for a in self.memory.agents()
            if not prefix or a == wanted or a.startswith(wanted + ".")
        ]

    def _listing(self, agents: list[str], op: SearchOp) -> list[Record]:
        """The page of items (open records with a key) of these agents that pass the filter,
        most recently updated first: records are read a page at a time (each wider than the
        last) until the page is full."""
        wanted = op.offset + op.limit
        found: list[Record] = []
        start, size = 0, min(wanted, _PAGE)
        while len(found) < wanted:
            page = self.memory.records(
                agents=agents, limit=size, offset=start, filter=narrowing(op.filter)
            )
            found += [r for r in page if "key" in r.metadata and matches(_value(r), op.filter)]
            if len(page) < size:
                break
            start, size = start + size, min(size * 4, _PAGE)
        return self._refreshed(found[op.offset : wanted], self._refreshes(op))

    def _refreshes(self, op: GetOp | SearchOp) -> bool:
        """Whether a read extends the time to live of what it returns: when it asks (LangGraph
        asks by default) and a TTL configuration, if given, sets ``refresh_on_read`` — as
        LangGraph's SQLite store reads the configuration."""
        return op.refresh_ttl and (
            self.ttl_config is None or bool(self.ttl_config.get("refresh_on_read", False))
        )

    def _refreshed(self, records: list[Record], refresh: bool) -> list[Record]:
        """Extend the time to live of exactly the items returned (LangGraph's ``refresh_ttl``)."""
        expiring = [r.id for r in records if r.ttl is not None]
        if refresh and expiring:
            self.memory.records(
                filter={"id": {"$in": expiring}}, include_history=False, limit=len(expiring),
                refresh_ttl=True,
            )  # fmt: skip
        return records

    def _search(self, op: SearchOp) -> list[SearchItem]:
        agents = self._agents(op.namespace_prefix)
        if not agents or op.limit <= 0:
            return []
        if not op.query:
            return [_item(r, None) for r in self._listing(agents, op)]
        wanted = op.offset + op.limit
        vector = None if self.embeddings is None else self.embeddings.embed_query(op.query)
        k = wanted if not op.filter else max(4 * wanted, 64)
        while True:  # a filter keeps fewer than it reads: read wider until the page is full
            options = ReadOptions(
                agents=agents, k=k, touch=False, dedup=False, rank_by=self._by,
                filter=narrowing(op.filter),
            )  # fmt: skip
            hits: list[Hit] = self.memory.peek(op.query, query_embedding=vector, options=options)
            kept = [
                h for h in hits
                if "key" in h.record.metadata and matches(_value(h.record), op.filter)
            ]  # fmt: skip
            if len(kept) >= wanted or len(hits) < k:
                break
            k *= 4
        page = kept[op.offset : wanted]
        self._refreshed([h.record for h in page], self._refreshes(op))
        return [_item(h.record, h) for h in page]

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found = {namespace_of(a) for a in self.memory.agents()}
        for condition in op.match_conditions or ():
            path = tuple(condition.path)
            found = {ns for ns in found if _fits(ns, path, condition.match_type)}
        if op.max_depth is not None:
            found = {ns[: op.max_depth] for ns in found}
        ordered = sorted(found)
        return ordered[op.offset : op.offset + op.limit]


def _checked(ops: Iterable[Op]) -> list[Op]:
    """The ops of one call, each namespace checked (a label with a period would address another
    namespace, that is, another agent): an invalid call fails alone, before it joins others."""
    listed = list(ops)
    for op in listed:
        validate_op_namespace(op)
    return listed


def _read_key(op: GetOp | SearchOp | ListNamespacesOp) -> str:
    """Equal reads of one batch have equal keys (the ops hold dicts, so they are not hashable)."""
    return repr((type(op).__name__, *(json.dumps(f, sort_keys=True, default=repr) for f in op)))


def _record_text(value: Mapping[str, Any], vectors: Sequence[tuple[str, Any]]) -> str:
    """The record's text: the value's text-like field; with indexed fields and no such field,
    the texts the index embedded (so lexical matches and explanations show what was indexed).
    At most :data:`_TEXT_CHARS` of it: the value itself travels whole in the metadata."""
    plain = text_of(value)
    if vectors and not any(isinstance(value.get(n), str) for n in _TEXT_FIELDS):
        joined = "\n".join(dict.fromkeys(t for t, _ in vectors))
        plain = joined if joined.strip() else plain
    return plain[:_TEXT_CHARS]


def _similarity(hit: Hit) -> float | None:
    if hit.similarity is None or hit.record.metadata.get("indexed") is False:
        return None
    return hit.similarity


def _fits(namespace: tuple[str, ...], path: tuple[str, ...], match_type: str) -> bool:
    if len(path) > len(namespace):
        return False
    start = 0 if match_type == "prefix" else len(namespace) - len(path)
    part = namespace[start : start + len(path)]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))


def _value(record: Record) -> dict[str, Any]:
    return dict(record.metadata.get("value", {"text": record.text}))


def _times(record: Record) -> tuple[datetime, datetime]:
    created = record.metadata.get("created_at")
    return (datetime.fromisoformat(created) if created else record.recorded_at), record.recorded_at


def _item(record: Record, hit: Hit | Literal[False] | None = False) -> Any:
    """The record as LangGraph's ``Item`` (``hit=False``, for ``get``) or as a search result."""
    created, updated = _times(record)
    common: dict[str, Any] = {
        "namespace": namespace_of(record.agent),
        "key": str(record.metadata.get("key", record.domain)),
        "value": _value(record),
        "created_at": created,
        "updated_at": updated,
    }
    if hit is False:
        return Item(**common)
    return MemorySearchItem(
        **common,
        score=None if hit is None else _similarity(hit),
        record_id=record.id,
        memory_score=None if hit is None else hit.score,
    )
