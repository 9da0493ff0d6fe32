"""The in-memory index saved next to a SQLite file (docs/storage.md, "Index snapshot"): a reopen
loads it and gives the same arrays and rankings as a rebuild from the store, whatever changed
after it was written; a damaged, stale or foreign snapshot is deleted and rebuilt; a purge leaves
none of the record's bytes in it."""

from __future__ import annotations

import random
import shutil
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from chronomem import Memory, SimClock
from chronomem.retrieval.index import AgentArrays
from chronomem.stores.base import EmbeddingMeta
from chronomem.stores.sqlite import SQLiteStore

from ..conftest import T0, FixedEmbedder, store_of

AGENTS = ("ada", "bob", "cy")
_WORDS = (
    "river", "stone", "lamp", "garden", "harbor", "ledger", "violin", "candle", "meadow", "tower",
)  # fmt: skip


def _open(path: Path, clock: SimClock, snapshot: int | None = 0, **kw: object) -> Memory:
    return Memory.open(
        path, embedder=FixedEmbedder(dim=16), clock=clock, index_snapshot=snapshot, **kw
    )  # type: ignore[arg-type]


def _text(rng: random.Random) -> str:
    sentences = rng.choice([1, 1, 2, 3])
    return " ".join(
        " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 8))).capitalize() + "."
        for _ in range(sentences)
    )


def _fill(mem: Memory, clock: SimClock, rng: random.Random, count: int) -> list[str]:
    """Records of every kind the arrays treat apart: observations (some transcript lines with a
    speaker), facts with domains and validity, events witnessed, then lifecycle changes."""
    ids = []
    for i in range(count):
        clock.advance(minutes=rng.randint(1, 90))
        agent = rng.choice(AGENTS)
        roll = rng.random()
        if roll < 0.15:
            result = mem.remember(
                f"fact {i}: " + _text(rng), agent=agent, kind="fact", domain=f"d{i % 4}",
                valid_until=clock.now() + timedelta(days=rng.randint(1, 30)),
            )  # fmt: skip
        elif roll < 0.3:
            result = mem.remember(f"{rng.choice(AGENTS).title()}: " + _text(rng), agent=agent)
        else:
            result = mem.remember(
                _text(rng), agent=agent, importance=rng.randint(1, 10),
                metadata={"embedding_key": f"k{i}"} if rng.random() < 0.1 else None,
            )  # fmt: skip
        if result.id is not None:
            ids.append(result.id)
    return ids


def _change(mem: Memory, clock: SimClock, rng: random.Random, ids: list[str]) -> None:
    """Touches, ratings, verifications, supersessions, forgets and new records."""
    clock.advance(hours=2)
    for rid in rng.sample(ids, 6):
        mem.feedback(rid, rng.choice(["helpful", "harmful"]))
    for rid in rng.sample(ids, 4):
        mem.verify(rid)
    mem.recall("river lamp", agents=list(AGENTS), k=10)
    old = next(
        r for r in ids if (g := mem.get(r)).kind.value == "observation" and g.status.value == "open"
    )
    mem.supersede(old, "a newer " + _text(rng), reason="changed")
    for rid in rng.sample([r for r in ids if r != old], 3):
        mem.forget(rid, "noise")
        ids.remove(rid)
    ids.extend(_fill(mem, clock, rng, 15))
    mem.remember("a new agent arrives. " + _text(rng), agent="dee")


def _queries(mem: Memory) -> list[list[tuple[str, float]]]:
    out = []
    for agents in (["ada"], ["bob", "cy"], [*AGENTS, "dee"]):
        for preset in ("default", "generative-agents"):
            for text in ("river stone", "candle tower meadow", "ledger"):
                hits = mem.peek(text, agents=agents, k=12, preset=preset, explain=True)
                out.append([(h.record.id, round(h.score, 12)) for h in hits])
    return out


