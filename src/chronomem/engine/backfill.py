"""Backfills (DESIGN §3): vectors and passage vectors for the records of a space written
without them, a batch per transaction, embedded as writes embed (``write.embed_texts``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from chronomem.checks import flag, positive_int
from chronomem.engine.handle import Handle
from chronomem.engine.write import embed_texts
from chronomem.errors import ConfigError
from chronomem.stores.base import StoredRecord
from chronomem.text import passages

__all__ = ["embed_passages", "embed_records"]


def _backfill(
    h: Handle, verb: str, batch: int, progress: bool, wanted: Callable[[StoredRecord], bool]
) -> Iterator[list[tuple[str, str]]]:
    """The ``(id, text)`` of the space's records a backfill ``verb`` embeds, ``batch`` at a
    time (read from one snapshot first; each batch is then written in its own transaction)."""
    positive_int(batch, "batch")
    flag(progress, "progress")
    if h.embedder is None:
        raise ConfigError(f"{verb} needs an embedder (Memory.open(embedder=...))")
    with h.store.snapshot():
        todo = [
            (s.record.id, s.record.read_text) for s in h.store.iter_records(h.space) if wanted(s)
        ]
    for start in range(0, len(todo), batch):
        yield todo[start : start + batch]


def embed_records(h: Handle, *, progress: bool, batch: int) -> int:
    """Embed the records of the space written without a vector (see
    :meth:`Memory.embed_records`)."""
    done = 0
    for chunk in _backfill(h, "embed_records", batch, progress, lambda s: s.embedding is None):
        texts = [t for _, t in chunk]
        wholes, parts = embed_texts(h, texts, [True] * len(texts), progress=progress)
        h.fix_dim(int(wholes.shape[1]))
        done += h.store.set_embeddings(
            h.space,
            [(rid, v, p) for (rid, _), v, p in zip(chunk, wholes, parts, strict=True)],
        )
    return done


def embed_passages(h: Handle, *, progress: bool, batch: int) -> int:
    """Backfill passage vectors (see :meth:`Memory.embed_passages`)."""
    done = 0
    for chunk in _backfill(
        h,
        "embed_passages",
        batch,
        progress,
        lambda s: (
            s.embedding is not None and s.passages is None and bool(passages(s.record.read_text))
        ),
    ):
        texts = [t for _, t in chunk]
        need = [False] * len(texts)  # their vectors stay as written
        parts = embed_texts(h, texts, need, progress=progress, with_passages=True)[1]
        items = [(rid, p) for (rid, _), p in zip(chunk, parts, strict=True) if p is not None]
        h.store.set_passages(h.space, items)
        done += len(items)
    return done
