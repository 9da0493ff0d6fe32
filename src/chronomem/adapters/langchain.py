"""A LangChain retriever over chronomem (extra ``langgraph``, which brings ``langchain-core``).

Each query is a read-only ``peek`` by default (``touch=True`` makes it a ``recall`` that marks
what it returns as accessed); documents carry the record's text and, in ``metadata``, its id,
agent, kind, score, dates and lifecycle status, so a chain can cite what it used and show what
was superseded.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from chronomem.model.record import Hit

__all__ = ["ChronomemRetriever"]


class ChronomemRetriever(BaseRetriever):
    """``memory``: a :class:`~chronomem.Memory` or :class:`~chronomem.client.Client`; the other
    fields are :meth:`~chronomem.Memory.recall`'s."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Any
    agent: str | None = None
    agents: list[str] | None = None
    k: int = 8
    preset: str | None = None
    include_history: bool = False
    touch: bool = False

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        """``invoke(query, k=..., ...)``: keywords given to the call override the retriever's
        fields for that call (``k``, ``agent``, ``agents``, ``preset``, ``include_history``)."""
        unknown = set(kwargs) - _PER_CALL
        if unknown:
            raise TypeError(
                f"unexpected argument(s) {sorted(unknown)}; a call takes {sorted(_PER_CALL)}"
            )
        chosen = {name: getattr(self, name) for name in _PER_CALL} | kwargs
        read = self.memory.recall if self.touch else self.memory.peek
        hits = read(query, **chosen)
        return [_document(hit) for hit in hits]


_PER_CALL = frozenset({"agent", "agents", "k", "preset", "include_history"})


def _document(hit: Hit) -> Document:
    r = hit.record
    return Document(
        page_content=r.text,
        id=r.id,
        metadata={
            "id": r.id, "agent": r.agent, "holders": list(hit.holders or (r.agent,)),
            "kind": r.kind.value, "score": hit.score, "importance": r.importance,
            "occurred_at": r.occurred_at.isoformat(), "recorded_at": r.recorded_at.isoformat(),
            "status": r.status.value, "superseded_by": r.superseded_by,
        },
    )  # fmt: skip
