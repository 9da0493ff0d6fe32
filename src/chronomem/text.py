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
    "passage_spans",
    "passages",
    "query_terms",
    "asks_when_something_happened",
    "refers_to_self",
    "speaker",
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


# "Name: words" — a line of a transcript. The name starts with a letter, is at most 40 characters of
# letters, digits, spaces, dots, apostrophes and hyphens, and the colon is followed by whitespace
# (so "http://..." and "10:30" are not speakers).
_SPEAKER = re.compile(r"\s*([^\W\d_][\w .'-]{0,39}?)\s*:\s+(?=\S)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_FIRST_PERSON = re.compile(r"(?<![\w.])(?:i|me|my|mine|myself)(?!\w|\.\w)")
_MIN_PASSAGE_CHARS = 4


def speaker(text: str) -> str | None:
    """Who says a transcript line ``"Name: words"`` (case-folded), or ``None``."""
    match = _SPEAKER.match(text)
    return None if match is None else match.group(1).casefold()


def passages(text: str, *, limit: int = 32) -> list[str]:
    """The sentences of a record that has more than one, each embedded on its own so that a fact
    said in passing in a long record is as close to a question about it as a short record saying
    only that fact. A transcript line's speaker prefixes every passage (``"Name: sentence"``).
    A line that starts with its own ``"Name: "`` keeps it instead. Empty for a record of one
    sentence: its own vector already is that sentence's. Past ``limit`` sentences, the rest form
    the last passage. A fragment under four characters ("Mr.", "1.") joins the next sentence."""
    match = _SPEAKER.match(text)
    prefix = "" if match is None else text[: match.end()].strip() + " "
    out = [" ".join(text[s:e] for s, e in part) for part in _passage_parts(text, limit)]
    return [p if _SPEAKER.match(p) else prefix + p for p in out]


def passage_spans(text: str, *, limit: int = 32) -> list[tuple[int, int]]:
    """Where each of :func:`passages` lies in ``text``: the ``(start, end)`` character offsets
    of its sentence(s), without the speaker prefix a passage repeats (in the same order; empty
    when there are no passages)."""
    return [(part[0][0], part[-1][1]) for part in _passage_parts(text, limit)]


def _passage_parts(text: str, limit: int) -> list[list[tuple[int, int]]]:
    """The passages of ``text`` as the character spans of the stripped sentence pieces each
    joins (with single spaces): the one splitting behind :func:`passages` and
    :func:`passage_spans`."""
    match = _SPEAKER.match(text)
    offset = 0 if match is None else match.end()
    body = text[offset:]
    pieces: list[tuple[int, int]] = []
    start = 0
    for gap in [*_SENTENCE_END.finditer(body), None]:
        end = len(body) if gap is None else gap.start()
        chunk = body[start:end]
        lead = len(chunk) - len(chunk.lstrip())
        pieces.append((offset + start + lead, offset + start + len(chunk.rstrip())))
        if gap is not None:
            start = gap.end()
    parts: list[list[tuple[int, int]]] = []
    carry: list[tuple[int, int]] = []
    for s, e in pieces:
        piece = [*carry, (s, e)] if e > s else carry
        size = sum(b - a for a, b in piece) + len(piece) - 1
        carry = piece if piece and size < _MIN_PASSAGE_CHARS else []
        if not carry and piece:
            parts.append(piece)
    if carry and parts:
        parts[-1] = parts[-1] + carry
    if len(parts) < 2:
        return []
    if len(parts) > limit:
        parts = [*parts[: limit - 1], [span for part in parts[limit - 1 :] for span in part]]
    return parts


_WHEN_PAST = re.compile(
    r"^\W*(?:when|in what (?:year|month)|what (?:date|day|year|month)|which (?:year|month|day))"
    r"\s+(?:did|was|were|had)\b|\bhow long ago\b"
)
_LATEST = re.compile(r"\b(?:last|latest|most recent(?:ly)?)\b")


def asks_when_something_happened(query: str) -> bool:
    """Whether a query asks for the time of a past event ("When did ...", "What year was ...",
    "How long ago ..."): the moment of an event, not the current state of anything. Not when it
    asks for the last or latest time ("When did I last ...")."""
    q = query.casefold()
    return _WHEN_PAST.search(q) is not None and _LATEST.search(q) is None


def refers_to_self(query: str) -> bool:
    """Whether a query speaks in the first person ("I", "me", "my", "mine", "myself")."""
    return _FIRST_PERSON.search(query.casefold()) is not None


# What the other party said, suggested or listed: "you recommended", "did you mention", "your
# list", "remind me", "our previous conversation". Past forms after "you" only: "can you suggest"
# asks for something new. On LongMemEval's oracle questions this reads 55 of the 56 questions
# about the assistant's own words, and none of the 444 others.
_SAID = (
    r"said|told|mentioned|recommended|suggested|listed|provided|gave|given|shared|described|"
    r"explained|wrote|written|offered|proposed|named|showed|shown|created|included|advised|"
    r"came up with|come up with|talked about|discussed|noted|pointed out"
)
_SAY = (
    r"say|tell|mention|recommend|suggest|list|provide|give|share|describe|explain|write|offer|"
    r"propose|name|show|create|include|advise|come up with|talk about|discuss|note|point out"
)
_TO_THE_OTHER = re.compile(
    rf"\byou(?:'ve|'d| have| had| just| also)?\s+(?:\w+\s+)?(?:{_SAID}|made|used)\b"
    rf"|\b(?:did|have|had) you\s+(?:\w+\s+)?(?:{_SAY}|make|use)\b"
    r"|\byour (?:list|suggestions?|recommendations?|answer|advice|response|explanation|previous"
    r"|earlier|last)\b|\bremind me\b"
    r"|\bour (?:previous|earlier|last|past) (?:conversation|chat|discussion|talk|exchange"
    r"|session|game)"
)


def asks_what_the_other_said(query: str) -> str | None:
    """The words by which a query asks what the party it speaks to said, suggested or listed
    ("You recommended five bottles ...", "remind me of the 7th job in the list you provided"),
    or ``None``."""
    match = _TO_THE_OTHER.search(query.casefold())
    return None if match is None else match.group(0)


def asks_what_someone_said(query: str, name: str) -> str | None:
    """The words by which a query asks what ``name`` (a speaker) said, suggested or listed
    ("What did Melanie suggest ...", "Caroline recommended ..."), or ``None``."""
    who = re.escape(name.casefold())
    pattern = (  # words only: what a named speaker made or used is a deed, not a line
        rf"\b{who}(?:'s)?\s+(?:\w+\s+)?(?:{_SAID}|suggestions?|recommendations?|advice|list)\b"
        rf"|\b(?:did|has|had) {who}\s+(?:\w+\s+)?(?:{_SAY})\b"
    )
    match = re.search(pattern, query.casefold())
    return None if match is None else match.group(0)


# Questions whose answer takes several pieces of evidence: a count or sum ("how many", "how much
# did", "in total"), an order ("first", "before", "after"), a change or comparison ("switch",
# "compared", "previously", "still"); not a present amount ("how much does flour cost?").
_EVERY_PIECE = re.compile(
    r"\bhow many\b|\bhow much (?:did|have|has|had|was|were|more|less|money|time)\b"
    r"|\btotal\b|\baltogether\b|\bcombined\b|\bfirst\b|\bearliest\b"
    r"|\border\b|\bbefore\b|\bafter\b|\bcompar(?:e|ed|ing)\b|\bswitch|\bchang(?:e|ed|es)\b"
    r"|\bpreviously\b|\bprevious (?!conversation|chat|discussion|talk|session|exchange|game)"
    r"|\binitial(?:ly)?\b|\boriginal(?:ly)?\b|\bused to\b|\bdifference\b|\bbetween\b"
    r"|\b(?:more|less|fewer) than\b|\bincreas|\bdecreas|\bboth\b|\beach\b|\bevery\b"
    r"|\ball (?:the|of)\b|\bsince\b|\bso far\b|\bstill\b|\banymore\b"
)


def asks_for_every_piece(query: str) -> str | None:
    """The words by which a query asks for a count, an order, a change or a comparison — an
    answer that takes every piece of evidence, not the best one — or ``None``."""
    match = _EVERY_PIECE.search(query.casefold())
    return None if match is None else match.group(0)
