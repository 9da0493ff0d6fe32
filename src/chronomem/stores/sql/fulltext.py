"""Full text, identical on every store: chronomem's analyser (``chronomem.text``) turns each
record's text into terms, kept in a ``postings`` table (term, record, term frequency, document
length) with per-space totals in ``spaces``; :func:`lexical` reads the postings of the query terms
and computes BM25 in numpy, so every store matches and scores exactly the same way."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from chronomem.analysis.analyser import default_analyser, missing_segmenters
from chronomem.arrays import F64, I32, I64
from chronomem.errors import ConfigError
from chronomem.stores.base import LexicalMatches
from chronomem.stores.sql.backend import SQLBackend
from chronomem.stores.sql.postings_cache import PostingsCache
from chronomem.text import spoken

__all__ = [
    "add_documents",
    "analyser_is_current",
    "bm25",
    "lexical",
    "reindex",
    "reindex_if_stale",
    "remove_documents",
    "warm",
]

# BM25 with Lucene's parameters and its always-positive IDF, ln(1 + (N - df + 0.5) / (df + 0.5)).
_BM25_K1 = 1.2
_BM25_B = 0.75
# BM25 sums in a dense array over the matched keys' range while it is at most this many times
# the postings (see bm25).
_DENSE = 8
# warm: terms in at least this many documents (cheaper ones are fetched when asked), frequencies
# from this many recent records, terms fetched this many per query
_WARM_DF = 2_000
_WARM_SAMPLE = 4_000
_WARM_BATCH = 100
# warm holds every frequent term, up to this many postings (~160 MB, and the cache's limit grows to
# twice that): at 100k dialogue turns ~3M, about 60 MB
_WARM_MOST = 1 << 23


def _insert(db: SQLBackend, documents: Iterable[tuple[str, int, str, Sequence[str]]]) -> None:
    """Postings ``(space, term, pk, agent, tf, dl)`` for each distinct term of each ``(space, pk,
    agent, terms)`` document, inserted in index order (fewer page splits)."""
    db._executemany(
        "INSERT INTO postings (space, term, pk, agent, tf, dl) VALUES (?, ?, ?, ?, ?, ?)",
        sorted(
            (space, term, pk, agent, tf, len(terms))
            for space, pk, agent, terms in documents
            for term, tf in Counter(terms).items()
        ),
    )


def add_documents(
    db: SQLBackend, space: str, documents: Sequence[tuple[int, str, Sequence[str]]]
) -> None:
    """Index ``(pk, agent, terms)`` documents and add them to the space's totals (inside the
    write transaction that inserts the records)."""
    _insert(db, ((space, pk, agent, terms) for pk, agent, terms in documents))
    db._execute(
        "UPDATE spaces SET docs = docs + ?, doc_len_sum = doc_len_sum + ? WHERE space = ?",
        (len(documents), sum(len(terms) for _, _, terms in documents), space),
    )


def remove_documents(db: SQLBackend, space: str, where: str, params: Sequence[Any]) -> None:
    """Take the records ``SELECT … FROM records {where}`` selects out of the postings and the
    space's totals (before the rows themselves are deleted)."""
    db._execute(
        "UPDATE spaces SET docs = docs - c.n, doc_len_sum = doc_len_sum - c.len"
        " FROM (SELECT COUNT(*) AS n, COALESCE(SUM(doc_len), 0) AS len FROM records"
        f" {where}) AS c WHERE space = ?",
        (*params, space),
    )
    db._execute(f"DELETE FROM postings WHERE pk IN (SELECT pk FROM records {where})", params)


def lexical(
    db: SQLBackend, space: str, agents: Sequence[str], query: str, cache: PostingsCache
) -> LexicalMatches:
    """BM25 of ``agents``' records matching ``query``'s terms, the postings from ``cache``
    (nothing kept inside a write transaction: ``writing``)."""
    terms = list(dict.fromkeys(default_analyser().query_terms(query)))
    none = LexicalMatches(pk=np.empty(0, np.int64), score=np.empty(0, np.float64))
    if not terms or not agents:
        return none
    with db.snapshot():
        totals = db._query(
            "SELECT docs, doc_len_sum, change_seq FROM spaces WHERE space = ?", (space,)
        )
        if not totals or not totals[0][0]:
            return none
        n_docs, total_len, seq = (int(v) for v in totals[0])
        postings, df = cache.postings(
            db, space, terms, agents, seq, (n_docs, total_len), keep=not db._writing
        )
    if not any(pk.size for pk, _, _ in postings):
        return none
    return bm25(postings, df, n_docs, total_len)


