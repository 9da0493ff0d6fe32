"""The LangGraph store behaves as LangGraph's own reference store does (``InMemoryStore``, run
side by side on the same operations: put, get, search with filters and paging, delete,
list_namespaces with prefixes, suffixes, wildcards and depth, batch, and the async twins), over
``Memory`` and over the HTTP ``Client`` — and adds chronomem's lifecycle: a put on an existing key
supersedes, a delete closes what has a history, a search touches nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    PutOp,
    SearchItem,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from chronomem import Memory, SimClock
from chronomem.adapters.langgraph import ChronomemStore, MemorySearchItem
from chronomem.client import Client

from ..conftest import T0
from ..server.service import running


@pytest.fixture(params=["memory", "client"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ChronomemStore]:
    db = tmp_path / "lg.db"
    if request.param == "memory":
        with Memory.open(db, embedder=None, clock=SimClock(T0)) as mem:
            yield ChronomemStore(mem)
        return
    with running(db, embedder=None) as (url, _), Client(url) as client:
        yield ChronomemStore(client)


def _items(found: list[Any]) -> set[tuple[Any, ...]]:
    return {(i.namespace, i.key, tuple(sorted(i.value.items()))) for i in found}


def _script(s: BaseStore) -> dict[str, Any]:
    out: dict[str, Any] = {}
    s.put(("users", "ada"), "prefs", {"text": "likes tea", "lang": "en", "n": 1})
    s.put(("users", "ada"), "job", {"text": "is an engineer", "n": 2})
    s.put(("users", "bob"), "prefs", {"text": "likes coffee", "lang": "fr", "n": 3})
    s.put(("users", "bob", "work"), "desk", {"text": "sits by the window", "n": 4})
    s.put(("docs",), "readme", {"content": "how to install", "n": 0})
    out["get"] = s.get(("users", "ada"), "prefs").value  # type: ignore[union-attr]
    out["missing"] = s.get(("users", "ada"), "nope")
    s.put(("users", "ada"), "prefs", {"text": "likes green tea", "lang": "en", "n": 5})
    out["updated"] = s.get(("users", "ada"), "prefs").value  # type: ignore[union-attr]
    out["all users"] = _items(s.search(("users",), limit=100))
    out["en"] = _items(s.search(("users",), filter={"lang": "en"}, limit=100))
    out["n>2"] = _items(s.search(("users",), filter={"n": {"$gt": 2}}, limit=100))
    out["ada only"] = _items(s.search(("users", "ada"), limit=100))
    out["page sizes"] = [len(s.search(("users",), limit=2, offset=o)) for o in (0, 2, 4)]
    s.delete(("users", "bob"), "prefs")
    out["deleted"] = s.get(("users", "bob"), "prefs")
    out["after delete"] = _items(s.search(("users",), limit=100))
    out["namespaces"] = s.list_namespaces()
    out["prefix"] = s.list_namespaces(prefix=("users",))
    out["suffix"] = s.list_namespaces(suffix=("ada",))
    out["wildcard"] = s.list_namespaces(prefix=("users", "*"))
    out["depth"] = s.list_namespaces(max_depth=1)
    put, got, found, spaces = s.batch(
        [
            PutOp(("docs",), "faq", {"content": "questions"}),
            GetOp(("docs",), "faq"),
            SearchOp(("docs",), limit=10),
            ListNamespacesOp(limit=10),
        ]
    )
    out["batch"] = [put, got, _items(found), spaces]  # type: ignore[arg-type]
    out["after batch"] = s.get(("docs",), "faq").value  # type: ignore[union-attr]
    return out


async def _async_script(s: BaseStore) -> dict[str, Any]:
    await s.aput(("team",), "goal", {"text": "ship the release", "q": 1})
    await s.aput(("team",), "goal", {"text": "ship the release on Friday", "q": 2})
    got = await s.aget(("team",), "goal")
    found = _items(await s.asearch(("team",), limit=10))
    spaces = await s.alist_namespaces(prefix=("team",))
    await s.adelete(("team",), "goal")
    return {
        "value": got.value if got else None,
        "found": found,
        "spaces": spaces,
        "gone": await s.aget(("team",), "goal"),
    }


def test_it_behaves_as_langgraphs_reference_store(store: ChronomemStore) -> None:
    reference = _script(InMemoryStore())
    ours = _script(store)
    for part, value in reference.items():
        assert ours[part] == value, part


def test_the_async_interface_behaves_the_same(store: ChronomemStore) -> None:
    assert asyncio.run(_async_script(store)) == asyncio.run(_async_script(InMemoryStore()))


def test_a_put_supersedes_and_a_delete_closes_what_has_a_history(tmp_path: Path) -> None:
    clock = SimClock(T0)
    with Memory.open(tmp_path / "lc.db", embedder=None, clock=clock) as mem:
        lg = ChronomemStore(mem)
        lg.put(("users", "ada"), "city", {"text": "lives in Paris"})
        first = lg.get(("users", "ada"), "city")
        clock.advance(timedelta(days=30))
        lg.put(("users", "ada"), "city", {"text": "lives in Lyon"})
        now = lg.get(("users", "ada"), "city")
        assert now is not None
        assert first is not None
        assert now.created_at == first.created_at
        assert now.updated_at > first.updated_at
        [record] = mem.records(agent="users.ada", domain="city")
        assert [r.text for r in mem.history(record.id)] == ["lives in Paris", "lives in Lyon"]
        then = mem.peek("where does ada live", agent="users.ada", as_of=T0 + timedelta(days=1))
        assert [h.record.text for h in then] == ["lives in Paris"]
        before = mem.get(record.id).last_accessed_at
        clock.advance(timedelta(days=1))
        assert lg.search(("users",), query="Lyon")[0].value == {"text": "lives in Lyon"}
        assert mem.get(record.id).last_accessed_at == before  # a search is read-only
        lg.delete(("users", "ada"), "city")  # part of a chain: closed, not erased
        assert lg.get(("users", "ada"), "city") is None
        assert mem.get(record.id).status.value == "closed"
        lg.put(("users", "ada"), "pet", {"text": "has a cat"})
        [pet] = mem.records(agent="users.ada", domain="pet")
        lg.delete(("users", "ada"), "pet")  # no history: forgotten
        assert mem.records(agent="users.ada", domain="pet", include_history=True) == []
        assert [e.action for e in mem.audit(pet.id)] == ["forget"]


class Letters(Embeddings):
    """A deterministic LangChain-style embedder for the index tests: letter counts."""

    def _one(self, text: str) -> list[float]:
        return [float(text.lower().count(c)) + 0.01 for c in "abcdefghijklmnopqrstuvwxyz"]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._one(text)


def _cosine(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_a_query_search_ranks_by_similarity_and_keeps_unindexed_items(tmp_path: Path) -> None:
    """As LangGraph's stores: the score is the cosine of the query and the best of the item's
    indexed fields, items are ordered by it, and an item put with index=False stays reachable
    after the scored ones with no score; chronomem's own score rides along."""
    embed = Letters()
    with Memory.open(tmp_path / "q.db", embedder=None) as mem:
        lg = ChronomemStore(mem, index={"dims": 26, "embed": embed, "fields": ["title", "body"]})
        lg.put(("notes",), "a", {"title": "zebra", "body": "the deploy happens on Fridays"})
        lg.put(("notes",), "b", {"title": "lunch", "body": "at noon"})
        lg.put(("notes",), "c", {"title": "deploy secrets", "body": "rotate"}, index=False)
        found = lg.search(("notes",), query="deploy fridays", limit=10)
        assert [i.key for i in found] == ["a", "b", "c"]
        query = embed.embed_query("deploy fridays")
        best_a = max(
            _cosine(query, embed._one(t)) for t in ("zebra", "the deploy happens on Fridays")
        )
        assert found[0].score == pytest.approx(best_a, abs=1e-5)  # max over the fields
        assert found[0].score > found[1].score
        assert found[2].score is None
        assert all(isinstance(i, MemorySearchItem) and i.memory_score is not None for i in found)
        assert lg.search(("notes",), query="deploy", offset=2, limit=5)[0].key == "c"
        assert isinstance(lg.get(("notes",), "a"), Item)
        assert not isinstance(lg.get(("notes",), "a"), SearchItem)


