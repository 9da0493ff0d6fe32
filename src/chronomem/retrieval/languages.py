"""What the query vector's model reads (DESIGN §9; issue 27): an embedder declares the languages
it was trained on (``Embedder.languages``), and a cosine it computes on text of another language
is noise that must not outvote an exact lexical match. A question in such a language is read
without its vector; a row in one keeps only its lexical relevance (``Candidates.unread``)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from chronomem.analysis.scripts import LANGUAGES, language_of, reads
from chronomem.arrays import Mask
from chronomem.config import RelevanceMode
from chronomem.retrieval.columns import Columns
from chronomem.retrieval.query import Query

__all__ = ["Coverage", "model_reads", "unread_rows"]


@dataclass(frozen=True, slots=True)
class Coverage:
    """Which of a read's texts its model does not read: the question's language (the read then
    has no vector), or the rows in a language it does not read (their cosines do not count)."""

    question: str | None = None
    unread: Mask | None = None
    codes: npt.NDArray[np.int8] | None = None  # the rows' language codes, with ``unread``

    def language_not_read(self, row: int) -> str | None:
        """The language of the question or of ``row`` that the model does not read, if any."""
        if self.question is not None:
            return self.question
        if self.unread is not None and self.codes is not None and self.unread[row]:
            return LANGUAGES[int(self.codes[row])]
        return None


def model_reads(cols: Columns, q: Query) -> tuple[Query, Coverage]:
    """What the query vector's model reads (DESIGN §9): when it does not read the question's
    language, the read goes on without the vector (relevance from words; the language named for
    explanations); else the rows whose language it does not read (their cosines do not count in
    hybrid relevance)."""
    if q.vector is None or q.languages is None or q.config.relevance is not RelevanceMode.HYBRID:
        return q, Coverage()
    asked = language_of(q.text)
    if not reads(q.languages, asked):
        return replace(q, vector=None, raw_vector=None), Coverage(question=asked)
    unread = unread_rows(cols, q.languages)
    if unread is None:
        return q, Coverage()
    return q, Coverage(unread=unread, codes=cols.derived("language_codes"))


def unread_rows(cols: Columns, languages: frozenset[str] | None) -> Mask | None:
    """The rows in a language a model reading ``languages`` does not read (``None``: none, or
    the model reads every language)."""
    if languages is None:
        return None
    not_read = np.fromiter((not reads(languages, name) for name in LANGUAGES), np.bool_)
    unread = not_read[cols.derived("language_codes")]  # (a lookup per row: no sort, as isin)
    return unread if unread.any() else None
