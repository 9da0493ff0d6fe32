"""The LangGraph store behaves as LangGraph's own reference store does (``InMemoryStore``, run
side by side on the same operations: put, get, search with filters and paging, delete,
list_namespaces with prefixes, suffixes, wildcards and depth, batch, and the async twins), over
``Memory`` and over the HTTP ``Client`` — and adds chronomem's lifecycle: a put on an existing key
supersedes, a delete closes what has a history, a search touches nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import BaseStore, GetOp, ListNamespacesOp, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from chronomem import Memory, SimClock
from chronomem.adapters.langgraph import ChronomemStore
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


def test_a_query_search_ranks_by_meaning_and_skips_unindexed_items(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "q.db", embedder=None) as mem:
        lg = ChronomemStore(mem)
        lg.put(("notes",), "a", {"text": "the deploy happens on Fridays"})
        lg.put(("notes",), "b", {"text": "lunch is at noon"})
        lg.put(("notes",), "c", {"text": "deploy secrets rotate monthly"}, index=False)
        found = lg.search(("notes",), query="when is the deploy?")
        assert [i.key for i in found] == ["a", "b"]  # ranked, as LangGraph's stores do
        assert found[0].score is not None
        assert found[1].score is not None
        assert found[0].score > found[1].score
