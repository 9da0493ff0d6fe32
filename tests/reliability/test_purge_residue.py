"""Purge leaves no byte of the record in any file of the store, whatever the page layout
(docs/reliability.md, "Purge").

Each layout is a new store built from a seed: a page size (1 to 64 KiB), a few hundred records
before and after the secret of random lengths (short lines to multi-page texts), agents, vector
widths, deletions and other purges around it, and a secret whose words, metadata, tag, domain and
vector are all distinctive. After the purge every file of the store is searched for each of them:
the words, their index terms (what the postings hold), the metadata, and the vector's bytes.
SQLite rewrites the file on every purge; PostgreSQL after ``scrub`` (its data files are searched
when this process may read them; its WAL keeps copies, as the scrub says)."""

from __future__ import annotations

import random
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chronomem import Memory, PostgresStore, SimClock
from chronomem.analysis.analyser import default_analyser

from ..conftest import store_of
from .conftest import Plan

PAGE_SIZES = (1024, 4096, 8192, 16384, 65536)
_LETTERS = "bcdfghjklmnpqrstvwxz"


def _word(rng: random.Random, syllables: int) -> str:
    return "".join(rng.choice(_LETTERS) + rng.choice("aeiou") for _ in range(syllables))


def _text(rng: random.Random, long: bool, near: str = "") -> str:
    """Random words; with ``near``, half of them share its first letters, so their postings
    sort next to its own and keep splitting and rebuilding the pages that hold it."""
    words = rng.choice([3, 12, 40, 400 if long else 25, 2500 if long else 60])
    return " ".join(
        (near[: rng.randint(3, len(near) - 1)] if near and rng.random() < 0.5 else "")
        + _word(rng, rng.randint(1, 4))
        for _ in range(words)
    )


def _build(mem: Memory, seed: int, *, dim: int | None) -> tuple[str, list[bytes]]:
    """Fill ``mem`` with layout ``seed``; return the secret's id and the byte strings that must
    be gone once it is purged."""
    rng = random.Random(seed)
    vectors = np.random.default_rng(seed)
    long = rng.random() < 0.4
    agents = [f"agent{i}" for i in range(rng.randint(1, 4))]
    words = [f"qz{_word(rng, 3)}x{seed}y{i}" for i in range(4)]
    near = words[rng.randrange(2)] if rng.random() < 0.8 else ""

    def filler(count: int) -> None:
        for start in range(0, count, 50):
            mem.remember_many(
                [
                    {
                        "text": _text(rng, long, near),
                        "agent": rng.choice(agents),
                        "embedding": None if dim is None else vectors.normal(size=dim),
                    }
                    for _ in range(min(50, count - start))
                ]
            )

    filler(rng.randint(0, 300))
    secret_text = " ".join(words[:2])
    if rng.random() < 0.5:
        secret_text = f"{_text(rng, long)} {secret_text} {_text(rng, False)}"
    vector = None if dim is None else vectors.normal(size=dim).astype(np.float32)
    secret = mem.remember(
        secret_text, agent=rng.choice(agents), embedding=vector, metadata={"pin": words[2]},
        tags=[words[3]], domain=f"d{words[0]}", sensitivity="secret",
    ).id  # fmt: skip
    assert secret is not None
    filler(rng.randint(0, 300))
    others = [h.record.id for h in mem.peek(_word(rng, 2), k=20) if h.record.id != secret]
    for rid in rng.sample(others, min(len(others), rng.randint(0, 3))):
        mem.forget(rid, "noise", purge=rng.random() < 0.5)
    return secret, _needles(words, vector)


def _build_dense(mem: Memory, seed: int) -> tuple[str, list[bytes]]:
    """The other family: 4 KiB pages, 16-d vectors, up to 400 records on each side of the
    secret, one in three layouts with multi-page texts. Its seed 6 left a posting of the secret
    in the unused gap of a live leaf page before purges rewrote the file."""
    rng = random.Random(seed)
    words = [f"zq{_word(rng, 4)}x{seed}" for _ in range(3)]
    vector = np.random.default_rng(seed).normal(size=16).astype(np.float32)
    before, after = rng.randint(0, 400), rng.randint(0, 400)
    long = rng.random() < 0.3

    def filler(count: int) -> None:
        for start in range(0, count, 50):
            items = []
            for _ in range(min(50, count - start)):
                n = rng.choice([3, 10, 40, 200 if long else 20, 1500 if long else 30])
                text = " ".join(_word(rng, rng.randint(2, 5)) for _ in range(n))
                agent = rng.choice("abc")
                embedding = np.random.default_rng(rng.randint(0, 1 << 30)).normal(size=16)
                items.append({"text": text, "agent": agent, "embedding": embedding})
            mem.remember_many(items)

    filler(before)
    text = " ".join(words)
    if rng.random() >= 0.5:
        text = " ".join(_word(rng, rng.randint(2, 5)) for _ in range(rng.randint(1, 300)))
        text += " " + " ".join(words)
    secret = mem.remember(
        text, agent=rng.choice("abc"), embedding=vector, metadata={"secret": words[0]},
        tags=[words[1]], sensitivity="secret",
    ).id  # fmt: skip
    assert secret is not None
    filler(after)
    return secret, _needles(words, vector)


def _needles(words: list[str], vector: np.ndarray | None) -> list[bytes]:
    """The secret's own words and their index terms (the filler around them is in other
    records too), and its vector's first and last 16 bytes."""
    needles = [w.encode() for w in words] + [
        t.encode() for t in default_analyser().terms(" ".join(words))
    ]
    if vector is not None:
        raw = vector.astype("<f4").tobytes()
        needles += [raw[:16], raw[-16:]]
    return needles


