"""The service's operations as calls (``calls.py`` defines the memory verbs): moving a space's
data in and out, its simulated clock, the service's health."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from chronomem.checks import optional_instant
from chronomem.client.wire import Call, ClockReading, reader, wire
from chronomem.errors import InvalidInputError
from chronomem.model.transfer import ImportReport

__all__ = ["advance_clock", "clock_reading", "export", "health", "import_", "set_clock"]


# -- moving data in and out (admin) ---------------------------------------------------------------
def export(path: str | os.PathLike[str]) -> Call[int]:
    """:meth:`chronomem.Memory.export`: the archive is written to ``path`` on this machine."""
    target = Path(path)

    def save(content: bytes) -> int:
        tmp = target.with_name(f".{target.name}.download")
        tmp.write_bytes(content)
        os.replace(tmp, target)
        return sum(
            1 for line in content.splitlines()[1:] if json.loads(line).get("type") == "record"
        )

    return Call("GET", "/export", save)


def import_(path: str | os.PathLike[str]) -> Call[ImportReport]:
    """:meth:`chronomem.Memory.import_`: the archive at ``path`` on this machine is uploaded."""
    source = Path(path)
    if not source.is_file():
        raise InvalidInputError(f"archive not found: {source}", field="path")
    return Call("POST", "/import", reader(ImportReport), content=source.read_bytes())


# -- the space's clock --------------------------------------------------------------------------
def clock_reading() -> Call[ClockReading]:
    """The space's clock: its now and whether it is simulated."""
    return Call("GET", "/clock", reader(ClockReading))


def set_clock(now: datetime | None) -> Call[ClockReading]:
    """Set the space's simulated now (``None``: follow the wall clock again); admin."""
    return Call("PUT", "/clock", reader(ClockReading), {"now": wire(optional_instant(now, "now"))})


def advance_clock(by: timedelta) -> Call[ClockReading]:
    """Move the space's simulated clock forward by ``by``; admin."""
    return Call("POST", "/clock/advance", reader(ClockReading), {"by": wire(by)})


def health() -> Call[dict[str, Any]]:
    """The service's health (no key needed)."""
    return Call("GET", "/v1/health", reader(dict[str, Any]))