def warm(db: SQLBackend, space: str, cache: PostingsCache) -> int:
    """Hold in ``cache`` the postings of the space's most frequent terms, those in at least
    :data:`_WARM_DF` documents: the terms questions most likely share, and the dearest to fetch
    at a read (about 1 ms per 1,000 postings: a word in 30k of 100k dialogue turns cost a
    question's first read 30 ms, under the handle's lock). Every one of them, up to
    :data:`_WARM_MOST` postings, most frequent first; the cache's limit grows to twice what they
    take (a long-lived process calls this: ``Memory.preload``). Frequencies are estimated from
    the space's :data:`_WARM_SAMPLE` most recent records. Returns how many postings were
    fetched."""
    with db.snapshot():
        totals = db._query(
            "SELECT docs, doc_len_sum, change_seq FROM spaces WHERE space = ?", (space,)
        )
        if not totals or not totals[0][0]:
            return 0
        n_docs, total_len, seq = (int(v) for v in totals[0])
        if n_docs < _WARM_DF:
            return 0
        # (by pk alone, as the catch-up's: see PostingsCache._catch_up)
        counted = db._query(
            "SELECT term, COUNT(*) FROM postings WHERE pk IN"
            " (SELECT pk FROM records WHERE space = ? ORDER BY pk DESC LIMIT ?)"
            " GROUP BY term ORDER BY 2 DESC, term",
            (space, _WARM_SAMPLE),
        )
        sampled = min(n_docs, _WARM_SAMPLE)
        estimates = [(str(term), int(count) * n_docs / sampled) for term, count in counted]
        frequent = sum(e for _, e in estimates if e >= _WARM_DF)
        budget = max(cache.limit // 2, min(int(frequent), _WARM_MOST))
        # (the asked terms keep as much again; a term of over a quarter of it is not kept)
        cache.limit = max(cache.limit, 2 * budget, 4 * int(estimates[0][1]) if estimates else 0)
        chosen = []
        for term, estimate in estimates:
            if estimate < _WARM_DF or estimate > budget:
                break
            chosen.append(term)
            budget -= int(estimate)
        fetched = 0
        for start in range(0, len(chosen), _WARM_BATCH):
            part = chosen[start : start + _WARM_BATCH]
            fetched += cache.warm(db, space, part, seq, (n_docs, total_len))
        return fetched


def bm25(
    postings: Sequence[tuple[I64, I32, I32]], df: F64, n_docs: int, total_len: int
) -> LexicalMatches:
    """BM25 of the documents in ``postings`` — per query term, its postings' (pk, tf, dl), each
    pk at most once — given each term's document frequency in the space.

    A document's score is its terms' parts added one term after the other in the query's term
    order, so it does not depend on the order a database returned the postings in. The sums are
    made in a dense array over the matched keys' range when the postings fill enough of it (a
    common word matches most of a conversation's turns: no sort), else at each key's place among
    the sorted distinct keys — the same additions in the same order either way."""
    idf = np.log1p((n_docs - df + 0.5) / (df + 0.5))
    average = max(total_len / n_docs, 1.0)
    parts = []
    for position, (pk, tf, dl) in enumerate(postings):
        if pk.size:
            norm = _BM25_K1 * (1.0 - _BM25_B + _BM25_B * dl / average)
            parts.append((pk, idf[position] * tf * (_BM25_K1 + 1.0) / (tf + norm)))
    if not parts:
        return LexicalMatches(pk=np.empty(0, np.int64), score=np.empty(0, np.float64))
    low = min(int(pk.min()) for pk, _ in parts)
    span = max(int(pk.max()) for pk, _ in parts) - low + 1
    if span <= _DENSE * sum(pk.size for pk, _ in parts):
        sums = np.zeros(span, dtype=np.float64)
        for pk, part in parts:
            sums[pk - low] += part
        at = np.flatnonzero(sums)  # every part is > 0 (tf >= 1 and Lucene's IDF is positive)
        return LexicalMatches(pk=at + low, score=sums[at])
    keys = np.unique(np.concatenate([pk for pk, _ in parts]))
    score = np.zeros(keys.size, dtype=np.float64)
    for pk, part in parts:
        score[np.searchsorted(keys, pk)] += part
    return LexicalMatches(pk=keys, score=score)


def _recorded(db: SQLBackend) -> str | None:
    rows = db._query("SELECT value FROM store_meta WHERE key = 'analyser'")
    return str(rows[0][0]) if rows else None


def analyser_is_current(db: SQLBackend) -> bool:
    """Whether this process's analyser built the postings. A store indexed with a segmenter this
    process lacks is refused (``ConfigError``): re-indexing it without would lose what the
    segmenter finds, and writing beside it would mix two analyses in one index."""
    recorded = _recorded(db)
    if recorded is None:
        return False
    lacking = missing_segmenters(recorded)
    if lacking:
        raise ConfigError(
            f"{db.location}: its full-text index was built with word segmenters this "
            f"environment lacks ({', '.join(lacking)}); install them (pip install "
            f"'chronomem[languages]') to open it"
        )
    return recorded == default_analyser().name


def reindex_if_stale(db: SQLBackend) -> None:
    """Rebuild the postings when the store was indexed by another analyser (inside the
    migration's write transaction)."""
    if not analyser_is_current(db):
        reindex(db)


def reindex(db: SQLBackend) -> None:
    """Rebuild every posting and per-space total with this process's analyser."""
    analyser = default_analyser()
    with db.write():
        db._execute("DELETE FROM postings")
        db._execute("UPDATE spaces SET docs = 0, doc_len_sum = 0")
        last_pk = 0
        while True:
            rows = db._execute(
                "SELECT pk, space, agent, text, speaker FROM records WHERE pk > ?"
                " ORDER BY pk LIMIT 5000",
                (last_pk,),
            ).fetchall()
            if not rows:
                break
            terms = [analyser.terms(spoken(r[3], r[4])) for r in rows]
            db._executemany(
                "UPDATE records SET doc_len = ? WHERE pk = ?",
                [(len(t), r[0]) for r, t in zip(rows, terms, strict=True)],
            )
            _insert(
                db,
                (
                    (space, pk, agent, t)
                    for (pk, space, agent, _, _), t in zip(rows, terms, strict=True)
                ),
            )
            last_pk = rows[-1][0]
        db._execute(
            "UPDATE spaces SET docs = (SELECT COUNT(*) FROM records r WHERE r.space ="
            " spaces.space), doc_len_sum = (SELECT COALESCE(SUM(doc_len), 0) FROM records r"
            " WHERE r.space = spaces.space)"
        )
        db._execute(
            "INSERT INTO store_meta (key, value) VALUES ('analyser', ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (analyser.name,),
        )