def _arrays(mem: Memory, agents: list[str]) -> list[AgentArrays]:
    with store_of(mem).snapshot():
        return mem._h.index.arrays(agents)


def _same_arrays(a: AgentArrays, b: AgentArrays) -> None:
    n = a.n
    assert (a.agent, n, a.pn) == (b.agent, b.n, b.pn)
    for name in AgentArrays.COLUMNS:
        if name != "speaker":  # codes into per-array name lists: compared as names below
            np.testing.assert_array_equal(getattr(a, name)[:n], getattr(b, name)[:n], name)
    assert a.emb is not None
    assert b.emb is not None
    np.testing.assert_array_equal(a.emb[:n], b.emb[:n])
    if a.pn:
        assert a.pemb is not None
        assert b.pemb is not None
        np.testing.assert_array_equal(a.pemb[: a.pn], b.pemb[: b.pn])
        np.testing.assert_array_equal(a.powner[: a.pn], b.powner[: b.pn])
    assert (a.texts, a.keys, a.domains, a.event_ids) == (b.texts, b.keys, b.domains, b.event_ids)
    assert a.position == b.position
    for codes, names in (a.speakers(), b.speakers()):
        assert len(codes) == n
        assert all(c < len(names) for c in codes)
    assert [None if c < 0 else a.speakers()[1][c] for c in a.speakers()[0]] == [
        None if c < 0 else b.speakers()[1][c] for c in b.speakers()[0]
    ]
    for derived in ("text_keys", "domain_keys", "event_keys"):
        np.testing.assert_array_equal(getattr(a, derived)(), getattr(b, derived)())
    assert a.bounds() == b.bounds()


def _index_dir(path: Path) -> Path:
    return Path(f"{path}-index")


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, SimClock, list[str]]:
    """A store of ~120 records, read once and closed: the close wrote the snapshot."""
    path = tmp_path / "memory.db"
    clock = SimClock(T0)
    rng = random.Random(3)
    with _open(path, clock) as mem:
        ids = _fill(mem, clock, rng, 120)
        mem.peek("warm", agents=list(AGENTS))
    assert len(list(_index_dir(path).iterdir())) == 1
    return path, clock, ids


def test_a_reopen_loads_the_snapshot_and_ranks_as_a_rebuild(
    built: tuple[Path, SimClock, list[str]],
) -> None:
    path, clock, _ = built
    with _open(path, clock) as warm:
        fast = _queries(warm)
        assert warm._h.index.loaded_from == "snapshot"
        loaded = _arrays(warm, list(AGENTS))
    with _open(path, clock, snapshot=None) as cold:
        assert _queries(cold) == fast
        assert cold._h.index.loaded_from == "store"
        for a, b in zip(loaded, _arrays(cold, list(AGENTS)), strict=True):
            _same_arrays(a, b)


def test_changes_after_the_snapshot_are_applied_on_reopen(
    built: tuple[Path, SimClock, list[str]],
) -> None:
    """Another handle (another process, as far as the file knows) changes the store without
    writing a snapshot; the reopen loads the old snapshot and applies exactly those changes,
    then keeps in step with later writes."""
    path, clock, ids = built
    with _open(path, clock, snapshot=None) as other:
        _change(other, clock, random.Random(5), ids)
    everyone = [*AGENTS, "dee"]
    with _open(path, clock) as warm, _open(path, clock, snapshot=None) as cold:
        assert _queries(warm) == _queries(cold)
        assert warm._h.index.loaded_from == "snapshot"
        for a, b in zip(_arrays(warm, everyone), _arrays(cold, everyone), strict=True):
            _same_arrays(a, b)
        # the loaded arrays grow, change and shrink like any others
        _change(warm, clock, random.Random(6), ids)
        assert _queries(warm) == _queries(cold)
        for a, b in zip(_arrays(warm, everyone), _arrays(cold, everyone), strict=True):
            _same_arrays(a, b)


