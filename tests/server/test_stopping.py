"""``chronomem serve`` stops on SIGTERM while clients follow its change feed (server/stopping.py):
an open change stream ends, a long poll answers with what it has, and the process exits — uvicorn
alone waits for every open connection, and a stream's client would keep it running forever."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from ..waiting import within
from .service import serving_process


def _follow(url: str, lines: list[str]) -> None:
    """Put the lines of the space's change stream in ``lines`` until the service ends it."""
    with httpx.stream("GET", f"{url}/v1/spaces/town/changes/stream", timeout=120) as response:
        response.raise_for_status()
        lines.extend(response.iter_lines())


def test_sigterm_ends_change_streams_and_long_polls(tmp_path: Path) -> None:
    lines: list[str] = []
    with ThreadPoolExecutor(2) as pool:
        with serving_process(tmp_path / "m.db", "--no-embedder") as url:
            wrote = httpx.post(
                f"{url}/v1/spaces/town/records", json={"text": "the lamp is lit", "agent": "ada"}
            )
            assert wrote.status_code == 200, wrote.text
            stream = pool.submit(_follow, url, lines)
            poll = pool.submit(
                httpx.get, f"{url}/v1/spaces/town/changes", params={"after": 1, "wait": 60},
                timeout=120,
            )  # fmt: skip
            within(20, lambda: len(lines) >= 3)  # retry:, blank, the write
            assert lines[:1] == ["retry: 2000"]
            time.sleep(0.5)  # the long poll is waiting
            assert not stream.done()
            assert not poll.done()
            stopped = time.monotonic()
        # (the block's end sent SIGTERM and waited for the exit: 60 s, then a failure)
        assert time.monotonic() - stopped < 30
        stream.result(timeout=5)  # ended by the service, not cut (that would raise)
        assert any(line.startswith("data: ") and "the lamp is lit" in line for line in lines)
        answered = poll.result(timeout=5)
        assert answered.status_code == 200
        assert answered.json() == []
