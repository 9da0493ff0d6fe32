"""Reads of one space on several handles (``Spaces.reader``, docs/http.md "Concurrency"): a read
does not wait for another read while a reader is free, every handle answers with every write
acknowledged before the read began, touches made through one are seen through the others, and
renewed or closed readers release their stores; a space's main handle opens without holding up
requests to other spaces."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import pytest

from chronomem import Memory
from chronomem.client import Client
from chronomem.errors import ConfigError, StoreError
from chronomem.server.spaces import Spaces

from ..conftest import FixedEmbedder, GatedEmbedder
from .service import running


class HeldEmbedder(GatedEmbedder):
    """Not thread-safe, so the engine embeds a query under its handle's lock: a call that embeds
    ``gate_text`` blocks, holding that handle, until ``release`` is set."""

    thread_safe = False


@pytest.mark.parametrize("readers", [1, 2])
def test_a_read_waits_for_another_read_only_when_every_reader_is_busy(
    tmp_path: Path, readers: int
) -> None:
    embedder = HeldEmbedder("the slow question")
    with (
        running(tmp_path / "m.db", embedder=embedder, readers=readers) as (url, _),
        Client(url, space="town") as client,
        ThreadPoolExecutor(2) as pool,
    ):
        client.remember("the lamp is lit", agent="keeper")
        slow = pool.submit(client.peek, "the slow question", k=3)
        assert embedder.entered.wait(10)
        fast = pool.submit(client.peek, "lamp", k=3)
        try:
            if readers == 1:  # one handle: the second read queues behind the first one's lock
                with pytest.raises(TimeoutError):
                    fast.result(timeout=0.5)
            else:
                assert [h.record.text for h in fast.result(timeout=10)] == ["the lamp is lit"]
                assert not slow.done()
        finally:
            embedder.release.set()
        assert [h.record.text for h in slow.result(timeout=10)] == ["the lamp is lit"]
        assert [h.record.text for h in fast.result(timeout=10)] == ["the lamp is lit"]


def test_every_reader_sees_every_acknowledged_write_and_touch(
    fresh: Callable[[], str | Path],
) -> None:
    spaces = Spaces(location=fresh(), embedder=FixedEmbedder(dim=8), readers=3)
    try:
        spaces.memory("town").remember("the lamp is lit", agent="keeper")
        with (
            spaces.reader("town") as first,
            spaces.reader("town") as second,
            spaces.reader("town") as third,
        ):
            assert first is spaces.memory("town")  # the main handle first, then new ones
            assert len({id(first), id(second), id(third)}) == 3
            for handle in (first, second, third):  # each has loaded the space
                assert [h.record.text for h in handle.peek("lamp", k=5)] == ["the lamp is lit"]
            wrote = spaces.memory("town").remember("the ferry left late", agent="keeper")
            assert wrote.id is not None
            for handle in (second, third):
                assert wrote.id in {h.record.id for h in handle.peek("ferry", k=5)}
            before = second.recall("ferry", k=1)[0].record  # a hit shows the record as read
            touched = second.get(before.id).last_accessed_at
            assert touched is not None
            assert touched > before.last_accessed_at
            for handle in (first, third):
                assert handle.get(before.id).last_accessed_at == touched
                assert handle.peek("ferry", k=1)[0].record.last_accessed_at == touched
    finally:
        spaces.close()


def test_reads_go_to_the_least_busy_reader_and_never_beyond_the_limit(tmp_path: Path) -> None:
    spaces = Spaces(location=tmp_path / "m.db", embedder=FixedEmbedder(dim=8), readers=2)
    try:
        spaces.memory("town").remember("the lamp is lit", agent="keeper")
        with spaces.reader("town") as a:
            with spaces.reader("town") as b:
                assert a is not b
                with spaces.reader("town") as c:  # both busy, at the limit: shares one
                    assert c in (a, b)
            with spaces.reader("town") as d:  # the idle extra reader, not the busy main one
                assert d is b
        with spaces.reader("town") as e:  # all idle: an extra one (the main one also writes)
            assert e is b
    finally:
        spaces.close()


def test_renewed_readers_close_once_their_reads_end(tmp_path: Path) -> None:
    spaces = Spaces(location=tmp_path / "m.db", embedder=FixedEmbedder(dim=8), readers=2)
    try:
        main = spaces.memory("town")
        main.remember("the lamp is lit", agent="keeper")
        with spaces.reader("town"), spaces.reader("town") as extra:
            spaces.renew()
            assert extra.peek("lamp", k=1)  # a read running on it finishes on it
        with pytest.raises(Exception, match="closed"):
            extra.peek("lamp", k=1)
        assert main.peek("lamp", k=1)  # the main handle stays
        with spaces.reader("town"), spaces.reader("town") as renewed:
            assert renewed is not extra
            assert renewed.peek("lamp", k=1)
    finally:
        spaces.close()
    with pytest.raises(Exception, match="closed"):
        renewed.peek("lamp", k=1)


def test_a_reader_opened_while_the_pool_is_renewed_reads_on_an_open_handle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read that opens a new reader while ``renew`` closes the idle ones (a calibration) reads
    on a handle of the renewed pool, never on one that was closed meanwhile."""
    spaces = Spaces(location=tmp_path / "m.db", embedder=FixedEmbedder(dim=8), readers=3)
    opening, release = threading.Event(), threading.Event()
    opened = Spaces._handle

    def held(self: Spaces, space: str) -> Memory:
        if len(self._open) and self.readers_open(space) == 2:  # the third reader of the space
            opening.set()
            assert release.wait(10)
        return opened(self, space)

    monkeypatch.setattr(Spaces, "_handle", held)
    try:
        spaces.memory("town").remember("the lamp is lit", agent="keeper")
        with ExitStack() as main, ThreadPoolExecutor(1) as pool:
            main.enter_context(spaces.reader("town"))
            with spaces.reader("town") as extra:  # both busy: the next read opens a third
                late = pool.submit(lambda: _peek_on_a_reader(spaces))
                assert opening.wait(10)
            spaces.renew()  # the extra one is idle: closed now
            with pytest.raises(Exception, match="closed"):
                extra.peek("lamp", k=1)
            release.set()
            assert late.result(timeout=10) == ["the lamp is lit"]
    finally:
        release.set()
        spaces.close()