def test_keys_are_exact_and_a_narrow_filter_reaches_past_a_thousand_items(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "k.db", embedder=None) as mem:
        lg = ChronomemStore(mem, kind="fact")  # the write gate applies to facts: puts skip it
        lg.put(("u",), "Key", {"text": "same words"})
        lg.put(("u",), "key", {"text": "same words"})
        lg.put(("u",), " key ", {"text": "same words"})
        assert lg.get(("u",), "Key").value == {"text": "same words"}  # type: ignore[union-attr]
        assert {i.key for i in lg.search(("u",), limit=10)} == {"Key", "key", " key "}
        lg.delete(("u",), "key")
        assert lg.get(("u",), "key") is None
        assert lg.get(("u",), "Key") is not None
        lg.batch([PutOp(("many",), f"k{i}", {"text": f"item {i}", "n": i}) for i in range(1500)])
        narrow = lg.search(("many",), query="item", filter={"n": 7}, limit=5)
        assert [i.key for i in narrow] == ["k7"]
        deep = lg.search(("many",), query="item", offset=1200, limit=10)
        assert len(deep) == 10
        listed = lg.search(("many",), filter={"n": {"$gte": 1495}}, limit=10)
        assert sorted(i.key for i in listed) == [f"k{i}" for i in range(1495, 1500)]


