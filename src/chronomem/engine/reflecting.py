"""Reflection (DESIGN §5): focal questions, evidence, insights with validated citations, stored
as ``reflection`` records in one transaction — or a :class:`ReflectionError` and nothing stored."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import numpy as np

from chronomem.clock import require_aware
from chronomem.config import ReflectionConfig
from chronomem.engine.causal import _Causal
from chronomem.errors import ConfigError, LLMError, LLMResponseError, ReflectionError
from chronomem.llm.base import LLMClient, Message, parse_json
from chronomem.model.record import Record, WriteResult
from chronomem.reflection.prompts import (
    INSIGHTS_SCHEMA,
    QUESTIONS_SCHEMA,
    insights_prompt,
    questions_prompt,
)
from chronomem.reflection.validate import (
    AnswerError,
    Insight,
    validate_insights,
    validate_questions,
)
from chronomem.retrieval.recall import recent
from chronomem.text import normalise_text
from chronomem.writes import require_text

__all__ = ["ReflectionResult"]

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True, kw_only=True)
class ReflectionResult:
    """What a reflection stored: the new ``reflection`` records (each citing its evidence), the
    focal questions, and how many model calls it took (retries included)."""

    agent: str
    records: tuple[Record, ...]
    questions: tuple[str, ...]
    calls: int


class _Reflecting(_Causal):
    # -- reflection (DESIGN §5) ---------------------------------------------------------------
    def accumulated_importance(self, agent: str) -> float:
        """The importance of the agent's records (reflections excepted) since it last reflected;
        stored, so a restart keeps it."""
        with self._lock:
            self._require_open()
            return self._store.accumulated_importance(self._space, require_text(agent, "agent"))

    def maybe_reflect(
        self, agent: str, *, llm: LLMClient | None = None, as_of: datetime | None = None
    ) -> ReflectionResult | None:
        """Reflect if the agent's accumulated importance reached the threshold (the paper: 150);
        otherwise return ``None``."""
        if self.accumulated_importance(agent) < self._reflection.threshold:
            return None
        return self.reflect(agent, llm=llm, as_of=as_of)

    def reflect(
        self,
        agent: str,
        *,
        llm: LLMClient | None = None,
        as_of: datetime | None = None,
        touch: bool | None = None,
        config: ReflectionConfig | None = None,
    ) -> ReflectionResult:
        """Reflect now (Park et al. 2023 §4.2): ask for focal questions about the agent's recent
        records, retrieve evidence for each, ask for insights citing that evidence by number,
        validate every answer (citations in range, at least one per insight, no repeats, no more
        than asked) and retry with the reasons when it fails. The insights are stored in one
        transaction as ``reflection`` records whose ``evidence`` holds the cited ids (depth 1 +
        the deepest cited record), each with its question and support scores in ``metadata``;
        the agent's accumulated importance is reset in the same transaction.

        Args:
            llm: the model (default: the one given to :meth:`open`).
            as_of: the instant reflected at (default now); only records visible then are used.
            touch: whether evidence retrieval touches what it returns (default: the config's,
                read-only).

        Raises:
            ConfigError: no LLM. ReflectionError: invalid answers after every retry, the model
            unreachable, or no records to reflect on — and nothing was stored.
        """
        agent = require_text(agent, "agent")
        cfg = config or self._reflection
        client = llm or self._llm
        if client is None:
            raise ConfigError("reflect needs an LLM: pass llm=, or Memory.open(..., llm=...)")
        at = require_aware(self._clock.now() if as_of is None else as_of, "as_of")
        statements = recent(self._index, self._store, self._space, agent, at, cfg.recent)
        if not statements:
            raise ReflectionError(f"{agent} has no memories visible at {at} to reflect on")
        calls = [0]
        questions = self._ask(
            client,
            questions_prompt(agent, [r.text for r in statements], cfg.questions),
            QUESTIONS_SCHEMA,
            lambda answer: validate_questions(answer, limit=cfg.questions),
            cfg.attempts,
            calls,
        )
        items: list[dict[str, Any]] = []
        known: set[str] = set()
        for question in questions:
            hits = self.recall(
                question, agent=agent, k=cfg.evidence_k, as_of=at,
                touch=cfg.touch if touch is None else touch,
            )  # fmt: skip
            evidence = [h.record for h in hits if h.record.recorded_at <= at]
            if not evidence:
                continue
            count = len(evidence)

            def check(answer: Any, count: int = count) -> list[Insight]:
                return validate_insights(answer, statements=count, limit=cfg.insights, known=known)

            insights = self._ask(
                client,
                insights_prompt(agent, question, [r.text for r in evidence], cfg.insights),
                INSIGHTS_SCHEMA,
                check,
                cfg.attempts,
                calls,
            )
            for insight in insights:
                known.add(normalise_text(insight.text))
                cited = [evidence[i] for i in insight.citations]
                items.append(
                    {
                        "text": insight.text,
                        "agent": agent,
                        "kind": "reflection",
                        "evidence": [r.id for r in cited],
                        "metadata": {"question": question},
                    }
                )
        if not items:
            raise ReflectionError(f"no evidence was found for any of {agent}'s focal questions")
        self._add_support(items, cfg)
        results = self._write(
            items,
            progress=False,
            actor=f"reflection:{client.model}",
            reason=None,
            after=lambda: self._store.set_accumulated_importance(self._space, agent, 0.0),
        )
        records = self._store.get_records(self._space, [r.id for r in results if r.id])
        return ReflectionResult(
            agent=agent, records=tuple(records), questions=tuple(questions), calls=calls[0]
        )

    def _ask(
        self,
        llm: LLMClient,
        prompt: str,
        schema: Mapping[str, Any],
        validate: Callable[[Any], _T],
        attempts: int,
        calls: list[int],
    ) -> _T:
        """One validated answer, retrying with the model's own answer and what was wrong."""
        messages: list[Message] = [{"role": "user", "content": prompt}]
        reasons: list[str] = []
        for _ in range(attempts):
            calls[0] += 1
            try:
                text = llm.complete(messages, schema=schema)
            except LLMError as exc:
                raise ReflectionError(
                    f"reflection stopped, the model could not be used: {exc}",
                    reasons=(*reasons, str(exc)),
                ) from exc
            try:
                return validate(parse_json(text))
            except (LLMResponseError, AnswerError) as exc:
                reasons.append(str(exc))
                messages = [
                    *messages,
                    {"role": "assistant", "content": text},
                    {
                        "role": "user",
                        "content": f"That answer is invalid: {exc}. Answer again, with JSON only.",
                    },
                ]
        raise ReflectionError(
            f"reflection gave up after {attempts} invalid answers: " + " | ".join(reasons),
            reasons=tuple(reasons),
        )

    def _add_support(self, items: list[dict[str, Any]], cfg: ReflectionConfig) -> None:
        """Support per citation: the cosine between the insight and each cited record (DESIGN §5:
        a citation that parses is not yet one that supports). Needs the embedder; insights whose
        mean support is below ``cfg.weak_support`` are marked ``weak_support``."""
        if self._embedder is None:
            return
        vectors = self._embedder.embed([i["text"] for i in items])
        for item, vector in zip(items, vectors, strict=True):
            unit = vector / np.linalg.norm(vector)
            support = []
            for cited in item["evidence"]:
                other = self._store.get_embedding(self._space, cited)
                support.append(
                    None
                    if other is None
                    else round(float(unit @ (other / np.linalg.norm(other))), 4)
                )
            known = [s for s in support if s is not None]
            item["embedding"] = vector
            item["metadata"]["support"] = support
            if known:
                item["metadata"]["weak_support"] = bool(np.mean(known) < cfg.weak_support)

    def _after_write(self, results: Sequence[WriteResult], agents: set[str]) -> None:
        """Auto-reflect (opt-in): agents over the threshold reflect; a failure warns and leaves
        their accumulated importance for the next write."""
        if not self._reflection.auto or self._llm is None:
            return
        for agent in sorted(agents):
            try:
                self.maybe_reflect(agent)
            except (ReflectionError, LLMError) as exc:
                warnings.warn(
                    f"auto-reflection for {agent} failed and will be retried: {exc}",
                    RuntimeWarning,
                    stacklevel=3,
                )
