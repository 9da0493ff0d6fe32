"""Text normalisation shared by reads and writes: dedup keys and full-text query terms."""

from __future__ import annotations

import hashlib
import re

__all__ = ["STOPWORDS", "dedup_key", "event_key", "normalise_text", "query_terms"]

_WORD = re.compile(r"\w+", re.UNICODE)
_MAX_TERMS = 64

# English function words: FTS5 has no stop list, and on a small corpus a match on "the" alone can
# look like the best lexical match there is. Content words only go into full-text queries.
STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its
    itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    """.split()  # noqa: SIM905 - a word list reads better as text
)


def normalise_text(text: str) -> str:
    """Case-folded, whitespace-collapsed text: two records with the same normalised text are the
    same memory for multi-agent dedup (DESIGN §2 step 8)."""
    return " ".join(text.casefold().split())


def dedup_key(text: str) -> int:
    """A stable signed 64-bit hash of :func:`normalise_text` (stable across processes)."""
    digest = hashlib.blake2b(normalise_text(text).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def query_terms(text: str) -> list[str]:
    """Distinct lower-cased content terms of a query (stopwords dropped, unless nothing else is
    left), in order of first appearance, at most 64."""
    words = [m.group(0) for m in _WORD.finditer(text.casefold())]
    content = [w for w in words if w not in STOPWORDS] or words
    return list(dict.fromkeys(content))[:_MAX_TERMS]


def event_key(event_id: str) -> int:
    """A stable non-zero 64-bit key of an event id (0 means "no event" in arrays)."""
    digest = hashlib.blake2b(event_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True) or 1
