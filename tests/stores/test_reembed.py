"""Switching a store to another embedding model while it serves (issue 27,
docs/design/reembed.md), on every backend: both vectors during the switch, reads never refused,
resumable, one cut-over after which old-model handles read lexically and refuse vectors."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from chronomem import ConflictError, EmbedderMismatchError, Memory, SimClock

from ..conftest import FixedEmbedder, GatedEmbedder, store_of

TEXTS = [
    "The lighthouse lamp is broken",
    "The keeper ordered a new lens. It arrives on Friday.",
    "Gulls nest on the north rock",
    "The supply boat comes every second Tuesday",
]


class Counting(FixedEmbedder):
    """Fixed vectors that count the texts they embed."""

    def __init__(self, model_id: str, dim: int) -> None:
        super().__init__(dim=dim, model_id=model_id)
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str], *, progress: bool = False) -> npt.NDArray[np.float32]:
        self.texts += list(texts)
        return super().embed(texts, progress=progress)


def _pending(mem: Memory) -> int:
    return int(store_of(mem)._query("SELECT COUNT(*) FROM reembed_vectors")[0][0])


def _fill(location: str | Path, clock: SimClock) -> tuple[list[str], str]:
    old = Counting("test/old", 8)
    with (
        Memory.open(location, embedder=old, clock=clock) as a,
        Memory.open(location, embedder=old, clock=clock, space="harbour") as b,
    ):
        ids = [a.remember(t).id for t in TEXTS[:3]]
        ids.append(b.remember(TEXTS[3], speaker="keeper").id)
        event = a.add_event("the storm of March").id
    return [i for i in ids if i is not None], event


def test_a_switch_serves_throughout_and_cuts_over_once(
    location: str | Path, clock: SimClock
) -> None:
    ids, event = _fill(location, clock)
    new = Counting("test/new", 12)
    with Memory.open(location, embedder=Counting("test/old", 8), clock=clock) as old:
        before = [h.record.id for h in old.peek("lamp lens", k=3)]
        with Memory.open(location, embedder=None, clock=clock) as switcher:
            prepared = switcher.reembed(new, batch=2, cut_over=False)
            assert (prepared.cut_over, prepared.embedded, prepared.total) == (False, 5, 5)
            state = switcher.reembed_state()
            assert state is not None
            assert (state.model, state.dim, state.done, state.total) == ("test/new", 12, 5, 5)
            # during the switch: the old model reads and writes as before
            assert [h.record.id for h in old.peek("lamp lens", k=3)] == before
            late = old.remember("A second keeper arrived").id
            with pytest.raises(EmbedderMismatchError, match="is switching"):
                Memory.open(location, embedder=new, clock=clock)
            new.texts.clear()
            done = switcher.reembed(new, batch=2)  # resumes: only the late record is new work
            assert done.cut_over
            assert new.texts == ["A second keeper arrived"]
            assert done.total == 6
            assert _pending(switcher) == 0
            assert switcher.reembed_state() is None
            # the switcher adopted the new model
            assert len(store_of(switcher).get_embedding(switcher.space, ids[0])) == 12
            assert switcher.remember("The fog horn works").stored
        # after the cut-over the old handle reads by words, and says so; it refuses vectors
        hits = old.peek("lamp lens", k=3, explain=True)
        assert hits
        assert hits[0].breakdown is not None
        assert "switched to test/new" in hits[0].breakdown.cues["model"]
        assert hits[0].breakdown.relevance_dense is None
        with pytest.raises(EmbedderMismatchError, match="switched to 'test/new'"):
            old.remember("The lamp works again")
    with pytest.raises(EmbedderMismatchError, match="refusing to mix in"):
        Memory.open(location, embedder=Counting("test/old", 8), clock=clock)
    check = Counting("test/new", 12)
    with Memory.open(location, embedder=check, clock=clock) as mem:
        assert late is not None
        rows = store_of(mem)._query("SELECT text, speaker, embedding, passages FROM records")
        assert len(rows) == 6  # four, the late one, the switcher's, of both spaces
        for text, speaker, blob, parts in rows:
            stored = np.frombuffer(bytes(blob), dtype="<f4")
            assert stored.shape == (12,)
            if parts is None:  # its own vector, not a mean of its passages'
                expected = check.vector(f"{speaker}: {text}" if speaker else text)
                np.testing.assert_allclose(stored, expected, atol=1e-6)
        event_vectors = store_of(mem).event_embeddings(mem.space, [event])
        np.testing.assert_allclose(
            event_vectors[event], check.vector("the storm of March"), atol=1e-6
        )
        assert mem.peek("lamp", k=1, explain=True)[0].breakdown.relevance_dense is not None  # type: ignore[union-attr]


@pytest.mark.parametrize("verb", ["peek", "remember"])
def test_vectors_made_before_the_lock_by_a_model_the_handle_left_are_not_used(
    location: str | Path, clock: SimClock, verb: str
) -> None:
    """A read's or write's model run goes before the handle's lock; when the handle's own
    ``reembed`` adopts another model meanwhile, the call embeds again with the new one."""
    _fill(location, clock)
    slow = "the slow lamp question"
    old, new = GatedEmbedder(slow, model_id="test/old"), Counting("test/new", 12)
    with Memory.open(location, embedder=old, clock=clock) as mem, ThreadPoolExecutor(1) as pool:
        call = pool.submit(getattr(mem, verb), slow)
        assert old.entered.wait(10)
        mem.reembed(new)
        new.texts.clear()
        old.release.set()
        result = call.result(timeout=30)
        assert new.texts.count(slow) == 1  # embedded again, by the handle's model
        if verb == "remember":
            hits = mem.peek("x", query_embedding=new.vector(slow), k=1, rank_by="similarity")
            assert hits[0].record.id == result.id
            assert hits[0].similarity == pytest.approx(1.0)  # stored with the new model
        else:
            assert {h.record.text for h in result} == set(TEXTS[:3])  # every record, read


def test_passages_are_remade_for_records_that_had_them(
    location: str | Path, clock: SimClock
) -> None:
    ids, _ = _fill(location, clock)
    with Memory.open(location, embedder=None, clock=clock) as mem:
        mem.reembed(Counting("test/new", 12))
        rows = dict(
            store_of(mem)._query(
                "SELECT id, passages FROM records WHERE id IN (?, ?)", (ids[0], ids[1])
            )
        )
    assert rows[ids[0]] is None  # one sentence: none before, none after
    assert len(bytes(rows[ids[1]])) == 2 * 12 * 4  # two sentences, 12-wide float32


def test_a_purge_during_a_switch_takes_the_pending_vector(
    location: str | Path, clock: SimClock
) -> None:
    ids, _ = _fill(location, clock)
    with Memory.open(location, embedder=Counting("test/old", 8), clock=clock) as mem:
        with Memory.open(location, embedder=None, clock=clock) as switcher:
            switcher.reembed(Counting("test/new", 12), cut_over=False)
        assert _pending(mem) == 5
        mem.forget(ids[0], "personal data request", purge=True)
        assert _pending(mem) == 4
        pks = store_of(mem)._query("SELECT pk FROM reembed_vectors WHERE kind = 'r'")
        live = store_of(mem)._query("SELECT pk FROM records")
        assert {p for (p,) in pks} <= {p for (p,) in live}


def test_another_switch_waits_for_the_first_or_its_cancellation(
    location: str | Path, clock: SimClock
) -> None:
    _fill(location, clock)
    with Memory.open(location, embedder=None, clock=clock) as mem:
        mem.reembed(Counting("test/new", 12), cut_over=False)
        with pytest.raises(ConflictError, match="is switching to 'test/new'"):
            mem.reembed(Counting("test/other", 6))
        assert mem.cancel_reembed() == 5
        assert mem.reembed_state() is None
        assert mem.reembed(Counting("test/other", 6)).cut_over
        assert store_of(mem).embedding_meta().model == "test/other"
        with pytest.raises(Exception, match="already holds 'test/other'"):
            mem.reembed(Counting("test/other", 6))


def test_pgvector_keeps_its_copy_of_the_new_vectors(pgvector_url: str, clock: SimClock) -> None:
    from chronomem.stores.postgres import PostgresStore

    with Memory.open(
        PostgresStore(pgvector_url), embedder=Counting("test/old", 8), clock=clock
    ) as mem:
        mem.remember_many(TEXTS)
        store = store_of(mem)
        assert store.vectors.maintained
        assert store._query("SELECT DISTINCT dim FROM ann_vectors") == [(8,)]
        mem.reembed(Counting("test/new", 12))
        copied = store._query("SELECT dim, COUNT(*) FROM ann_vectors GROUP BY dim")
        assert [tuple(r) for r in copied] == [(12, 4)]
        indexes = {r[0] for r in store._query(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'ann_vectors'"
        )}  # fmt: skip
        assert "ann_vectors_hnsw_12" in indexes
        probe = Counting("test/new", 12).vector(TEXTS[2])
        top = mem.peek("", query_embedding=probe, k=1, rank_by="similarity")
        assert top[0].record.text == TEXTS[2]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_switch_killed_at_any_moment_resumes_to_one_consistent_store(
    location: str | Path, clock: SimClock, seed: int
) -> None:
    """kill -9 of the switching process 0.05–1.2 s in (of ~1.3 s of embedding): the store
    still holds one model's vectors everywhere, pending rows only of live records; running the
    switch again finishes it."""
    from .reembed_worker import Slow

    with Memory.open(location, embedder=Counting("test/old", 8), clock=clock) as mem:
        mem.remember_many([f"note {i}: the tide was {i % 7} metres" for i in range(240)])
    root = Path(__file__).resolve().parents[2]
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.stores.reembed_worker", str(location)],
        cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert worker.stdout is not None
    assert worker.stdout.readline() == "READY\n"
    time.sleep(random.Random(seed).uniform(0.05, 1.2))
    os.kill(worker.pid, signal.SIGKILL)
    worker.communicate(timeout=60)
    with Memory.open(location, embedder=None, clock=clock) as mem:
        store = store_of(mem)
        model = store.embedding_meta().model
        widths = {len(bytes(b)) for (b,) in store._query("SELECT embedding FROM records")}
        assert widths == {(8 if model == "test/old" else 12) * 4}, model  # one model throughout
        orphans = store._query(
            "SELECT COUNT(*) FROM reembed_vectors v WHERE v.kind = 'r'"
            " AND NOT EXISTS (SELECT 1 FROM records r WHERE r.pk = v.pk)"
        )
        assert orphans[0][0] == 0
        if model == "test/old":
            assert mem.reembed(Slow(delay=0)).cut_over
        assert store.embedding_meta().model == "test/new"
        assert mem.reembed_state() is None
        widths = {len(bytes(b)) for (b,) in store._query("SELECT embedding FROM records")}
        assert widths == {48}
        assert len(mem.records(limit=1000)) == 240


def test_the_cli_switches_a_store_and_reports_its_progress(
    tmp_path: Path, clock: SimClock, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from ..cli.invoke import run
    from ..scripted_http import Answer, scripted_server

    db = tmp_path / "cli.db"
    _fill(db, clock)

    def endpoint(body: dict[str, object]) -> Answer:
        texts = body["input"]
        assert isinstance(texts, list)
        rows = [
            {"index": i, "embedding": Counting("e", 6).vector(t).tolist()}
            for i, t in enumerate(texts)
        ]
        return 200, {}, json.dumps({"data": rows})

    common = ("--db", str(db))
    assert run(capsys, "reembed", "--status", *common)[1] == "no switch in progress\n"
    code, _, err = run(capsys, "reembed", *common)
    assert code == 1
    assert "--to" in err
    with scripted_server(endpoint) as (url, _):
        target = ("--to-url", url, "--to", "e6", "--to-languages", "en, ko")
        code, out, err = run(capsys, "reembed", *target, "--no-cut-over", "--json", *common)
        assert code == 0, err
        assert json.loads(out)["cut_over"] is False
        code, out, _ = run(capsys, "reembed", "--status", *common)
        assert out.startswith("switching to e6 (dimension 6) since ")
        assert out.endswith(": 5 of 5 vectors made\n")
        code, out, err = run(capsys, "reembed", *target, *common)
        assert code == 0, err
        assert out == "switched 5 vectors to e6 (dimension 6): 0 embedded now\n"
    code, out, _ = run(capsys, "stats", "--json", "--no-embedder", *common)
    assert json.loads(out)["embedding_model"] == "e6"
