"""The LangChain retriever returns chronomem's ranking as documents, read-only by default."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from langchain_core.retrievers import BaseRetriever

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
