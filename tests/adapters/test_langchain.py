"""The LangChain retriever returns chronomem's ranking as documents, read-only by default."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.retrievers import BaseRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests

from chronomem import Memory, SimClock
from chronomem.adapters.langchain import ChronomemRetriever

from ..conftest import T0


def test_documents_carry_the_ranking_and_the_lifecycle(tmp_path: Path) -> None:
    clock = SimClock(T0)
    with Memory.open(tmp_path / "lc.db", embedder=None, clock=clock) as mem:
        old = mem.remember("deploys happen on Thursdays", agent="ops", kind="fact").id
        assert old is not None
        clock.advance(timedelta(days=1))
        new = mem.supersede(old, "deploys happen on Fridays").id
        mem.remember("lunch is at noon", agent="ops")
        retriever = ChronomemRetriever(memory=mem, agent="ops", k=3)
        assert isinstance(retriever, BaseRetriever)
        before = mem.get(str(new)).last_accessed_at
        clock.advance(timedelta(hours=2))
        docs = retriever.invoke("when do deploys happen?")
        assert docs[0].page_content == "deploys happen on Fridays"
        assert docs[0].metadata["id"] == new
        assert docs[0].metadata["status"] == "open"
        assert old not in {d.metadata["id"] for d in docs}
        assert mem.get(str(new)).last_accessed_at == before  # peek: read-only
        history = ChronomemRetriever(memory=mem, agent="ops", include_history=True).invoke(
            "deploys Thursdays"
        )
        closed = next(d for d in history if d.metadata["id"] == old)
        assert closed.metadata["superseded_by"] == new
        touching = ChronomemRetriever(memory=mem, agent="ops", k=1, touch=True)
        touching.invoke("when do deploys happen?")
        assert mem.get(str(new)).last_accessed_at == clock.now()


class TestChronomemRetrieverStandard(RetrieversIntegrationTests):
    """langchain-tests' standard retriever suite (installed from PyPI, not copied), over a real
    SQLite store holding a small fixed corpus."""

    @pytest.fixture(autouse=True)
    def _store(self, tmp_path: Path) -> Iterator[None]:
        with Memory.open(tmp_path / "lc.db", embedder=None, clock=SimClock(T0)) as mem:
            mem.remember_many(
                [f"deploy note {i}: releases go out on day {i}" for i in range(6)], agent="ops"
            )
            self._memory = mem
            yield

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return ChronomemRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"memory": self._memory, "agent": "ops"}

    @property
    def retriever_query_example(self) -> str:
        return "when do releases go out?"


def test_a_call_s_keywords_override_the_retriever_s(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "lc.db", embedder=None, clock=SimClock(T0)) as mem:
        mem.remember_many(["tea at four", "tea at five", "coffee at six"], agent="a")
        mem.remember("tea in the garden", agent="b")
        retriever = ChronomemRetriever(memory=mem, agent="a", k=3)
        assert len(retriever.invoke("tea", k=1)) == 1
        assert {d.metadata["agent"] for d in retriever.invoke("tea", agent="b")} == {"b"}
        with pytest.raises(TypeError, match="unexpected argument"):
            retriever.invoke("tea", top_k=2)
