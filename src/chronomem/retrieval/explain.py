"""Why a hit scored what it did (DESIGN §2, "every result carries a breakdown"): the
:class:`~chronomem.model.record.Breakdown` of one row of a read, from the stages' state."""

from __future__ import annotations

import json
from datetime import timedelta

import numpy as np

from chronomem.analysis.scripts import LANGUAGES, reads
from chronomem.graph.boost import association
from chronomem.model.record import Breakdown, CausalPart
from chronomem.retrieval.columns import Columns
from chronomem.retrieval.state import ReadState
from chronomem.text import asks_for_every_piece

__all__ = ["breakdown", "speaker_of"]


def breakdown(state: ReadState, row: int) -> Breakdown:
    """The breakdown of ``row`` (a hit's first row) after every stage."""
    q, c, scores = state.q, state.q.config, state.scored
    parts = scores.components(row)
    outside = state.chosen is not None and not state.chosen[row]
    return Breakdown(
        preset=c.name,
        normalisation=c.normalisation.value,
        relevance_mode=scores.relevance_mode.value,
        relevance_dense=None if outside else parts.dense,
        preselected=None if state.chosen is None else not outside,
        relevance_lexical=parts.lexical,
        speaker=speaker_of(state.cols, row) if parts.speaker else None,
        cues=_cues(state),
        unread_language=state.coverage.language_not_read(row),
        filter=None if q.filter is None else q.filter.describe(),
        source=_source(state.cols, row),
        relevance=parts.relevance,
        recency_mode=c.recency.value,
        age=timedelta(microseconds=parts.age_us),
        recency_raw=parts.recency_raw,
        recency=parts.recency,
        importance_raw=parts.importance_raw,
        importance=parts.importance,
        weights=c.weights,
        episodic=parts.episodic,
        factors={**state.life.at(row), **state.versions.get(row, {})},
        final=parts.final,
        causal=_causal_part(state, row),
    )


def speaker_of(cols: Columns, row: int) -> str | None:
    """Who says the record of ``row``, as reads see it (``None``: nobody named)."""
    part = int(np.searchsorted(cols.offsets, row, side="right")) - 1
    codes, names = cols.arrays[part].speakers()
    code = int(codes[row - int(cols.offsets[part])])
    return None if code < 0 else names[code]


def _source(cols: Columns, row: int) -> str | None:
    """Where an extracted memory came from (``engine/extract.py`` writes it in the metadata):
    the model, and the turns it cites."""
    part = int(np.searchsorted(cols.offsets, row, side="right")) - 1
    raw = cols.arrays[part].metadata[row - int(cols.offsets[part])]
    if raw is None or "extracted_by" not in raw:
        return None
    metadata = json.loads(raw)
    model, turns = metadata.get("extracted_by"), metadata.get("from_turns") or []
    if not isinstance(model, str):
        return None
    cited = ", ".join(str(t) for t in turns)
    return f"extracted by {model} from turn{'s' if len(turns) != 1 else ''} {cited}"


def _causal_part(state: ReadState, row: int) -> CausalPart | None:
    """The crisis's part of the score: the event that gave the largest boost and how the
    record is associated with it (``None`` without a crisis)."""
    crisis, boost = state.q.crisis, state.boost
    if crisis is None or boost is None:
        return None
    causal = state.q.config.causal
    j = boost.event(row)
    if j < 0:
        return CausalPart(boost=0.0, fusion=causal.fusion.value, weight=causal.weight)
    event = crisis.events[j]
    cols = state.cols
    part = int(np.searchsorted(cols.offsets, row, side="right")) - 1
    arrays, local = cols.arrays[part], row - int(cols.offsets[part])
    vector = None if arrays.emb is None else arrays.emb[local]
    if crisis.languages is not None and not reads(
        crisis.languages, LANGUAGES[int(arrays.language[local])]
    ):
        vector = None  # the model does not read the record's language (crisis.boost_rows)
    value, via = association(
        vector, arrays.event_ids[local], event, threshold=crisis.threshold, full=crisis.full
    )
    return CausalPart(
        boost=float(boost.value[row]),
        fusion=causal.fusion.value,
        weight=causal.weight,
        event_id=event.event_id,
        association=value,
        via=None if via is None else via.value,
        depth=event.depth or None,
        path_strength=event.strength,
        effective_strength=event.effective,
        fallback=event.fallback,
        path=event.path,
        gate=None if not event.fallback or boost.gate is None else float(boost.gate[row]),
    )


def _cues(state: ReadState) -> dict[str, str]:
    """What the question's words made the read favour, for every hit of the read."""
    q = state.q
    out = {}
    if q.switched_to is not None:
        out["model"] = (
            f"the store switched to {q.switched_to} after this handle opened with another "
            "model: relevance from the words; reopen with the new model"
        )
    unread_question = state.coverage.question
    if unread_question is not None:
        out["language"] = (
            f"the embedding model does not read this question's language ({unread_question}): "
            "relevance from its words"
        )
    if state.speaker is not None:
        out["speaker"] = state.speaker.reason
    if state.life.when is not None:
        out["time"] = state.life.when.reason()
    every = asks_for_every_piece(q.text)
    versions = q.config.versions
    if every is not None and versions is not None and versions.spread and q.ranks_versions:
        out["every_piece"] = f'asks for every piece ("{every}"): each session\'s best first'
    return out
