"""How the client's calls travel: :class:`Call` (one request, sans I/O), arguments as JSON
(aware instants and durations as ISO 8601, vectors as lists, enums as values) and answers read
back into the engine's own types (``client/decode.py``), instants in ``datetime.UTC``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from chronomem.checks import require_text
from chronomem.client.decode import iso_duration, reader
from chronomem.clock import require_aware
from chronomem.config import PRESETS, ScoringConfig
from chronomem.errors import ConfigError
from chronomem.retrieval.options import ReadOptions
from chronomem.verbs import params

__all__ = ["Call", "ClockReading", "given", "preset_name", "read_body", "reader", "segment", "wire"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ClockReading:
    """A space's clock as the service reports it."""

    now: datetime
    simulated: bool


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One request: ``path`` is relative to ``/v1/spaces/{space}`` (or absolute when it starts
    with ``/v1/``); ``read`` turns the answer's body into the verb's return value. ``waits``:
    seconds the service may hold the answer on purpose (a long poll), added to the timeout."""

    method: str
    path: str
    read: Callable[[bytes], T]
    body: Any = None
    params: Mapping[str, Any] | None = None
    content: bytes | None = None
    waits: float = 0.0


def wire(value: Any) -> Any:
    """A JSON value for an argument: aware instants as ISO 8601, durations as ISO 8601, vectors
    as lists (numpy is not imported for it: a client does not need it), enums as their values."""
    if isinstance(value, datetime):
        return require_aware(value).isoformat()
    if isinstance(value, timedelta):
        return iso_duration(value)
    if isinstance(value, Enum):
        return value.value
    if hasattr(value, "tolist") and hasattr(value, "dtype"):  # numpy arrays and scalars
        return value.tolist() if value.dtype.kind in "biuf" else wire(value.tolist())
    if isinstance(value, Mapping):
        return {str(k): wire(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        if all(type(v) is float or type(v) is int for v in value):  # a vector: as it is
            return list(value)
        return [wire(v) for v in value]
    return value


def given(**fields: Any) -> dict[str, Any]:
    """The fields that were given (``None`` means "the default")."""
    return {name: wire(value) for name, value in fields.items() if value is not None}


def segment(value: str, name: str) -> str:
    return quote(require_text(value, name), safe="")


def preset_name(preset: str | ScoringConfig | None) -> str | None:
    if preset is None or isinstance(preset, str):
        return preset
    if PRESETS.get(preset.name) != preset:
        raise ConfigError(
            f"presets travel by name over HTTP; {preset.name!r} differs from the named preset "
            f"(configure the server with it instead)"
        )
    return preset.name


def read_body(options: ReadOptions, verb: str = "peek") -> dict[str, Any]:
    """The body of a read verb's options: every option of the verb's table (``verbs.py``)
    that differs from its default, as JSON."""
    body: dict[str, Any] = {}
    for p in params(verb, without=("agent",)):  # options hold agent= as agents
        value = getattr(options, p.name)
        if value == p.default:
            continue
        if p.name == "kinds":
            value = sorted(str(k) for k in value)
        elif p.name == "preset":
            value = preset_name(value)
        elif p.name == "filter":
            value = value.to_spec()
        body[p.name] = wire(value)
    return body