def test_the_snapshot_is_rewritten_when_behind(built: tuple[Path, SimClock, list[str]]) -> None:
    """Rewritten on close when more than max(100, 2% of the rows) changed since it was
    written; a few changes are left for the next open to apply."""
    path, clock, ids = built
    (snap,) = _index_dir(path).iterdir()
    written = snap.stat().st_ino
    with _open(path, clock) as mem:
        mem.peek("ledger")
        _change(mem, clock, random.Random(8), ids)  # ~40 rows
    assert snap.stat().st_ino == written
    with _open(path, clock) as mem:
        mem.peek("ledger")
        assert 0 < mem._h.index._changed < 100
        _fill(mem, clock, random.Random(9), 100)
    assert snap.stat().st_ino != written
    with _open(path, clock) as mem:
        mem.peek("ledger")
        index = mem._h.index
        assert index.loaded_from == "snapshot"
        assert index._changed == 0  # the snapshot was at the store's last change


def _damage(snap: Path, how: str) -> None:
    data = bytearray(snap.read_bytes())
    if how == "truncated":
        snap.write_bytes(bytes(data[: len(data) // 2]))
    elif how == "garbage":
        snap.write_bytes(b"not a snapshot at all" * 10)
    elif how == "empty":
        snap.write_bytes(b"")
    elif how == "header":
        at = data.index(b'"seq"')
        data[at : at + 5] = b'"sez"'
        snap.write_bytes(bytes(data))
    elif how == "extended":
        snap.write_bytes(bytes(data) + b"\x00" * 64)


@pytest.mark.parametrize("how", ["truncated", "garbage", "empty", "header", "extended"])
def test_a_damaged_snapshot_is_deleted_and_rebuilt(
    built: tuple[Path, SimClock, list[str]], how: str
) -> None:
    path, clock, _ = built
    with _open(path, clock, snapshot=None) as cold:
        expected = _queries(cold)
    (snap,) = _index_dir(path).iterdir()
    _damage(snap, how)
    with _open(path, clock) as mem:
        assert _queries(mem) == expected
        assert mem._h.index.loaded_from == "store"
        assert not snap.exists()
    assert snap.exists()  # written again on close
    with _open(path, clock) as mem:
        assert _queries(mem) == expected
        assert mem._h.index.loaded_from == "snapshot"


def test_a_snapshot_ahead_of_the_store_is_stale(tmp_path: Path) -> None:
    """An older copy of the database restored under a newer snapshot."""
    path = tmp_path / "memory.db"
    clock = SimClock(T0)
    rng = random.Random(4)
    with _open(path, clock, snapshot=None) as mem:
        _fill(mem, clock, rng, 40)
    shutil.copy(path, tmp_path / "backup.db")
    with _open(path, clock) as mem:
        _fill(mem, clock, rng, 20)
        mem.peek("warm", agents=list(AGENTS))
    path.unlink()
    shutil.copy(tmp_path / "backup.db", path)
    with _open(path, clock, snapshot=None) as cold:
        expected = _queries(cold)
    with _open(path, clock) as mem:
        assert _queries(mem) == expected
        assert mem._h.index.loaded_from == "store"


def test_a_snapshot_of_another_store_space_or_dimension_is_not_used(tmp_path: Path) -> None:
    clock = SimClock(T0)
    stores = {}
    for name, dim, seed in (("one", 16, 1), ("two", 16, 2), ("wide", 32, 1)):
        path = tmp_path / name / "memory.db"
        path.parent.mkdir()
        with Memory.open(
            path, embedder=FixedEmbedder(dim=dim), clock=SimClock(T0), index_snapshot=0
        ) as mem:
            _fill(mem, clock, random.Random(seed), 40)
            mem.peek("warm", agents=list(AGENTS))
        stores[name] = path
    (theirs,) = _index_dir(stores["two"]).iterdir()
    for source, target in (("one", "two"), ("wide", "one")):
        (snap,) = _index_dir(stores[source]).iterdir()
        shutil.copy(snap, _index_dir(stores[target]) / snap.name)
    with _open(stores["two"], clock, snapshot=None) as cold:
        expected = _queries(cold)
    with _open(stores["two"], clock) as mem:  # same seq and dimension, other records
        assert _queries(mem) == expected
        assert mem._h.index.loaded_from == "store"
    with _open(stores["one"], clock) as mem:  # wider vectors
        mem.peek("x")
        assert mem._h.index.loaded_from == "store"
    # another space's snapshot under this space's name
    other = Memory.open(stores["two"], embedder=FixedEmbedder(dim=16), space="elsewhere")
    with other:
        path = other._h.index.snapshot_path()
        assert path is not None
        shutil.copy(theirs, path)
        other.peek("x")
        assert other._h.index.loaded_from is None  # nothing of this space to load
        assert not path.exists()


def test_small_spaces_and_disabled_snapshots_write_nothing(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    clock = SimClock(T0)
    with _open(path, clock, snapshot=1000) as mem:
        _fill(mem, clock, random.Random(1), 30)
        mem.peek("warm")
    assert not _index_dir(path).exists()
    with _open(path, clock, snapshot=None) as mem:
        mem.peek("warm")
    assert not _index_dir(path).exists()
    with pytest.raises(Exception, match="index_snapshot"):
        _open(path, clock, snapshot=-1)


def _mapped_snapshots(path: Path) -> list[str]:
    """This process's memory mappings of the store's snapshot files (deleted ones included)."""
    maps = Path("/proc/self/maps")
    if not maps.exists():
        pytest.skip("needs /proc/self/maps")
    return [line for line in maps.read_text().splitlines() if f"{path.name}-index/" in line]


def _files(directory: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file())


def test_a_purge_leaves_no_byte_of_the_record_in_any_snapshot(tmp_path: Path) -> None:
    """The snapshot holds texts and vectors; a purge deletes every snapshot of the store, one
    written again holds nothing of the purged record, and a process that loaded its arrays
    before the purge writes none of it either."""
    path = tmp_path / "memory.db"
    clock = SimClock(T0)
    secret_text = "The vault code is qzvexomarblu. It opens the qzdorivan door."
    with _open(path, clock) as mem:
        _fill(mem, clock, random.Random(2), 60)
        secret = mem.remember(secret_text, agent="ada", sensitivity="secret").id
        assert secret is not None
        (ada,) = _arrays(mem, ["ada"])
        row = ada.position[secret]
        assert ada.emb is not None
        assert ada.pemb is not None
        vectors = [ada.emb[row], *ada.pemb[: ada.pn][ada.powner[: ada.pn] == row]]
        assert len(vectors) == 3  # the record's own vector and one per sentence
        mem.peek("warm", agents=list(AGENTS))
    needles = [b"qzvexomarblu", b"qzdorivan", *(v.astype("<f4").tobytes()[:16] for v in vectors)]
    assert all(n in _files(_index_dir(path)) for n in needles)  # the search can find them

    with _open(path, clock) as holder, _open(path, clock) as purger:
        holder.peek("vault code", agent="ada")  # its arrays hold the secret
        purger.peek("vault code", agent="ada")
        assert _mapped_snapshots(path)  # both map the snapshot file
        result = purger.forget(secret, "erasure request")
        assert result.scrubbed, result.remains
        assert not any(n in _files(tmp_path) for n in needles)
        holder.peek("vault code", agent="ada")
        purger.peek("vault code", agent="ada")
        # the deleted file's bytes live on while mapped: each handle's next read let go of it
        assert _mapped_snapshots(path) == []
    assert any(_index_dir(path).iterdir())  # written again on close
    found = _files(tmp_path)
    assert [n for n in needles if n in found] == []
    with _open(path, clock) as mem:
        assert secret not in {h.record.id for h in mem.peek("vault code", agent="ada", k=100)}
        assert mem._h.index.loaded_from == "snapshot"


class _PurgeAfterSync(SQLiteStore):
    """A real SQLite store that runs ``during_save`` once, the next time a handle asks for the
    embedding metadata — which :meth:`SpaceIndex.save` does right after its sync."""

    during_save: Callable[[], None] | None = None

    def embedding_meta(self) -> EmbeddingMeta:
        step, self.during_save = self.during_save, None
        if step is not None:
            step()
        return super().embedding_meta()


def test_an_index_written_with_a_purge_in_flight_is_deleted(tmp_path: Path) -> None:
    """A purge committed between a closing handle's sync and its write: the snapshot it wrote
    holds the purged record, so it deletes it; the next close writes a clean one."""
    path = tmp_path / "memory.db"
    clock = SimClock(T0)
    with _open(path, clock, snapshot=None) as mem:
        ids = _fill(mem, clock, random.Random(9), 40)
        vector = store_of(mem).get_embedding(mem.space, ids[0])
    assert vector is not None
    needle = vector.astype("<f4").tobytes()[:16]
    store = _PurgeAfterSync(path)
    holder = Memory.open(store, embedder=FixedEmbedder(dim=16), clock=clock, index_snapshot=0)
    holder.peek("warm", agents=list(AGENTS))
    with _open(path, clock, snapshot=None) as purger:
        store.during_save = lambda: print(purger.forget(ids[0], "erasure request", purge=True))
        assert holder._h.index.save() is False
        assert not any(_index_dir(path).iterdir())
        holder.close()  # syncs, then writes a snapshot without the record
    assert needle not in _files(_index_dir(path))
    with _open(path, clock) as mem:
        assert ids[0] not in {h.record.id for h in mem.peek("warm", agents=list(AGENTS), k=200)}
        assert mem._h.index.loaded_from == "snapshot"


def test_a_handle_that_only_wrote_leaves_a_warm_store(tmp_path: Path) -> None:
    """A bulk load that never reads (a simulation's write phase) writes the snapshot at close:
    the next process's first read maps it instead of rebuilding; a handle that wrote a few
    records leaves none (the next reader's sync is cheap)."""
    clock = SimClock(T0)
    few, many = tmp_path / "few.db", tmp_path / "many.db"
    with _open(few, clock) as mem:
        mem.remember_many([{"text": f"note {i}"} for i in range(40)], agent="ada")
    assert not _index_dir(few).exists() or not list(_index_dir(few).iterdir())
    with _open(many, clock) as mem:
        rng = random.Random(9)
        for agent in AGENTS:
            mem.remember_many([{"text": _text(rng)} for _ in range(50)], agent=agent)
        assert not mem._h.index._agents  # nothing loaded: a write-only handle
    assert len(list(_index_dir(many).iterdir())) == 1
    with _open(many, clock) as warm, _open(many, clock, snapshot=None) as cold:
        assert _queries(warm) == _queries(cold)
        assert warm._h.index.loaded_from == "snapshot"
        everyone = [*AGENTS, "dee"]
        for a, b in zip(_arrays(warm, everyone), _arrays(cold, everyone), strict=True):
            _same_arrays(a, b)


def test_import_and_migrate_leave_a_warm_store(tmp_path: Path) -> None:
    """``import`` through a handle and ``migrate`` between stores (no handle at all) leave the
    snapshot of what they wrote (above the default threshold of 10,000 records)."""
    from chronomem.transfer.migrate import migrate

    clock = SimClock(T0)
    rng = np.random.default_rng(3)
    source = tmp_path / "source.db"
    with Memory.open(source, embedder=None, clock=clock, index_snapshot=None) as mem:
        vectors = rng.normal(size=(10_050, 16)).astype(np.float32)
        mem.remember_many(
            [{"text": f"note {i}", "embedding": v} for i, v in enumerate(vectors)], agent="ada"
        )
        mem.export(tmp_path / "archive.jsonl")
    copy = tmp_path / "copy.db"
    migrate(source, copy)
    assert len(list(_index_dir(copy).iterdir())) == 1
    imported = tmp_path / "imported.db"
    with Memory.open(imported, embedder=None, clock=clock) as mem:
        mem.import_(tmp_path / "archive.jsonl")
    assert len(list(_index_dir(imported).iterdir())) == 1
    for path in (copy, imported):
        with Memory.open(path, embedder=None, clock=clock) as mem:
            hits = mem.peek("q", agent="ada", query_embedding=vectors[7], k=3)
            assert hits[0].record.text == "note 7"
            assert mem._h.index.loaded_from == "snapshot"


def test_appending_after_a_load_leaves_the_snapshots_texts_undecoded(
    built: tuple[Path, SimClock, list[str]],
) -> None:
    """The first write after a reopen used to decode every text of the snapshot (0.3 s at 100k
    records, inside the write's sync): new rows' texts and their dedup keys are kept apart until
    something asks for every text, then come after the snapshot's in row order."""
    path, clock, _ = built
    with _open(path, clock) as warm, _open(path, clock, snapshot=None) as cold:
        warm.peek("ledger", agents=list(AGENTS))
        for n in range(3):
            warm.remember(f"the ledger moved to the tower {n}", agent="ada")
        (ada,) = _arrays(warm, ["ada"])
        assert callable(ada._texts)  # the snapshot's texts are still undecoded
        assert ada.texts_from(ada.n - 3) == [f"the ledger moved to the tower {n}" for n in range(3)]
        # a multi-agent read dedups with the new rows' keys, computed without decoding
        assert _queries(warm) == _queries(cold)
        assert callable(ada._texts)
        for a, b in zip(_arrays(warm, list(AGENTS)), _arrays(cold, list(AGENTS)), strict=True):
            _same_arrays(a, b)  # (asks for every text: decoded, the appended last)
        assert not callable(ada._texts)
        warm.remember("and back to the river", agent="ada")
        (again,) = _arrays(warm, ["ada"])
        assert again.texts[-1] == "and back to the river"


def test_preload_readies_large_agents_and_leaves_small_ones_laid_out(
    built: tuple[Path, SimClock, list[str]],
) -> None:
    """``preload`` loads every agent from the snapshot and gives the agents of at least
    ``room_from`` rows room for new ones (and their int8 copy when reads scan one); reads and
    writes after it give what a handle that never preloaded gives."""
    path, clock, ids = built
    with (
        _open(path, clock, compact_vectors=0) as warm,
        _open(path, clock, snapshot=None, compact_vectors=0) as cold,
    ):
        index = warm._h.index
        assert not index._agents  # nothing loaded yet
        sizes = {a.agent: a.n for a in _arrays(cold, list(AGENTS))}
        index.preload(room_from=max(sizes.values()))
        assert index.loaded_from == "snapshot"
        large = {a for a, n in sizes.items() if n == max(sizes.values())}
        assert sorted(index._agents) == sorted(AGENTS)
        assert large != set(AGENTS)
        for agent, arrays in index._agents.items():
            assert arrays.span is not None
            span, member = arrays.span
            if agent in large:
                assert arrays.capacity > arrays.n
                assert arrays.codes is not None
                assert not span.laid_out(member, arrays)  # copied out of the layout
            else:
                assert arrays.capacity == arrays.n
                assert arrays.codes is None
                assert span.laid_out(member, arrays)
        assert _queries(warm) == _queries(cold)
        _change(warm, clock, random.Random(7), ids)
        everyone = [*AGENTS, "dee"]
        assert _queries(warm) == _queries(cold)
        for a, b in zip(_arrays(warm, everyone), _arrays(cold, everyone), strict=True):
            _same_arrays(a, b)
