"""The state of one read as its stages fill it in (DESIGN §2; the stages are ``recall.py``'s,
explanations ``explain.py``'s): what each stage found, for the next stage and for ``explain``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from chronomem.arrays import F64, I64, Mask, Rows
from chronomem.graph.boost import Boost
from chronomem.retrieval.columns import Columns
from chronomem.retrieval.cues import SpeakerCue, TimeCue
from chronomem.retrieval.languages import Coverage
from chronomem.retrieval.query import Query
from chronomem.scoring.score import Scores

__all__ = ["Factors", "ReadState"]


@dataclass(frozen=True, slots=True)
class Factors:
    """The multiplicative factors of DESIGN §2 step 5: the lifecycle's decay and feedback, and
    the question's time window (``cues.py``)."""

    decay: F64 | None
    feedback: F64 | None
    when: TimeCue | None = None

    @property
    def factor(self) -> F64 | None:
        parts = [f for f in (self.decay, self.feedback) if f is not None]
        if self.when is not None:
            parts.append(self.when.factor)
        if not parts:
            return None
        out = parts[0]
        for part in parts[1:]:
            out = out * part
        return out

    def at(self, row: int) -> dict[str, float]:
        out = {}
        named = (("decay", self.decay), ("feedback", self.feedback))
        for name, values in (
            *named,
            ("time_window", None if self.when is None else self.when.factor),
        ):
            if values is not None and values[row] != 1.0:
                out[name] = float(values[row])
        return out


@dataclass(slots=True, kw_only=True)
class ReadState:
    """One read over the rows of ``cols``, stage by stage.

    - candidates: ``mask`` (``None``: every row), ``coverage`` (the languages the model reads),
      ``q`` (the query as the model reads it);
    - components: ``lexical`` (raw BM25), ``chosen`` (pgvector's pre-selection), ``computed``
      (the rows whose cosines were computed; ``None``: all), ``dense`` (raw cosines), and for a
      scan of the int8 copy ``exact`` (the exact cosines of given rows) and ``bound`` (the copy's
      error bound);
    - cues and factors: ``speaker``, ``life`` (with the time cue);
    - score: ``episodic`` (before the causal boost), ``scores`` (after every stage so far),
      ``boost`` and ``floor`` (the crisis's, from which scores are exact), ``exact_rows`` and
      ``ceiling`` (over the int8 copy: how many of the best rows were to score exactly, and the
      score no row left approximate reaches), ``versions`` (the version-aware factors per row,
      for explanations);
    - rank: ``groups`` (one row group per hit, best first) and ``lowest`` (the lowest score a
      ranking after the score stage took in: with an int8 scan, at or above ``ceiling`` when
      every row it could take scored exactly).
    """

    q: Query
    cols: Columns
    mask: Mask | None
    coverage: Coverage
    recorded_at: I64
    ids: npt.NDArray[np.str_]
    lexical: F64 | None = None
    chosen: Mask | None = None
    computed: Mask | None = None
    dense: F64 | None = None
    exact: Callable[[Rows], F64] | None = None
    bound: float | None = None
    speaker: SpeakerCue | None = None
    life: Factors = field(default_factory=lambda: Factors(None, None))
    episodic: Scores | None = None
    scores: Scores | None = None
    boost: Boost | None = None
    floor: float = -np.inf
    exact_rows: int = 0
    ceiling: float = -np.inf
    versions: dict[int, dict[str, float]] = field(default_factory=dict)
    groups: list[Rows] = field(default_factory=list)
    lowest: float = np.inf

    @property
    def scored(self) -> Scores:
        """The scores so far (after the score stage)."""
        assert self.scores is not None, "the score stage has not run"
        return self.scores
