"""uvicorn's server, which also tells the service when a signal asks it to stop.

uvicorn stops by closing its sockets, then waiting for every open connection to end (with no
limit). A change stream (``…/changes/stream``, the web UI's timeline) or a long poll never ends
while its client stays, so one open browser tab or ``watch`` kept ``chronomem serve`` running
after SIGTERM. With ``stopping`` set first, they end within their poll interval (docs/http.md,
"Stopping"); a stream's client reconnects, from the last event's id, to whichever serves next.
"""

from __future__ import annotations

import threading
from types import FrameType

import uvicorn

__all__ = ["StoppingServer"]


class StoppingServer(uvicorn.Server):
    """A :class:`uvicorn.Server` that sets ``stopping`` (``Spaces.stopping``) on the signal that
    ends it, before uvicorn waits for the open connections."""

    def __init__(self, config: uvicorn.Config, stopping: threading.Event) -> None:
        super().__init__(config)
        self._stopping = stopping

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self._stopping.set()
        super().handle_exit(sig, frame)
