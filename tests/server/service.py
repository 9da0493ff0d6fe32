"""A real ``chronomem serve`` for tests: uvicorn on an ephemeral 127.0.0.1 port, in a thread of
the test process (so a test can seed ids the way tests/stores/test_contract.py does)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from chronomem.client import AsyncClient, RemoteClock
from chronomem.server.app import create_app
from chronomem.server.spaces import Spaces


@contextmanager
def running(
    location: str | Path,
    *,
    loopback: bool = True,
    max_body_bytes: int = 16 << 20,
    hot_reads: bool = True,
    webhooks: bool = True,
    **spaces: Any,
) -> Iterator[tuple[str, Spaces]]:
    """The service's root URL and its handles, while it runs (``webhooks``: with its delivery
    loop)."""
    handles = Spaces(location=location, **spaces)
    app = create_app(
        handles, loopback=loopback, max_body_bytes=max_body_bytes, hot_reads=hot_reads,
        webhooks=webhooks,
    )  # fmt: skip
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", handles
    finally:
        handles.stopping.set()  # as ``chronomem serve`` does on its signal (server/stopping.py)
        server.should_exit = True
        thread.join(timeout=20)
        handles.close()


class Blocking:
    """An :class:`AsyncClient` driven from synchronous test code: every verb runs to completion
    on one event loop, so the scenario written for ``Memory`` runs over it unchanged."""

    def __init__(self, url: str, **kwargs: Any) -> None:
        self._runner = asyncio.Runner()
        self._client = AsyncClient(url, **kwargs)

    def __getattr__(self, name: str) -> Any:
        verb = getattr(self._client, name)

        def run(*args: Any, **kwargs: Any) -> Any:
            return self._runner.run(verb(*args, **kwargs))

        return run

    @property
    def clock(self) -> RemoteClock:
        return RemoteClock(self)  # type: ignore[arg-type]

    def close(self) -> None:
        self._runner.run(self._client.aclose())
        self._runner.close()

    def __enter__(self) -> Blocking:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextmanager
def serving_process(
    db: str | Path,
    *flags: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    stop: signal.Signals = signal.SIGTERM,
) -> Iterator[str]:
    """A real ``chronomem serve`` process (the console script of this environment) on a free
    127.0.0.1 port, until the block ends: its root URL once ``/v1/health`` answers. ``stop``:
    the signal that ends it (``SIGKILL``: a crash, nothing shut down)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    command = [str(Path(sys.executable).parent / "chronomem"), "serve", "--db", str(db),
               "--port", str(port), *flags]  # fmt: skip
    # faulthandler on: a process that does not stop is aborted, and its threads' stacks go into
    # the failure. Its stderr is read as it comes (a full pipe would block the service's logging)
    env = {**(os.environ if env is None else env), "PYTHONFAULTHANDLER": "1"}
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    said: deque[str] = deque(maxlen=2000)  # its last lines
    reading = threading.Thread(target=said.extend, args=(proc.stderr,), daemon=True)
    reading.start()

    def output() -> str:
        reading.join(timeout=10)
        return "".join(said)

    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"serve did not start: {output()}")
            time.sleep(0.1)
        yield url
    finally:
        proc.send_signal(stop)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)
            proc.wait(timeout=30)
            raise RuntimeError(f"serve did not stop within 60 s; it wrote:\n{output()}") from None
