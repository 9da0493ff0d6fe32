"""The anchor importance scorer: the combination on fixed vectors, the defaults Memory.open
picks, and (slow) the real model ordering mundane below poignant memories."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from chronomem import (
    Anchor,
    EmbeddingImportance,
    HeuristicImportance,
    LLMImportance,
    Memory,
    ScriptedLLM,
    SimClock,
)
from chronomem.errors import ConfigError, EmbedderError, LLMResponseError
from chronomem.writing.anchors import (
    DEFAULT_ANCHORS,
    DEFAULT_CALIBRATION,
    AnchorCalibration,
    anchor_importance,
)

from ..conftest import FixedEmbedder

E = np.eye(4)
LEVELS = np.array([1.0, 9.0])
IDENTITY = AnchorCalibration(temperature=0.05, intercept=0.0, slope=1.0)


def test_the_nearest_anchor_dominates_and_weights_sum_to_one() -> None:
    anchors = E[:2]  # level 1 along e0, level 9 along e1
    vectors = np.stack([E[0], E[1], (E[0] + E[1]) / np.sqrt(2), E[2]])
    importance, weights = anchor_importance(vectors, anchors, LEVELS, IDENTITY)
    assert weights.sum(axis=1) == pytest.approx(np.ones(4))
    assert importance[0] == pytest.approx(1.0)  # softmax(20 vs 0): weight of e1 ≈ 2e-9
    assert importance[1] == pytest.approx(9.0)
    assert importance[2] == pytest.approx(5.0)  # equally near both: the mean level
    assert importance[3] == pytest.approx(5.0)  # near neither: the mean level too


def test_intercept_slope_rounding_and_clamping() -> None:
    vectors = np.stack([E[0], E[1], 0.8 * E[0] + 0.6 * E[1]])
    for calibration in (
        AnchorCalibration(temperature=0.3, intercept=-1.5, slope=1.3),
        AnchorCalibration(temperature=0.3, intercept=4.0, slope=1.0),
    ):
        got, weights = anchor_importance(vectors, E[:2], LEVELS, calibration)
        level = weights @ LEVELS
        assert 1 < level[2] < 5  # nearer the level-1 anchor
        expected = np.clip(np.round(calibration.intercept + calibration.slope * level, 1), 1, 10)
        assert got == pytest.approx(expected)
        assert np.all((got >= 1) & (got <= 10))
    clamped = AnchorCalibration(temperature=0.05, intercept=-1.5, slope=1.3)
    assert anchor_importance(vectors[:2], E[:2], LEVELS, clamped)[0].tolist() == [1.0, 10.0]


def test_batch_equals_one_at_a_time_and_anchor_order_does_not_matter() -> None:
    rng = np.random.default_rng(7)
    anchors = rng.normal(size=(6, 4))
    anchors /= np.linalg.norm(anchors, axis=1, keepdims=True)
    levels = np.array([1.0, 1.0, 5.0, 9.0, 9.0, 3.0])
    vectors = rng.normal(size=(10, 4))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    batch = anchor_importance(vectors, anchors, levels, DEFAULT_CALIBRATION)[0]
    single = [
        anchor_importance(v[None], anchors, levels, DEFAULT_CALIBRATION)[0][0] for v in vectors
    ]
    assert batch == pytest.approx(np.array(single))
    order = rng.permutation(6)
    permuted = anchor_importance(vectors, anchors[order], levels[order], DEFAULT_CALIBRATION)[0]
    assert permuted == pytest.approx(batch)


def _two_anchor_scorer() -> EmbeddingImportance:
    embedder = FixedEmbedder(
        {"brushing teeth": E[0], "a loved one died": E[1], "grief": 0.6 * E[1] + 0.8 * E[2]},
        dim=4,
    )
    anchors = (Anchor(text="brushing teeth", level=1), Anchor(text="a loved one died", level=9))
    return EmbeddingImportance(embedder, anchors=anchors, calibration=IDENTITY)


def test_explain_names_the_anchors_that_drove_the_score() -> None:
    scorer = _two_anchor_scorer()
    explanation = scorer.explain("grief", top=2)
    assert [d.anchor.text for d in explanation.drivers] == ["a loved one died", "brushing teeth"]
    assert explanation.drivers[0].cosine == pytest.approx(0.6)
    assert explanation.drivers[1].cosine == pytest.approx(0.0)
    assert sum(d.weight for d in explanation.drivers) == pytest.approx(1.0)
    assert explanation.level == pytest.approx(
        sum(d.weight * d.anchor.level for d in explanation.drivers)
    )
    assert explanation.importance == scorer.score(["grief"])[0] == round(explanation.level, 1)


def test_score_embeds_in_one_batch_like_score_vectors() -> None:
    scorer = _two_anchor_scorer()
    texts = ["grief", "brushing teeth", "something else"]
    assert scorer.score(texts) == scorer.score_vectors(scorer.embedder.embed(texts))
    assert scorer.score([]) == []


def test_bad_anchors_calibration_and_vectors_are_refused() -> None:
    embedder = FixedEmbedder(dim=4)
    with pytest.raises(ConfigError):
        EmbeddingImportance(embedder, anchors=())
    with pytest.raises(ConfigError):
        EmbeddingImportance(embedder, calibration=AnchorCalibration(temperature=0.0))
    with pytest.raises(ConfigError):
        EmbeddingImportance("not an embedder")  # type: ignore[arg-type]
    with pytest.raises(EmbedderError):
        EmbeddingImportance(embedder).score_vectors(np.zeros((1, 4)))


def _levelled_embedder() -> FixedEmbedder:
    """Every default anchor of level L on one axis: 1 → e0, 5 → e1, 9 → e2."""
    axis = {1.0: E[0], 5.0: E[1], 9.0: E[2]}
    vectors = {a.text: axis[a.level] for a in DEFAULT_ANCHORS}
    return FixedEmbedder({**vectors, "the barn burned down": E[2], "fed the hens": E[0]}, dim=4)


def test_memory_with_an_embedder_and_no_llm_defaults_to_the_anchor_scorer(
    db_path: Path, clock: SimClock
) -> None:
    embedder = _levelled_embedder()
    expected = EmbeddingImportance(embedder).score(["the barn burned down", "fed the hens"])
    assert expected[0] > 9  # not the heuristic's 2.0 and 2.0
    assert expected[1] == 1.0
    with Memory.open(db_path, embedder=embedder, clock=clock) as mem:
        ids = [r.id for r in mem.remember_many(["the barn burned down", "fed the hens"])]
        assert [mem.get(i).importance for i in ids] == expected
        # a record with its own vector is scored from its text with the scorer's embedder
        own = mem.remember("the barn burned down", embedding=E[3], agent="other").id
        assert mem.get(own).importance == expected[0]


def test_an_explicit_scorer_wins_and_no_embedder_keeps_the_heuristic(
    db_path: Path, clock: SimClock
) -> None:
    embedder = _levelled_embedder()
    llm = ScriptedLLM([json.dumps({"rating": 3})])
    with Memory.open(db_path, embedder=embedder, clock=clock, importance=LLMImportance(llm)) as mem:
        assert mem.get(mem.remember("the barn burned down").id).importance == 3.0
    with Memory.open(
        db_path, embedder=embedder, clock=clock, importance=HeuristicImportance()
    ) as mem:
        assert mem.get(mem.remember("fed the hens", agent="b").id).importance == 2.0
    with Memory.open(db_path, embedder=None, clock=clock, allow_missing_vectors=True) as mem:
        assert mem.get(mem.remember("my father died", agent="c").id).importance == 7.0


@pytest.mark.slow
def test_the_real_model_puts_poignant_memories_above_mundane_ones(
    minilm,
    db_path: Path,
    clock: SimClock,  # type: ignore[no-untyped-def]
) -> None:
    mundane = [
        "Klaus is brushing his teeth",
        "Tom washed the dishes after dinner",
        "Replied to a routine email about the printer",
    ]
    poignant = [
        "My father died last night",
        "I was accepted to the college I wanted",
        "She broke up with me after five years together",
    ]
    scorer = EmbeddingImportance(minilm)
    scores = scorer.score(mundane + poignant)
    assert max(scores[:3]) < min(scores[3:])
    top = scorer.explain("My grandmother passed away").drivers[0].anchor
    assert top.level == 9
    assert "passed away" in top.text
    with Memory.open(db_path, embedder=minilm, clock=clock) as mem:
        record = mem.get(mem.remember("She broke up with me after five years together").id)
    assert record.importance == scores[5]  # the anchor scorer, not the heuristic's 2.0
    assert HeuristicImportance().score([record.text]) == [2.0]


def test_a_failing_llm_scorer_writes_nothing_not_even_the_vector_dimension(
    db_path: Path, clock: SimClock
) -> None:
    failing = LLMImportance(ScriptedLLM(["no", "no"]))
    with Memory.open(db_path, embedder=FixedEmbedder(dim=4), clock=clock, importance=failing) as m:
        with pytest.raises(LLMResponseError):
            m.remember("the barn burned down")
        assert m.stats()["records"] == 0
    with Memory.open(db_path, embedder=FixedEmbedder(dim=8), clock=clock) as mem:  # no mismatch
        assert mem.get(mem.remember("fed the hens").id).has_embedding