def test_concurrent_puts_to_one_key_leave_one_item(tmp_path: Path) -> None:
    """Parallel graph nodes writing one key, as threads and as gathered coroutines: no error,
    one open item, every version in its history."""
    with Memory.open(tmp_path / "c.db", embedder=None) as mem:
        lg = ChronomemStore(mem)
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(lambda i: lg.put(("t",), "k", {"text": f"v{i}"}), range(40)))

        async def gathered() -> None:
            await asyncio.gather(*(lg.aput(("t",), "k", {"text": f"w{i}"}) for i in range(40)))

        asyncio.run(gathered())
        [item] = mem.records(agent="t", domain="k")
        assert len(lg.search(("t",), limit=100)) == 1
        assert len(mem.history(item.id)) >= 2


def test_deliberate_differences_from_the_sql_stores(tmp_path: Path) -> None:
    """docs/agents.md: any filter key is data (LangGraph's SQLite store refuses keys that are not
    identifiers, to keep them out of its SQL), and the sync methods work on an event loop's
    thread (its async store refuses them there)."""
    with Memory.open(tmp_path / "d.db", embedder=None) as mem:
        lg = ChronomemStore(mem)
        lg.put(("d",), "x", {"a'); DROP TABLE records; --": 1, "access-level": "public"})
        assert [i.key for i in lg.search(("d",), filter={"a'); DROP TABLE records; --": 1})] == [
            "x"
        ]

        async def inside_a_loop() -> Any:
            lg.put(("d",), "y", {"text": "sync on the loop"})
            return lg.get(("d",), "y")

        assert asyncio.run(inside_a_loop()) is not None
        assert mem.stats()["records"] == 2


def test_a_label_with_a_period_cannot_reach_another_namespace(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "n.db", embedder=None) as mem:
        lg = ChronomemStore(mem)
        lg.put(("a", "b"), "k", {"text": "secret of a.b"})
        with pytest.raises(InvalidNamespaceError):
            lg.batch([GetOp(("a.b",), "k")])