def _files(directory: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file())


def _sqlite_layout(directory: Path, layout: int) -> list[bytes]:
    """Build layout number ``layout``, purge its secret, and return the needles still found in
    the store's files (none, we hope). Even layouts are of the dense family (seed layout // 2,
    so layout 12 is its seed 6), odd ones vary the page size."""
    seed = layout // 2
    rng = random.Random(seed)
    path = directory / "memory.db"
    page_size = 4096 if layout % 2 == 0 else rng.choice(PAGE_SIZES)
    with sqlite3.connect(path) as conn:  # an empty database of that page size; chronomem fills it
        conn.execute(f"PRAGMA page_size = {page_size}")
        conn.execute("PRAGMA user_version = 0")
    clock = SimClock(datetime(2024, 1, 1, tzinfo=UTC))
    with Memory.open(path, embedder=None, clock=clock) as mem:
        if layout % 2 == 0:
            secret, needles = _build_dense(mem, seed)
        else:
            secret, needles = _build(mem, seed, dim=rng.choice([None, 8, 64, 384]))
        assert any(n in _files(directory) for n in needles)  # the search can find them
        result = mem.forget(secret, "erasure request")
        assert result.scrubbed, result.remains
    found = _files(directory)
    return [n for n in needles if n in found]


def test_no_purge_residue_in_any_sqlite_page_layout(
    tmp_path: Path, plan: Plan, figures: dict[str, Any]
) -> None:
    residue = {}
    # Layout 12 first: the one known to leave residue before purges rewrote the file.
    layouts = [12, *(n for n in range(plan.residue_layouts) if n != 12)][: plan.residue_layouts]
    for layout in layouts:
        directory = tmp_path / f"layout{layout}"
        directory.mkdir()
        found = _sqlite_layout(directory, layout)
        if found:
            residue[layout] = found
    figures["purge residue (SQLite): layouts searched"] = plan.residue_layouts
    figures["purge residue (SQLite): layouts with residue"] = len(residue)
    assert residue == {}


def _postgres_directory(store: PostgresStore) -> Path | None:
    rows = store._query(
        "SELECT current_setting('data_directory') || '/' || pg_relation_filepath('records')"
    )
    path = Path(rows[0][0]).parent
    try:
        next(path.iterdir())
    except (OSError, StopIteration):
        return None
    return path


def test_no_purge_residue_in_postgresql_data_files_after_scrub(
    postgres_admin: str, plan: Plan, figures: dict[str, Any]
) -> None:
    from chronomem.stores.postgres import scratch_database

    residue = {}
    for seed in range(plan.residue_layouts_postgres):
        with scratch_database(postgres_admin, prefix="chronomem_residue") as url:
            clock = SimClock(datetime(2024, 1, 1, tzinfo=UTC))
            with Memory.open(url, embedder=None, clock=clock) as mem:
                store = store_of(mem)
                assert isinstance(store, PostgresStore)
                directory = _postgres_directory(store)
                if directory is None:
                    pytest.skip("the server's data files are not readable from this process")
                secret, needles = _build(mem, 10_000 + seed, dim=8)
                mem.forget(secret, "erasure request")
                remains = mem.scrub().remains
                assert remains is not None
                assert "WAL" in remains
                found = _files(directory)
            missing = [n for n in needles if n in found]
            if missing:
                residue[seed] = missing
    figures["purge residue (PostgreSQL data files after scrub): layouts searched"] = (
        plan.residue_layouts_postgres
    )
    figures["purge residue (PostgreSQL data files after scrub): layouts with residue"] = len(
        residue
    )
    assert residue == {}


@pytest.mark.slow
def test_no_purge_residue_with_the_model_and_passages(
    tmp_path: Path, plan: Plan, figures: dict[str, Any], minilm: Any
) -> None:
    """The real model: record vectors and a passage vector per sentence, all purged."""
    residue = {}
    for seed in range(plan.residue_layouts_model):
        rng = random.Random(seed)
        directory = tmp_path / f"model{seed}"
        directory.mkdir()
        path = directory / "memory.db"
        clock = SimClock(datetime(2024, 1, 1, tzinfo=UTC))
        with Memory.open(path, embedder=minilm, clock=clock) as mem:
            mem.remember_many([_text(rng, False) + ". " + _text(rng, False) for _ in range(40)])
            words = [f"qz{_word(rng, 3)}x{seed}y{i}" for i in range(2)]
            secret = mem.remember(
                f"The vault code is {words[0]}. It opens the {words[1]} door.",
                sensitivity="secret",
            ).id
            assert secret is not None
            with store_of(mem).snapshot():
                item = next(
                    s for s in store_of(mem).iter_records(mem.space) if s.record.id == secret
                )
            assert item.embedding is not None
            assert item.passages is not None
            vectors = [item.embedding, *item.passages]
            mem.remember_many([_text(rng, False) for _ in range(40)])
            mem.forget(secret, "erasure request")
        needles = [w.encode() for w in words] + [v.astype("<f4").tobytes()[:16] for v in vectors]
        found = _files(directory)
        if any(n in found for n in needles):
            residue[seed] = [n for n in needles if n in found]
    figures["purge residue (SQLite, real model with passages): layouts searched"] = (
        plan.residue_layouts_model
    )
    figures["purge residue (SQLite, real model with passages): layouts with residue"] = len(residue)
    assert residue == {}
