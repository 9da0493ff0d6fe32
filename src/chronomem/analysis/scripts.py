"""Scripts and languages of text, told apart by Unicode ranges (no model, no dictionary).

A text's *language* here is what its letters say reliably: Hangul is Korean, kana (with or
without kanji) Japanese, kanji without kana Chinese, and the other scripts are named by script
(``latin``, ``cyrillic``, ``greek``, ``arabic``, ``hebrew``, ``devanagari``, ``thai``, ...).
Languages that share a script (English, French, German in ``latin``) are not told apart: nothing
chronomem does with a language needs it (an English model's cosines count for Latin-script text,
see :func:`reads`).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Collection, Iterator

__all__ = [
    "LANGUAGES",
    "HAN",
    "HANGUL",
    "KANA",
    "LATIN",
    "Run",
    "language_code",
    "language_of",
    "reads",
    "runs",
    "script_of",
]

HANGUL, KANA, HAN, LATIN, OTHER = "hangul", "kana", "han", "latin", "other"

# (first, last, script) code point ranges, for the scripts that change how text is analysed.
_RANGES = (
    (0x1100, 0x11FF, HANGUL), (0x3130, 0x318F, HANGUL), (0xA960, 0xA97F, HANGUL),
    (0xAC00, 0xD7AF, HANGUL), (0xD7B0, 0xD7FF, HANGUL), (0xFFA0, 0xFFDC, HANGUL),
    (0x3040, 0x309F, KANA), (0x30A0, 0x30FF, KANA), (0x31F0, 0x31FF, KANA),
    (0xFF66, 0xFF9F, KANA), (0x1B000, 0x1B16F, KANA),
    (0x3400, 0x4DBF, HAN), (0x4E00, 0x9FFF, HAN), (0xF900, 0xFAFF, HAN),
    (0x20000, 0x3134F, HAN), (0x3005, 0x3007, HAN),
    (0x0E00, 0x0E7F, "thai"), (0x0E80, 0x0EFF, "lao"), (0x1000, 0x109F, "myanmar"),
    (0x1780, 0x17FF, "khmer"),
    (0x0400, 0x052F, "cyrillic"), (0x0370, 0x03FF, "greek"), (0x1F00, 0x1FFF, "greek"),
    (0x0590, 0x05FF, "hebrew"), (0x0600, 0x06FF, "arabic"), (0x0750, 0x077F, "arabic"),
    (0x0900, 0x097F, "devanagari"), (0x0980, 0x09FF, "bengali"), (0x0B80, 0x0BFF, "tamil"),
    (0x10A0, 0x10FF, "georgian"), (0x0530, 0x058F, "armenian"),
)  # fmt: skip
# The prolonged sound mark and the iteration marks sit between kana.
_KANA_MARKS = frozenset("ー゛゜ゝゞヽヾ")
# Scripts written without spaces between words.
UNSPACED = frozenset({HANGUL, KANA, HAN, "thai", "lao", "myanmar", "khmer"})


def script_of(char: str) -> str:
    """The script of one character (``latin`` for Latin letters and for digits, ``other`` for
    what is not a letter or digit of a known script)."""
    code = ord(char)
    if code < 0x0250:  # Basic Latin, Latin-1, Latin Extended-A/B: the common case, first
        return LATIN if char.isalnum() else OTHER
    if char in _KANA_MARKS:
        return KANA
    for first, last, script in _RANGES:
        if first <= code <= last:
            return script
    if 0x1E00 <= code <= 0x1EFF or 0xFF21 <= code <= 0xFF5A:  # Latin Extended Additional, wide
        return LATIN
    if char.isalnum():
        return LATIN if "LATIN" in unicodedata.name(char, "") else OTHER
    return OTHER


class Run(str):
    """A maximal stretch of one script within a word (a ``str`` carrying ``script``)."""

    script: str

    def __new__(cls, text: str, script: str) -> Run:
        made = super().__new__(cls, text)
        made.script = script
        return made


# Letters and digits, with the marks that are part of a word: combining accents, kana voicing
# marks, and the vowel signs of the Indic and Southeast Asian scripts (Unicode calls them marks,
# not letters, so a plain \w run would cut "สวัสดี" after every consonant).
_MARKS = (
    "\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0670\u0900-"
    "\u0903\u093a-\u094f\u0951-\u0957\u0962\u0963\u0981-\u0983\u09bc-\u09d7\u0b82-"
    "\u0bd7\u0e31\u0e34-\u0e3a\u0e47-\u0e4e\u0eb1\u0eb4-\u0ebc\u0ec8-\u0ecd\u102b-"
    "\u103e\u17b4-\u17d3\u3099\u309a"
)
_WORD = re.compile(rf"(?:[^\W_]|[{_MARKS}ー゛゜])+", re.UNICODE)


def runs(text: str) -> Iterator[Run]:
    """The words of ``text`` (runs of letters and digits), each split where its script changes
    ("pnpm으로" → "pnpm", "으로"); a kana run swallows the kanji around it, as Japanese writes them
    together (so "会議を開く" is one run, told apart from Chinese by its kana)."""
    for match in _WORD.finditer(text):
        word = match.group(0)
        start, current = 0, _merged(script_of(word[0]))
        for i in range(1, len(word)):
            script = _merged(script_of(word[i]))
            if script != current:
                yield Run(word[start:i], current)
                start, current = i, script
        yield Run(word[start:], current)


def _merged(script: str) -> str:
    # Digits and Latin letters stay Latin; kana and kanji are one run (Japanese); the caller
    # tells Japanese from Chinese by whether a run holds kana.
    return HAN if script == KANA else script


_ASCII_LETTER = re.compile(r"[A-Za-z]")
_COUNTED = (
    (HANGUL, re.compile(r"[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]")),
    (KANA, re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]")),
    (HAN, re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")),
)


def language_of(text: str) -> str:
    """The language of a text as its letters show it (see the module docstring): the script of
    most of its letters, with kanji and kana read as Japanese when there is any kana and as
    Chinese otherwise; ``""`` for a text without letters. Fast for the common cases: ASCII
    text, and text of Hangul, kana and kanji."""
    if text.isascii():
        return LATIN if _ASCII_LETTER.search(text) else ""
    counted = {script: len(pattern.findall(text)) for script, pattern in _COUNTED}
    latin = len(_ASCII_LETTER.findall(text))
    cjk = counted[KANA] + counted[HAN]
    if counted[HANGUL] + cjk > 2 * latin or counted[HANGUL] + cjk > len(text) // 2:
        if counted[HANGUL] >= cjk:
            return "ko"
        return "ja" if counted[KANA] else "zh"
    return _language_by_counting(text)


def _language_by_counting(text: str) -> str:
    counts: Counter[str] = Counter()
    for char in text:
        if char.isalnum() or char in _KANA_MARKS:
            script = script_of(char)
            if script != OTHER and not (script == LATIN and char.isdigit()):
                counts[script] += 1
    if not counts:
        return ""
    cjk = counts[HAN] + counts[KANA]
    best, n = max(((s, c) for s, c in counts.items() if s not in (HAN, KANA)), default=("", 0),
                  key=lambda sc: (sc[1], sc[0]))  # fmt: skip
    if cjk > n:
        return "ja" if counts[KANA] else "zh"
    return {HANGUL: "ko"}.get(best, best)


# What a model reading one of these languages reads of a text in a script: a model that reads a
# Latin-script language reads Latin-script text (its languages are not told apart).
LATIN_LANGUAGES = frozenset(
    [
        "en",
        "fr",
        "de",
        "es",
        "it",
        "pt",
        "nl",
        "sv",
        "da",
        "no",
        "nb",
        "nn",
        "fi",
        "is",
        "et",
        "lv",
        "lt",
        "pl",
        "cs",
        "sk",
        "sl",
        "hr",
        "bs",
        "sr-latn",
        "hu",
        "ro",
        "tr",
        "az",
        "uz",
        "id",
        "ms",
        "vi",
        "tl",
        "sw",
        "ga",
        "cy",
        "eu",
        "ca",
        "gl",
        "af",
        "sq",
        "mt",
        "la",
        "eo",
    ]
)
_SCRIPT_LANGUAGES = {
    "cyrillic": frozenset(["ru", "uk", "be", "bg", "mk", "sr", "kk", "ky", "tg", "mn"]),
    "greek": frozenset({"el"}),
    "hebrew": frozenset({"he", "yi"}),
    "arabic": frozenset({"ar", "fa", "ur", "ps"}),
    "devanagari": frozenset({"hi", "mr", "ne", "sa"}),
    "thai": frozenset({"th"}),
}


#: The languages :func:`language_of` names, as the in-memory arrays code them (their position).
LANGUAGES: tuple[str, ...] = (
    "", LATIN, "ko", "ja", "zh", "cyrillic", "greek", "hebrew", "arabic", "devanagari", "thai",
    "bengali", "tamil", "georgian", "armenian", "lao", "myanmar", "khmer", OTHER,
)  # fmt: skip


def language_code(text: str) -> int:
    """:func:`language_of` as its position in :data:`LANGUAGES`."""
    found = language_of(text)
    return LANGUAGES.index(found) if found in LANGUAGES else LANGUAGES.index(OTHER)


def reads(languages: Collection[str] | None, language: str) -> bool:
    """Whether a model declaring ``languages`` (ISO 639-1 codes; ``None``: every language, or
    ``"*"`` among them) reads text of ``language`` (:func:`language_of`). Text without letters
    is read by every model."""
    if languages is None or "*" in languages or not language:
        return True
    if language in languages:
        return True
    if language == LATIN:
        return not LATIN_LANGUAGES.isdisjoint(languages)
    return not _SCRIPT_LANGUAGES.get(language, frozenset()).isdisjoint(languages)
