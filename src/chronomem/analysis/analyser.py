"""The full-text analyser: text in, index terms out, by script (DESIGN §9).

Every store indexes and queries exactly the same terms (one contract, identical results on SQLite
and PostgreSQL), so the analyser is chronomem's own and named: the store records the name of the
analyser that built its index and re-indexes when a process's analyser differs (``name``).

A text is NFKC-normalised (full-width Latin and half-width kana fold to their usual forms), then
split into words and each word into runs of one script (``scripts.runs``):

- **Latin** (and digits): case-folded, accents removed, English stopwords dropped,
  Snowball-stemmed (Porter2), at most 64 characters — the analyser of earlier versions;
- **Greek**: case-folded, accents removed; **other alphabets** (Cyrillic, Arabic, Hebrew,
  Devanagari, ...): case-folded only — their marks are letters (Cyrillic "й" is not "и");
- **scripts written without spaces** (Hangul, kanji and kana, Thai, ...): their words by the
  language's segmenter where one is installed (``segmenters.py``: Korean morphemes, Japanese and
  Chinese words, ICU boundaries) *and* their character bigrams (a run of one character: itself),
  so compounds and words a dictionary splits differently still meet. Kanji runs are Japanese
  when they, or the text, hold kana, else Chinese. Nothing here strips a kana voicing mark
  (パッケージ stays パッケージ) or decomposes a Hangul syllable.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from functools import lru_cache

import Stemmer

from chronomem.analysis.scripts import HAN, HANGUL, LATIN, UNSPACED, language_of, runs
from chronomem.analysis.segmenters import Segmenter, available

__all__ = ["STOPWORDS", "Analyser", "bigrams", "default_analyser", "missing_segmenters"]

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

_STEMMER = Stemmer.Stemmer("english")


@lru_cache(maxsize=1 << 16)
def _latin(word: str) -> str | None:
    """The index term of a case-folded Latin-script word, or ``None`` for a stopword."""
    if word in STOPWORDS:
        return None
    if not word.isascii():
        decomposed = unicodedata.normalize("NFKD", word)
        word = "".join(c for c in decomposed if not unicodedata.combining(c))
    return str(_STEMMER.stemWord(word))[:_MAX_TERM_CHARS]


def _unaccented(word: str) -> str:
    decomposed = unicodedata.normalize("NFD", word)
    return unicodedata.normalize(
        "NFC", "".join(c for c in decomposed if not unicodedata.combining(c))
    )


def bigrams(run: str) -> list[str]:
    """The character bigrams of a run (a run of one character: itself)."""
    return [run[i : i + 2] for i in range(len(run) - 1)] if len(run) > 1 else [run]


class Analyser:
    """Terms of texts (see the module docstring), with ``segmenters`` for the unspaced scripts by
    the language or script they serve (``ko``, ``ja``, ``zh``, ``thai``, ...)."""

    def __init__(self, segmenters: Mapping[str, Segmenter]) -> None:
        self._segmenters = dict(segmenters)
        parts = [f"{k}={s.name}" for k, s in sorted(self._segmenters.items())]
        self.name = (
            "chronomem-2: nfkc; latin: casefold, unaccent, english stopwords, snowball english; "
            "greek: casefold, unaccent; other alphabets: casefold; unspaced scripts: character "
            "bigrams" + (f" + words ({', '.join(parts)})" if parts else "")
        )

    def terms(self, text: str) -> list[str]:
        """The terms of a text as the full-text index holds them, with repeats (their count is
        the text's length for BM25): each word's terms in order, then the segmenters' words of
        its unspaced scripts."""
        normal = unicodedata.normalize("NFKC", text).casefold()
        japanese: bool | None = None
        out: list[str] = []
        segmented: dict[str, str] = {}  # language -> the script its words must be in
        for run in runs(normal):
            script = run.script
            if script == LATIN:
                term = _latin(run)
                if term:
                    out.append(term)
            elif script in UNSPACED:
                language = script
                if script == HAN:
                    if japanese is None:
                        japanese = language_of(normal) == "ja"
                    language = "ja" if japanese or _has_kana(run) else "zh"
                elif script == HANGUL:
                    language = "ko"
                out += _bigrams(run)
                if len(run) > 1 and language in self._segmenters:
                    segmented[language] = script
            elif script == "greek":
                out.append(_unaccented(run)[:_MAX_TERM_CHARS])
            else:
                out.append(str(run)[:_MAX_TERM_CHARS])
        for language, script in segmented.items():
            for word in self._segmenters[language].words(normal):
                scripts = {r.script for r in runs(word)}
                if scripts == {script}:  # letters of its script only: the rest is analysed above
                    out.append(word[:_MAX_TERM_CHARS])
        return out

    def query_terms(self, text: str) -> list[str]:
        """Distinct terms of a query in order of first appearance, at most 64; empty when the
        query has only stopwords."""
        return list(dict.fromkeys(self.terms(text)))[:_MAX_TERMS]


@lru_cache(maxsize=1 << 15)
def _bigrams(run: str) -> tuple[str, ...]:
    return tuple(t[:_MAX_TERM_CHARS] for t in bigrams(run))


def _has_kana(run: str) -> bool:
    return any(0x3040 <= ord(c) <= 0x30FF or 0xFF66 <= ord(c) <= 0xFF9F for c in run)


@lru_cache(maxsize=1)
def default_analyser() -> Analyser:
    """The analyser of this process: with every segmenter installed (``segmenters.available``)."""
    return Analyser(available())


_SEGMENTED = re.compile(r" \+ words \(([^)]*)\)$")


def missing_segmenters(name: str) -> list[str]:
    """The segmenters an analyser's ``name`` lists (``"ko=kiwi 0.24.1/0.24.0"``) whose
    language this process has none for (another version is not missing: the store is then
    re-indexed with this process's)."""
    match = _SEGMENTED.search(name)
    if match is None:
        return []
    have = available()
    return [part for part in match.group(1).split(", ") if part.partition("=")[0] not in have]
