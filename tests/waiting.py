"""Waiting for something another thread or process does, bounded, never a fixed sleep: a fixed
sleep is too short on a loaded machine and wasted on an idle one."""

from __future__ import annotations

import time
from collections.abc import Callable


def within(seconds: float, condition: Callable[[], object], *, every: float = 0.02) -> bool:
    """Whether ``condition()`` turns true within ``seconds``, asked every ``every`` seconds.

    The caller asserts on the answer (or on the state it waited for), so a wait that times out
    fails the test with the state in view, not here."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(every)
    return True
