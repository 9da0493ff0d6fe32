"""Reflection (DESIGN §5): focal questions, evidence, insights with validated citations, stored as
``reflection`` records in one transaction — or a :class:`ReflectionError` and nothing stored. The
prompts and the answer validation are ``reflection/``."""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from datetime import datetime
from typing import Any, TypeVar

import numpy as np

from chronomem.arrays import unit_vector
from chronomem.checks import flag
from chronomem.config import ReflectionConfig
from chronomem.engine import read, write
from chronomem.engine.handle import Handle
from chronomem.errors import ConfigError, LLMError, ReflectionError
from chronomem.llm.answers import ask
from chronomem.llm.base import LLMClient
from chronomem.model.reflection import ReflectionResult
from chronomem.reflection.prompts import (
    INSIGHTS_SCHEMA,
    QUESTIONS_SCHEMA,
    insights_prompt,
    questions_prompt,
)
from chronomem.reflection.validate import (
    Insight,
    validate_insights,
    validate_questions,
)
from chronomem.retrieval.options import ReadOptions
from chronomem.retrieval.recall import recent
from chronomem.text import normalise_text

__all__ = ["ReflectionResult", "auto_reflect", "is_due", "reflect"]

_T = TypeVar("_T")


def is_due(h: Handle, agent: str) -> bool:
    """Whether the agent's accumulated importance reached the threshold (the paper: 150)."""
    return h.store.accumulated_importance(h.space, agent) >= h.reflection.threshold


def reflect(
    h: Handle,
    agent: str,
    *,
    now: datetime,
    llm: LLMClient | None,
    as_of: datetime | None,
    touch: bool | None,
    config: ReflectionConfig | None,
) -> ReflectionResult:
    """Reflect now (see :meth:`Memory.reflect`)."""
    cfg = config or h.reflection
    client = llm or h.llm
    if client is None:
        raise ConfigError("reflect needs an LLM: pass llm=, or Memory.open(..., llm=...)")
    if not isinstance(client, LLMClient):
        raise ConfigError(f"llm must be an LLMClient (with complete()); got {client!r}")
    if not isinstance(cfg, ReflectionConfig):
        raise ConfigError(f"config must be a ReflectionConfig; got {cfg!r}")
    if touch is not None:
        flag(touch, "touch")
    at = now if as_of is None else as_of
    statements = recent(h.index, h.store, h.space, agent, at, cfg.recent)
    if not statements:
        raise ReflectionError(f"{agent} has no memories visible at {at} to reflect on")
    calls = [0]
    questions = ask(
        client,
        questions_prompt(agent, [r.text for r in statements], cfg.questions),
        QUESTIONS_SCHEMA,
        lambda answer: validate_questions(answer, limit=cfg.questions),
        cfg.attempts,
        calls,
        what="reflection",
        error=ReflectionError,
    )
    options = ReadOptions(
        agents=(agent,), k=cfg.evidence_k, as_of=at, touch=cfg.touch if touch is None else touch
    )
    items: list[dict[str, Any]] = []
    known: set[str] = set()
    for question in questions:
        hits = read.recall_many(h, [question], None, options, now=now)[0]
        evidence = [hit.record for hit in hits if hit.record.recorded_at <= at]
        if not evidence:
            continue

        def check(answer: Any, count: int = len(evidence)) -> list[Insight]:
            return validate_insights(answer, statements=count, limit=cfg.insights, known=known)

        insights = ask(
            client,
            insights_prompt(agent, question, [r.text for r in evidence], cfg.insights),
            INSIGHTS_SCHEMA,
            check,
            cfg.attempts,
            calls,
            what="reflection",
            error=ReflectionError,
        )
        for insight in insights:
            known.add(normalise_text(insight.text))
            items.append(
                {
                    "text": insight.text,
                    "agent": agent,
                    "kind": "reflection",
                    "evidence": [evidence[i].id for i in insight.citations],
                    "metadata": {"question": question},
                }
            )
    if not items:
        raise ReflectionError(f"no evidence was found for any of {agent}'s focal questions")
    _add_support(h, items, cfg)
    results = write.write(
        h,
        items,
        now=h.now(),
        actor=f"reflection:{client.model}",
        after=lambda: h.store.set_accumulated_importance(h.space, agent, 0.0),
    )
    records = h.records([r.id for r in results if r.id])
    return ReflectionResult(
        agent=agent, records=tuple(records), questions=tuple(questions), calls=calls[0]
    )


def auto_reflect(h: Handle, agents: Iterable[str], *, now: datetime) -> None:
    """After a write (opt-in, ``ReflectionConfig.auto`` with an LLM): agents over the threshold
    reflect; a failure warns and leaves their accumulated importance for the next write."""
    if not h.reflection.auto or h.llm is None:
        return
    for agent in sorted(set(agents)):
        if not is_due(h, agent):
            continue
        try:
            reflect(h, agent, now=now, llm=None, as_of=None, touch=None, config=None)
        except (ReflectionError, LLMError) as exc:
            warnings.warn(
                f"auto-reflection for {agent} failed and will be retried: {exc}",
                RuntimeWarning,
                stacklevel=3,
            )


def _add_support(h: Handle, items: list[dict[str, Any]], cfg: ReflectionConfig) -> None:
    """Support per citation: the cosine between the insight and each cited record (DESIGN §5: a
    citation that parses is not yet one that supports). Needs the embedder; insights whose mean
    support is below ``cfg.weak_support`` are marked ``weak_support``."""
    if h.embedder is None:
        return
    vectors = h.embedder.embed([i["text"] for i in items])
    for item, vector in zip(items, vectors, strict=True):
        unit = unit_vector(vector)
        support = []
        for cited in item["evidence"]:
            other = h.store.get_embedding(h.space, cited)
            support.append(None if other is None else round(float(unit @ unit_vector(other)), 4))
        known = [s for s in support if s is not None]
        item["embedding"] = vector
        item["metadata"]["support"] = support
        if known:
            item["metadata"]["weak_support"] = bool(np.mean(known) < cfg.weak_support)
