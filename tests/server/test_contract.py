"""The engine's contract over HTTP: the scenario of tests/stores/test_contract.py, written for
``Memory``, runs unchanged over ``Client`` and ``AsyncClient`` against a real service, on SQLite
and PostgreSQL, and everything it gives back is identical — the exported archive (every record
with every field and vector, events, links, trigger sums, the audit log) and the rankings, scores
and explanations of every read. Only the audit's actor and request id differ by design: the
service records the caller's key (here the local user of a server without keys), never a name
the client sends, and the id of the request that made each entry (``detail.request_id``, absent
from the engine's)."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import chronomem.model.ids as ids_module
from chronomem import Memory, SimClock
from chronomem.client import Client

from ..conftest import T0
from ..scenario import populate, populate_graph, reads
from .service import Blocking, running


class _SeededSecrets:
    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)

    def randbits(self, k: int) -> int:
        return self._random.getrandbits(k)


def _archive(path: Path, *, over_http: bool) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        if line.get("type") == "audit":
            line["actor"] = "*"
            request = line["detail"].pop("request_id", None)
            assert (request is not None) == over_http, line
            assert request is None or re.fullmatch("[0-9a-f]{32}", request), request
    return lines


def _scenario(mem: Any, clock: Any, archive: Path) -> dict[str, Any]:
    populate(mem, clock)
    crisis = populate_graph(mem, clock)
    mem.export(archive)
    over_http = not isinstance(mem, Memory)
    return {"archive": _archive(archive, over_http=over_http), **reads(mem, clock.now(), crisis)}


def _on_memory(location: str | Path, tmp_path: Path, mp: pytest.MonkeyPatch) -> dict[str, Any]:
    mp.setattr(ids_module, "secrets", _SeededSecrets(2024))
    clock = SimClock(T0)
    with Memory.open(
        location, embedder=None, clock=clock, preset="generative-agents", space="town"
    ) as mem:
        return _scenario(mem, clock, tmp_path / "memory.jsonl")


def _over_http(
    make: Callable[..., Any], location: str | Path, archive: Path, mp: pytest.MonkeyPatch
) -> dict[str, Any]:
    mp.setattr(ids_module, "secrets", _SeededSecrets(2024))
    with (
        running(location, embedder=None, preset="generative-agents") as (url, _),
        make(url, space="town") as mem,
    ):
        mem.set_clock(T0)
        return _scenario(mem, mem.clock, archive)


def test_memory_client_and_async_client_give_identical_results(
    fresh: Callable[[], str | Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    direct = _on_memory(fresh(), tmp_path, monkeypatch)
    blocking = _over_http(Client, fresh(), tmp_path / "client.jsonl", monkeypatch)
    awaiting = _over_http(Blocking, fresh(), tmp_path / "async.jsonl", monkeypatch)
    # The scenario reaches every kind of state and read.
    kinds = {line.get("type", "header") for line in direct["archive"]}
    assert kinds == {"header", "record", "audit", "event", "link", "agent"}
    assert any(b and b["causal"] for _, _, b in direct["crisis_read"])
    for part, value in direct.items():
        assert blocking[part] == value, part
        assert awaiting[part] == value, part