def _peek_on_a_reader(spaces: Spaces) -> list[str]:
    with spaces.reader("town") as memory:
        return [h.record.text for h in memory.peek("lamp", k=1)]


def test_a_space_opening_holds_up_no_other_space_and_opens_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first request to a space loads its index: requests to other spaces go on meanwhile,
    and the space's other first requests wait for that one handle."""
    spaces = Spaces(location=tmp_path / "m.db", embedder=FixedEmbedder(dim=8))
    loading, release = threading.Event(), threading.Event()
    opened = Spaces._handle
    opens: list[str] = []

    def slow(self: Spaces, space: str) -> Memory:
        opens.append(space)
        if space == "large":
            loading.set()
            assert release.wait(10)
        return opened(self, space)

    monkeypatch.setattr(Spaces, "_handle", slow)
    try:
        with ThreadPoolExecutor(3) as pool:
            first = pool.submit(spaces.memory, "large")
            assert loading.wait(10)
            second = pool.submit(spaces.memory, "large")
            other = pool.submit(spaces.memory, "small").result(timeout=10)  # not held up
            assert other.space == "small"
            assert not first.done()
            assert not second.done()
            release.set()
            assert first.result(timeout=10) is second.result(timeout=10)
        assert sorted(opens) == ["large", "small"]
    finally:
        release.set()
        spaces.close()


def test_a_space_opens_with_its_index_loaded(tmp_path: Path) -> None:
    """The request that opens a space loads its index (``Memory.preload``): not the first read
    and write, inside the handle's lock, with the space's other requests behind them."""
    path = tmp_path / "m.db"
    with Memory.open(path, embedder=FixedEmbedder(dim=8), index_snapshot=0, space="town") as mem:
        for agent in ("keeper", "baker"):
            mem.remember_many([f"{agent} note {i}" for i in range(30)], agent=agent)
        mem.peek("note", agents=["keeper", "baker"])  # the close writes the snapshot
    spaces = Spaces(location=path, embedder=FixedEmbedder(dim=8))
    try:
        index = spaces.memory("town")._h.index
        assert sorted(index._agents) == ["baker", "keeper"]
        assert index.loaded_from == "snapshot"
        assert all(a.n == 30 for a in index._agents.values())
    finally:
        spaces.close()


def test_a_failed_open_is_tried_again_and_a_closed_service_keeps_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spaces = Spaces(location=tmp_path / "m.db", embedder=FixedEmbedder(dim=8))
    opened = Spaces._handle
    failures = [StoreError("the disk is busy")]

    def flaky(self: Spaces, space: str) -> Memory:
        if failures:
            raise failures.pop()
        return opened(self, space)

    monkeypatch.setattr(Spaces, "_handle", flaky)
    with pytest.raises(StoreError, match="busy"):
        spaces.memory("town")
    assert spaces.memory("town").space == "town"  # the next request opens it
    spaces.close()
    with pytest.raises(StoreError, match="stopping"):
        spaces.memory("elsewhere")
    assert spaces.open_spaces() == []


def test_a_space_opened_while_the_service_closes_is_closed_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spaces = Spaces(location=tmp_path / "m.db", embedder=FixedEmbedder(dim=8))
    loading, release = threading.Event(), threading.Event()
    opened = Spaces._handle
    made: list[Memory] = []

    def slow(self: Spaces, space: str) -> Memory:
        loading.set()
        assert release.wait(10)
        made.append(opened(self, space))
        return made[-1]

    monkeypatch.setattr(Spaces, "_handle", slow)
    with ThreadPoolExecutor(1) as pool:
        late = pool.submit(spaces.memory, "town")
        assert loading.wait(10)
        spaces.close()  # while the space's index loads
        release.set()
        with pytest.raises(StoreError, match="stopping"):
            late.result(timeout=10)
    assert spaces.open_spaces() == []
    with pytest.raises(StoreError, match="closed"):
        made[0].peek("lamp", k=1)  # closed by the open that came too late


def test_readers_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="readers"):
        Spaces(location=tmp_path / "m.db", embedder=None, readers=0)
