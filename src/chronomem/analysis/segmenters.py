"""Word segmenters for the scripts written without spaces, each an optional backend loaded on
first use: Korean morphemes (``kiwipiepy``), Japanese words (``sudachipy`` with
``sudachidict-core``), Chinese words (``jieba``), Thai words (``pythainlp``), and Unicode word
boundaries for Lao, Khmer and Myanmar (``PyICU``, an extra of its own: it compiles against the
system's ICU). Each keeps the content words of a run — nouns, verb and adjective stems,
foreign words, numbers — and drops particles and endings, so "설치는" and "설치한다" meet at
"설치". A segmenter's ``name`` (backend and version) goes into the analyser's name, so a store
indexed with one is re-indexed by a process that has another.

Install them with ``pip install 'chronomem[languages]'``; without one, its script falls back to
character bigrams (``analyser.py``), which needs nothing.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import itertools
import threading
from collections.abc import Callable
from functools import lru_cache
from typing import Any, Protocol

__all__ = ["Segmenter", "available"]


class Segmenter(Protocol):
    """The content words of a text in its language, as the index keeps them (the analyser
    passes case-folded, NFKC-normalised text, and keeps only words of the segmenter's script)."""

    name: str

    def words(self, text: str) -> list[str]: ...


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


class _Lazy:
    """A backend loaded on first use (the dictionaries take a second or two to load), once, and
    called by one thread at a time (``call``): the backends do not promise to be thread-safe."""

    def __init__(self, load: Callable[[], Any]) -> None:
        self._load = load
        self._value: Any = None
        self._lock = threading.Lock()

    def call(self, use: Callable[[Any], list[str]]) -> list[str]:
        with self._lock:
            if self._value is None:
                self._value = self._load()
            return use(self._value)


# Kiwi's content tags: general, proper and bound nouns, pronouns, numerals, verb and adjective
# stems, roots, adverbs.
_KIWI_KEEP = ("NNG", "NNP", "NNB", "NP", "NR", "VV", "VA", "XR", "MAG")
# Light verbs and bound nouns that every other sentence has ("do", "be", "exist", "thing", "can").
_KO_STOP = frozenset(["하", "되", "있", "없", "않", "것", "수", "거", "등", "데"])


class KiwiSegmenter:
    """Korean morphemes by ``kiwipiepy`` (and its bundled model)."""

    def __init__(self, version: str) -> None:
        self.name = f"kiwi {version}"

        def load() -> Any:
            import warnings

            from kiwipiepy import Kiwi

            with warnings.catch_warnings():  # "num_workers=0 changed in 0.21": it is what we mean
                warnings.simplefilter("ignore", DeprecationWarning)
                return Kiwi(num_workers=0)  # no thread pool: the caller's thread

        self._kiwi = _Lazy(load)

    def words(self, text: str) -> list[str]:
        return self._kiwi.call(
            lambda kiwi: [
                t.form
                for t in kiwi.tokenize(text)
                if t.tag.startswith(_KIWI_KEEP) and t.form not in _KO_STOP
            ]
        )


# Sudachi's parts of speech kept: nouns, verbs, adjectives, adjectival nouns, adverbs, prefixes.
_SUDACHI_KEEP = frozenset({"名詞", "動詞", "形容詞", "形状詞", "副詞", "接頭辞", "代名詞"})


class SudachiSegmenter:
    """Japanese words by ``sudachipy`` with ``sudachidict-core``, in their normalised form (so
    "できる" and "出来る", "サーバ" and "サーバー" meet), in mode B (middle units: 国家公務員 →
    国家, 公務員)."""

    def __init__(self, version: str, dictionary: str) -> None:
        self.name = f"sudachi {version} core {dictionary}"

        def load() -> Any:
            from sudachipy import Dictionary, SplitMode

            return Dictionary(dict="core").tokenizer(mode=SplitMode.B)

        self._tokenizer = _Lazy(load)

    def words(self, text: str) -> list[str]:
        return self._tokenizer.call(
            lambda tokenizer: [
                m.normalized_form().casefold()
                for m in tokenizer.tokenize(text)
                if m.part_of_speech()[0] in _SUDACHI_KEEP
            ]
        )


# Chinese function words: particles, common pronouns and copulas carry no topic.
_ZH_STOP = frozenset(
    """
    的 了 是 在 和 与 及 或 也 都 就 而 并 把 被 让 给 对 从 向 于 以 之 其 这 那 这个 那个 一个 我
    你 他 她 它 我们 你们 他们 吗 呢 吧 啊 呀 么 什么 怎么 哪里 哪 谁 多少 几 要 会 能 可以 应该
    一下 没有 不 很 还 又 再 才 着 过 地 得 所 为 为了
    """.split()  # noqa: SIM905 - a word list reads better as text
)


class JiebaSegmenter:
    """Chinese words by ``jieba`` (its search mode: long words and their parts)."""

    def __init__(self, version: str) -> None:
        self.name = f"jieba {version}"

        def load() -> Any:
            import logging

            import jieba

            jieba.setLogLevel(logging.WARNING)
            made = jieba.Tokenizer()
            made.initialize()
            return made

        self._jieba = _Lazy(load)

    def words(self, text: str) -> list[str]:
        return self._jieba.call(
            lambda jieba: [w for w in jieba.cut_for_search(text) if w not in _ZH_STOP]
        )


class ThaiSegmenter:
    """Thai words by ``pythainlp`` (its dictionary segmenter, newmm), without Thai stopwords."""

    def __init__(self, version: str) -> None:
        self.name = f"pythainlp {version}"

        def load() -> Any:
            from pythainlp.corpus import thai_stopwords
            from pythainlp.tokenize import Tokenizer

            return Tokenizer(engine="newmm"), thai_stopwords()

        self._thai = _Lazy(load)

    def words(self, text: str) -> list[str]:
        def split(loaded: Any) -> list[str]:
            tokenizer, stop = loaded
            return [w for w in tokenizer.word_tokenize(text) if w.strip() and w not in stop]

        return self._thai.call(split)


class IcuSegmenter:
    """Unicode word boundaries by ICU (``PyICU``, which builds against the system's ICU): Lao,
    Khmer, Myanmar, and Thai where ``pythainlp`` is not installed."""

    def __init__(self, version: str) -> None:
        self.name = f"icu {version}"

        def load() -> Any:
            import icu

            return icu.BreakIterator.createWordInstance(icu.Locale.getRoot())

        self._breaker = _Lazy(load)

    def words(self, text: str) -> list[str]:
        def split(breaker: Any) -> list[str]:
            breaker.setText(text)
            bounds = [0, *breaker]
            return [text[a:b] for a, b in itertools.pairwise(bounds) if text[a:b].strip()]

        return self._breaker.call(split)


@lru_cache(maxsize=1)
def available() -> dict[str, Segmenter]:
    """The installed segmenters by the language or script they serve: ``ko``, ``ja``, ``zh``,
    ``thai`` (and its neighbours). Looked up once per process, without importing them."""
    found: dict[str, Segmenter] = {}
    kiwi, model = _version("kiwipiepy"), _version("kiwipiepy_model")
    if kiwi and model:
        found["ko"] = KiwiSegmenter(f"{kiwi}/{model}")
    sudachi, core = _version("SudachiPy"), _version("sudachidict-core")
    if sudachi and core:
        found["ja"] = SudachiSegmenter(sudachi, core)
    jieba = _version("jieba")
    if jieba and importlib.util.find_spec("jieba") is not None:
        found["zh"] = JiebaSegmenter(jieba)
    icu = _version("PyICU")
    if icu and importlib.util.find_spec("icu") is not None:
        for script in ("thai", "lao", "khmer", "myanmar"):
            found[script] = IcuSegmenter(icu)
    thai = _version("pythainlp")
    if thai and importlib.util.find_spec("pythainlp") is not None:
        found["thai"] = ThaiSegmenter(thai)
    return found
