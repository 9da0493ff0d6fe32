"""The full-text analyser: text in, index terms out, by script (DESIGN §9).

Every store indexes and queries exactly the same terms (one contract, identical results on SQLite
and PostgreSQL), so the analyser is chronomem's own and named: the store records the name of the
analyser that built its index and re-indexes when a process's analyser differs (``name``).

A text is NFKC-normalised (full-width Latin and half-width kana fold to their usual forms), then
split into words and each word into runs of one script (``scripts.runs``):

- **Latin** (and digits), **Cyrillic** and **Greek**: case-folded; English text (and any whose
  language its function words do not tell) as by the analyser of earlier versions — accents
  removed, English stopwords dropped, Snowball-stemmed (Porter2), at most 64 characters; French,
  German, Spanish, Italian, Portuguese, Dutch, Swedish, Danish, Norwegian, Finnish, Russian and
  Greek text also by its own Snowball stemmer (``alphabets.py``); Cyrillic keeps its marks
  ("й" is not "и");
- **other alphabets** (Arabic, Hebrew, Devanagari, ...): case-folded only;
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

from chronomem.analysis.alphabets import STOPWORDS, language_of_words, terms_of
from chronomem.analysis.scripts import HAN, HANGUL, LATIN, UNSPACED, Run, language_of, runs
from chronomem.analysis.segmenters import Segmenter, available

__all__ = ["STOPWORDS", "Analyser", "bigrams", "default_analyser", "missing_segmenters"]

_MAX_TERMS = 64
_MAX_TERM_CHARS = 64

_ALPHABETS = (LATIN, "cyrillic", "greek")


def _alphabet_languages(found: list[Run]) -> dict[str, str]:
    """The language of each alphabet's words in a text, where one can be told
    (``alphabets.language_of_words``)."""
    words: dict[str, list[str]] = {}
    for run in found:
        if run.script in _ALPHABETS:
            words.setdefault(run.script, []).append(str(run))
    out = {}
    for alphabet, of in words.items():
        language = language_of_words(of, alphabet)
        if language is not None:
            out[alphabet] = language
    return out


def bigrams(run: str) -> list[str]:
    """The character bigrams of a run (a run of one character: itself)."""
    return [run[i : i + 2] for i in range(len(run) - 1)] if len(run) > 1 else [run]


class Analyser:
    """Terms of texts (see the module docstring), with ``segmenters`` for the unspaced scripts by
    the language or script they serve (``ko``, ``ja``, ``zh``, ``thai``, ...). ``bigrams=False``
    drops the character bigrams of the scripts a segmenter serves (what ``bench/analysers.py``
    compares; the default keeps them)."""

    def __init__(self, segmenters: Mapping[str, Segmenter], *, bigrams: bool = True) -> None:
        self._segmenters = dict(segmenters)
        self._bigrams = bigrams
        parts = [f"{k}={s.name}" for k, s in sorted(self._segmenters.items())]
        self.name = (
            "chronomem-2: nfkc; latin, cyrillic, greek: casefold, snowball stems of the text's "
            "language (function words) + english/plain terms, unaccent but cyrillic; other "
            "alphabets: casefold; unspaced scripts: character "
            "bigrams"
            + ("" if bigrams else " where no segmenter serves")
            + (f" + words ({', '.join(parts)})" if parts else "")
        )

    def terms(self, text: str) -> list[str]:
        """The terms of a text as the full-text index holds them, with repeats (their count is
        the text's length for BM25): each word's terms in order, then the segmenters' words of
        its unspaced scripts."""
        normal = unicodedata.normalize("NFKC", text).casefold()
        japanese: bool | None = None
        out: list[str] = []
        segmented: dict[str, str] = {}  # language -> the script its words must be in
        found = list(runs(normal))
        alphabets = _alphabet_languages(found)
        for run in found:
            script = run.script
            if script in _ALPHABETS:
                out += terms_of(str(run), script, alphabets.get(script))
            elif script in UNSPACED:
                language = script
                if script == HAN:
                    if japanese is None:
                        japanese = language_of(normal) == "ja"
                    language = "ja" if japanese or _has_kana(run) else "zh"
                elif script == HANGUL:
                    language = "ko"
                served = language in self._segmenters
                if self._bigrams or not served:
                    out += _bigrams(run)
                if served and (len(run) > 1 or not self._bigrams):
                    segmented[language] = script
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
