"""How a record of several sentences is embedded (``Memory.open(passages=...)``): ``"derived"``
(the default) embeds each sentence the model reads once and takes the record's vector from
theirs; ``"sentences"`` also embeds the whole record."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from chronomem import ConfigError, Memory, SimClock
from chronomem.text import passage_spans, passages

from ..conftest import FixedEmbedder, store_of, unit

LONG = "user: I like tea. By the way, I have 3 cats!"
TEA, CATS = unit(1, 0, 0, 0), unit(0, 1, 0, 0)
VECTORS = {
    LONG: unit(0, 0, 1, 0),  # the whole record, far from either sentence
    "user: I like tea.": TEA,
    "user: By the way, I have 3 cats!": CATS,
}


class CountingEmbedder(FixedEmbedder):
    """Records every text it is asked to embed; reads at most ``reads`` characters of a text
    when given (a model that truncates)."""

    def __init__(self, reads: int | None = None) -> None:
        super().__init__(VECTORS, dim=4)
        self.asked: list[str] = []
        self.reads = reads

    def embed(self, texts: Sequence[str], *, progress: bool = False) -> npt.NDArray[np.float32]:
        self.asked += list(texts)
        return super().embed(texts, progress=progress)

    def read_lengths(self, texts: Sequence[str]) -> list[int]:
        return [len(t) if self.reads is None else min(len(t), self.reads) for t in texts]


def stored(
    mem: Memory, text: str
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32] | None]:
    with store_of(mem).snapshot():
        row = next(s for s in store_of(mem).iter_records(mem.space) if s.record.text == text)
    assert row.embedding is not None
    return row.embedding, row.passages


def test_derived_embeds_each_sentence_once_and_not_the_whole(
    location: str | Path, clock: SimClock
) -> None:
    model = CountingEmbedder()
    with Memory.open(location, embedder=model, clock=clock) as mem:
        mem.remember_many([{"text": t, "importance": 5} for t in (LONG, "user: Dogs are fine.")])
        assert LONG not in model.asked
        assert sorted(model.asked) == sorted([*passages(LONG), "user: Dogs are fine."])
        vector, parts = stored(mem, LONG)
        # TEA and CATS weighted by their sentences' lengths ("I like tea." is 11 characters)
        assert vector == pytest.approx(unit(11, len("By the way, I have 3 cats!"), 0, 0))
        assert parts is not None
        assert parts.tolist() == [TEA.tolist(), CATS.tolist()]
        single, none = stored(mem, "user: Dogs are fine.")
        assert none is None
        assert single == pytest.approx(model.vector("user: Dogs are fine."))


def test_sentences_embeds_the_whole_record_too(location: str | Path, clock: SimClock) -> None:
    model = CountingEmbedder()
    with Memory.open(location, embedder=model, clock=clock, passages="sentences") as mem:
        mem.remember(LONG, importance=5)
        assert model.asked == [LONG, *passages(LONG)]
        vector, parts = stored(mem, LONG)
        assert vector == pytest.approx(VECTORS[LONG])
        assert parts is not None
        assert parts.shape == (2, 4)


def test_a_callers_vector_is_kept_and_only_the_passages_are_embedded(
    location: str | Path, clock: SimClock
) -> None:
    model = CountingEmbedder()
    with Memory.open(location, embedder=model, clock=clock) as mem:
        mem.remember(LONG, embedding=unit(0, 0, 0, 1), importance=5)
        assert model.asked == passages(LONG)
        assert stored(mem, LONG)[0] == pytest.approx(unit(0, 0, 0, 1))


def test_derived_keeps_only_the_sentences_the_model_reads(
    location: str | Path, clock: SimClock
) -> None:
    text = "user: One. Two is here. Three is here. Four is here."
    spans = passage_spans(text)
    model = CountingEmbedder(reads=spans[2][0] + 3)  # it stops inside the third sentence
    with Memory.open(location, embedder=model, clock=clock) as mem:
        mem.remember(text, importance=5)
        assert model.asked == passages(text)[:3]
        vector, parts = stored(mem, text)
        assert parts is not None
        assert parts.shape == (3, 4)
        weights = [e - s for s, e in spans[:3]]
        mean = np.asarray(weights) @ model.embed(passages(text)[:3])
        assert vector == pytest.approx(mean / np.linalg.norm(mean), abs=1e-6)
    # a model reading only the first sentence: no passages, the record embedded whole
    model = CountingEmbedder(reads=spans[0][1])
    with Memory.open(location, embedder=model, clock=clock, space="short") as mem:
        mem.remember(text, importance=5)
        assert model.asked == [text]
        assert stored(mem, text)[1] is None


def test_embed_passages_under_derived_leaves_record_vectors_alone(
    location: str | Path, clock: SimClock
) -> None:
    with Memory.open(location, embedder=CountingEmbedder(), clock=clock, passages=False) as old:
        old.remember(LONG)
    with Memory.open(location, embedder=CountingEmbedder(), clock=clock) as mem:
        assert mem.embed_passages() == 1
        vector, parts = stored(mem, LONG)
        assert vector == pytest.approx(VECTORS[LONG])  # the whole record's, as written
        assert parts is not None
        assert parts.shape == (2, 4)


@pytest.mark.parametrize("bad", ["whole", 1, None])
def test_an_unknown_passage_mode_is_refused(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ConfigError, match="passages must be"):
        Memory.open(tmp_path / "m.db", embedder=CountingEmbedder(), passages=bad)  # type: ignore[arg-type]