def test_a_large_value_is_stored_whole(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "big.db", embedder=None) as mem:
        lg = ChronomemStore(mem)
        value = {"text": "w " * 150_000, "n": 1}  # more text than a record holds
        lg.put(("docs",), "big", value)
        assert lg.get(("docs",), "big").value == value  # type: ignore[union-attr]


def test_a_narrow_filter_finds_every_item_it_selects(store: ChronomemStore) -> None:
    """Filters narrow the read before scoring (issue 28): the six "blue" items among 1,500 (and
    the wider selections of the other filters) come back as InMemoryStore returns them, by search
    and by listing — and values that only LangGraph's comparisons equate (true and 1, "7" and 7)
    still pass the narrowing."""
    reference = InMemoryStore()
    values = [
        {"text": f"note {i} about the weather", "team": "red" if i % 250 != 3 else "blue",
         "score": i % 10 if i % 7 else str(i % 10), "flag": i % 2 == 0 if i % 3 else i % 2}
        for i in range(1_500)
    ]  # fmt: skip
    for target in (store, reference):
        target.batch([PutOp(("notes",), f"k{i}", v) for i, v in enumerate(values)])
    filters: list[dict[str, Any]] = [
        {"team": "blue"},
        {"team": "blue", "score": {"$gte": 3}},
        {"flag": True, "score": {"$lt": 1}},
        {"score": {"$gt": 2.5}, "team": {"$ne": "red"}},
    ]
    for f in filters:
        ours = store.search(("notes",), query="weather", filter=f, limit=2_000)
        theirs = reference.search(("notes",), filter=f, limit=2_000)
        assert {i.key for i in ours} == {i.key for i in theirs}, f
        assert ours, f
        listed = store.search(("notes",), filter=f, limit=2_000)
        assert {i.key for i in listed} == {i.key for i in theirs}, f


def test_an_item_lives_its_ttl_refreshed_by_reads_and_stays_in_history(tmp_path: Path) -> None:
    """LangGraph's TTL semantics on a settable clock: ``default_ttl`` and a put's own ``ttl``
    (minutes), refreshed by ``get`` and ``search`` (``refresh_on_read``) and not by a read that
    says ``refresh_ttl=False``; an expired item is gone for every read before any sweep, its
    values stay in history, and ``sweep_ttl`` stores the close once."""
    clock = SimClock(T0)
    with Memory.open(tmp_path / "ttl.db", embedder=None, clock=clock) as mem:
        lg = ChronomemStore(mem, ttl={"default_ttl": 10, "refresh_on_read": True})
        assert lg.supports_ttl
        ns = ("users", "ada")
        lg.put(ns, "mood", {"text": "sunny"})  # the default: ten minutes
        lg.put(ns, "plan", {"text": "swim"}, ttl=2)
        lg.put(ns, "name", {"text": "Ada"}, ttl=None)  # never expires
        clock.advance(timedelta(minutes=8))
        assert lg.get(ns, "mood") is not None  # refreshed: ten minutes from now
        assert lg.get(ns, "plan") is None  # expired at two minutes
        clock.advance(timedelta(minutes=8))
        assert {i.key for i in lg.search(ns)} == {"mood", "name"}  # mood refreshed again
        clock.advance(timedelta(minutes=9))
        assert lg.get(ns, "mood", refresh_ttl=False) is not None
        clock.advance(timedelta(minutes=2))  # 11 minutes after the last refresh
        assert lg.get(ns, "mood") is None
        assert {i.key for i in lg.search(ns)} == {"name"}
        assert lg.sweep_ttl() == 2
        assert lg.sweep_ttl() == 0
        [plan] = mem.records(agent="users.ada", domain="plan", include_history=True)
        assert (plan.closed_reason, plan.text) == ("expired", "swim")
        lg.put(ns, "plan", {"text": "run"})  # a new item under the expired key
        assert lg.get(ns, "plan").value == {"text": "run"}  # type: ignore[union-attr]
        assert asyncio.run(lg.asweep_ttl()) == 0
