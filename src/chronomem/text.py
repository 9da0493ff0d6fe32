"""Text normalisation shared by reads and writes: dedup keys and the full-text analyser.

The analyser is chronomem's own, in Python, so that every store indexes and queries exactly the
same terms (DESIGN §6: one contract, identical results on SQLite and PostgreSQL): words are runs of
letters and digits, case-folded, accents removed, English stopwords dropped, Snowball-stemmed
(Porter2), at most 64 characters.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from functools import lru_cache

import Stemmer

__all__ = [
    "ANALYSER",
    "STOPWORDS",
    "dedup_key",
    "event_key",
    "index_terms",
    "normalise_text",
    "query_terms",
]

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_MAX_TERMS = 64
_MAX_TERM_CHARS = 64

# English function words: a match on "the" alone says nothing about relevance, and indexing them
# would make every posting list as long as the space. They are neither indexed nor queried.
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


_STEMMER = Stemmer.Stemmer("english")

# Stored with every index; a store indexed by another analyser is re-indexed when opened.
# Change it whenever index_terms would give different terms for some text.
ANALYSER = "chronomem-1: letters+digits, casefold, unaccent, english stopwords, snowball english"


@lru_cache(maxsize=1 << 16)
def _term(word: str) -> str | None:
    """The index term of a case-folded word, or ``None`` for a stopword."""
    if word in STOPWORDS:
        return None
    if not word.isascii():
        decomposed = unicodedata.normalize("NFKD", word)
        word = "".join(c for c in decomposed if not unicodedata.combining(c))
    return str(_STEMMER.stemWord(word))[:_MAX_TERM_CHARS]


def index_terms(text: str) -> list[str]:
    """The terms of a text as the full-text index holds them, in order, with repeats (their
    count is the text's length for BM25)."""
    terms = (_term(m.group(0)) for m in _WORD.finditer(text.casefold()))
    return [t for t in terms if t]


def query_terms(text: str) -> list[str]:
    """Distinct index terms of a query in order of first appearance, at most 64; empty when the
    query has only stopwords."""
    return list(dict.fromkeys(index_terms(text)))[:_MAX_TERMS]


def event_key(event_id: str) -> int:
    """A stable non-zero 64-bit key of an event id (0 means "no event" in arrays)."""
    digest = hashlib.blake2b(event_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True) or 1
