"""What a question's own words say about its evidence (DESIGN §2 step 2; issue: retrieval quality,
round two): whose lines it asks about, and when the thing it asks about happened. Each cue is a
column over the read's rows plus the words it was read from, for the breakdown.

- **Speaker.** A question about what the party it speaks to said ("you recommended", "remind me
  of the list you provided") favours every other speaker's lines over the asker's; one about
  what a named speaker said ("What did Melanie suggest") favours that speaker's lines; otherwise
  a first-person question ("what do I ...") favours the asker's own lines.
- **Time.** A time reference ("a couple of days ago", "last week", "in March", "before 7/22",
  :mod:`chronomem.timeref`) becomes a factor over each record's ``occurred_at``: 1 inside the
  window, a quarter of the prior lost just outside it and more with the window's own scale,
  never below ``1 - time_prior`` —
  a preference, never a filter that could empty the result. Relative to the candidates: when
  none lies inside the window, those nearest it keep 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np

from chronomem.arrays import F64, Mask
from chronomem.clock import to_micros
from chronomem.retrieval.columns import Columns
from chronomem.retrieval.query import Query
from chronomem.text import asks_what_someone_said, asks_what_the_other_said, refers_to_self
from chronomem.timeref import TimeWindow, time_window

__all__ = ["SpeakerCue", "TimeCue", "speaker_cue", "time_cue"]

_DAY_US = 86_400_000_000
# The fall-off outside a window: half of the prior's strength is lost at one scale from the
# window, the scale being the window's length within [1 day, 90 days] (30 days for an open one).
_MIN_SCALE_US = _DAY_US
_MAX_SCALE_US = 90 * _DAY_US
_OPEN_SCALE_US = 30 * _DAY_US
# Just outside a window a record has lost this much of the prior already: "last week" meets a
# record of this Monday noon less than one of last Wednesday, whatever a word's length does to
# its BM25 score. Measured: 0.1 and 0.25 answer the same multilingual timeline questions
# (bench/multilingual.py, 0.991; 0.05 misses one), and 0.25 costs LoCoMo's temporal questions
# 0.003 of recall@10 where 0.1 costs nothing.
_EDGE = 0.1


@dataclass(frozen=True, slots=True)
class SpeakerCue:
    """1.0 for the rows of the speakers a question favours, 0 elsewhere, and why."""

    match: F64
    reason: str


@dataclass(frozen=True, slots=True)
class TimeCue:
    """The time-window factor of every row (1 inside the window) and the window."""

    factor: F64
    window: TimeWindow

    def reason(self) -> str:
        return f"time reference {self.window.describe()}"

    def closed_before(self, instant: datetime) -> bool:
        """Whether the window ends before ``instant`` ("yesterday", "in March"; not "in the
        past three months")."""
        return self.window.end is not None and self.window.end < instant


def speaker_cue(cols: Columns, q: Query) -> SpeakerCue | None:
    """Whose lines the question favours (``None``: nobody's, or no row of theirs)."""
    cues = q.config.speaker_cues
    if q.config.speaker_weight == 0.0 or not cues:
        return None
    finders = [a.speaker_finder() for a in cols.arrays]
    asker = None if q.asker is None else q.asker.strip().casefold()
    chosen: list[str] = []
    reason = ""
    said = asks_what_the_other_said(q.text) if asker is not None and "other" in cues else None
    if said is not None:
        names = sorted({name for f in finders for name in f.names})
        chosen = [n for n in names if n != asker]
        reason = f'asks what was said to the asker ("{said}")'
    else:
        text = q.text.casefold()
        # few, if any
        named = sorted({n for f in finders for n in f.within(text)}) if "named" in cues else []
        for name in named:
            words = asks_what_someone_said(q.text, name)
            if words is not None and name != asker:
                chosen.append(name)
                reason = f'asks what {name} said ("{words}")'
        if len(chosen) != 1:  # "what did A tell B": no single speaker
            chosen = []
        if not chosen and asker is not None and "self" in cues and refers_to_self(q.text):
            chosen, reason = [asker], "speaks in the first person (the asker's own lines)"
    if not chosen:
        return None
    parts = []
    for a in cols.arrays:
        codes = [a.speaker_names[n] for n in chosen if n in a.speaker_names]
        parts.append(np.isin(a.speakers()[0], codes).astype(np.float64))
    match = parts[0] if len(parts) == 1 else np.concatenate(parts)
    return SpeakerCue(match, reason) if match.any() else None


def time_cue(cols: Columns, q: Query, mask: Mask | None) -> TimeCue | None:
    """The time-window factor, or ``None`` (no time reference, or the preset has no prior)."""
    strength = q.config.time_prior
    if strength == 0.0:
        return None
    window = time_window(q.text, q.as_of)
    if window is None:
        return None
    start = None if window.start is None else to_micros(window.start)
    end = None if window.end is None else to_micros(window.end)
    if start is not None and end is not None:
        scale = float(min(max(end - start, _MIN_SCALE_US), _MAX_SCALE_US))
    else:
        scale = float(_OPEN_SCALE_US)
    at = cols.cat("occurred_at")
    distance = np.zeros(at.shape[0], dtype=np.float64)
    if start is not None:
        np.maximum(distance, start - at, out=distance, casting="unsafe")
    if end is not None:  # [start, end): the end's own instant is outside, by 0
        np.maximum(distance, at - end, out=distance, casting="unsafe")
    nearest = distance.min() if mask is None else distance[mask].min(initial=np.inf)
    if np.isfinite(nearest):
        distance -= nearest  # the candidates nearest the window lose nothing
        np.maximum(distance, 0.0, out=distance)
    loss = np.where(distance > 0, _EDGE + (1.0 - _EDGE) * (1.0 - np.exp2(-distance / scale)), 0.0)
    return TimeCue(1.0 - strength * loss, window)
