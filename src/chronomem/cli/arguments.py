"""The CLI's argument types and the flag groups several commands share. A value of the wrong
form is a usage error (exit 2, argparse's message naming the flag)."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, get_args, get_origin

from chronomem.checks import parse_instant
from chronomem.errors import InvalidInputError
from chronomem.verbs import Param, params, record_params

__all__ = [
    "duration",
    "instant",
    "metadata",
    "missing_vectors_flag",
    "reason_flag",
    "record_arguments",
    "record_fields",
    "signal",
    "tag_list",
    "verb_arguments",
    "verb_flags",
]


def instant(text: str) -> datetime:
    try:
        return parse_instant(text, "the time")
    except InvalidInputError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("the time ")) from None


_SPAN = re.compile(r"(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>[smhdw]?)", re.IGNORECASE)
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def duration(text: str) -> timedelta:
    """``--ttl``: seconds, or a number with a unit: ``90s``, ``30m``, ``2h``, ``7d``, ``1w``."""
    found = _SPAN.fullmatch(text.strip())
    if found is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration: give seconds or a number with s, m, h, d or w (2h)"
        )
    return timedelta(seconds=float(found["n"]) * _UNITS[found["unit"].lower()])


def signal(text: str) -> str | float:
    if text in {"helpful", "harmful"}:
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: use helpful, harmful, or a number in [-1, 1]"
        ) from None


def missing_vectors_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--allow-missing-vectors",
        action="store_true",
        help="with --no-embedder on a store built with a model: store records without a "
        "vector (lexical only until `chronomem embed-records`) instead of refusing",
    )


def metadata(text: str) -> dict[str, Any]:
    """``--metadata``: a JSON object."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"{text!r}: give a JSON object, e.g. '{{\"mood\": 3}}'")
    return value


def tag_list(text: str) -> list[str]:
    """``--tags a,b``: comma-separated tags (blanks around commas dropped)."""
    return [t.strip() for t in text.split(",")]


def reason_flag(p: argparse.ArgumentParser, *, required: bool = False) -> None:
    """The same ``--reason`` on every lifecycle command: kept on the audit entry; required only
    where the engine requires one (``close``, ``forget``)."""
    if required:
        p.add_argument("--reason", required=True, help="why (kept in the audit log; required)")
    else:
        p.add_argument("--reason", help="why (kept in the audit log; optional)")


def record_fields(p: argparse.ArgumentParser, *, supersession: bool = False) -> None:
    """The record fields ``remember`` and ``supersede`` share (the verb table's
    :data:`~chronomem.verbs.RECORD`, each under its field's name), ``--tags a,b`` besides
    ``--tag``, and with ``supersession`` (``remember``) ``--supersedes`` and ``--replace``.
    The text, agent, kind and sensitivity are each command's own (their defaults differ)."""
    own = ("text", "agent", "kind", "sensitivity", "embedding", "passage_embeddings")
    skipped = own if supersession else (*own, "supersedes", "replace")
    for param in record_params(without=skipped):
        _add_flag(p, param, param.default)
    p.add_argument(
        "--tags", dest="tag_list", type=tag_list, metavar="A,B",
        help="tags, comma-separated (with --tag: both)",
    )  # fmt: skip
    missing_vectors_flag(p)


def record_arguments(args: argparse.Namespace) -> dict[str, Any]:
    """The record fields :func:`record_fields` added, from the parsed ``args`` (only those
    given: ``supersede`` then takes the old record's), with ``--tag`` and ``--tags`` merged."""
    given = {p.name: getattr(args, p.name, None) for p in record_params() if p.flag is not None}
    given["tags"] = [*(args.tags or ()), *(args.tag_list or ())] or None
    if not given.get("replace"):
        given.pop("replace", None)
    return {k: v for k, v in given.items() if v is not None}


def verb_flags(
    p: argparse.ArgumentParser,
    verb: str,
    *,
    without: tuple[str, ...] = (),
    defaults: Mapping[str, Any] | None = None,
    required: tuple[str, ...] = (),
) -> list[str]:
    """Add the flags of ``verb``'s parameters in the verb table (``chronomem/verbs.py``): each
    stored under the parameter's name, with its doc as help. ``defaults`` overrides a table
    default where the CLI shows fewer (a terminal page); ``required`` names the flags the
    command cannot go without (a change by filter's ``--filter``). Returns the names added."""
    added = []
    for param in params(verb, without=without):
        if param.flag is None:
            continue
        default = (defaults or {}).get(param.name, param.default)
        _add_flag(p, param, default, required=param.name in required)
        added.append(param.name)
    return added


def _add_flag(
    p: argparse.ArgumentParser, param: Param, default: Any, *, required: bool = False
) -> None:
    """The flag of one table parameter, stored under its name, typed by its value's shape."""
    assert param.flag is not None
    kwargs: dict[str, Any] = {"dest": param.name, "help": param.doc, "default": default}
    if required:
        kwargs["required"] = True
    shape = next((a for a in get_args(param.value) if a is not type(None)), param.value)
    if shape is bool:
        kwargs["action"] = "store_false" if param.negated else "store_true"
    elif param.repeat:
        kwargs["action"] = "append"
    elif shape is datetime:
        kwargs["type"] = instant
    elif shape is timedelta:
        kwargs["type"] = duration
        kwargs["metavar"] = "SPAN"
    elif get_origin(shape) is dict:
        kwargs["type"] = metadata
        kwargs["metavar"] = "JSON"
    elif shape in (int, float):
        kwargs["type"] = shape
    if param.choices is not None:
        kwargs["choices"] = list(param.choices)
    p.add_argument(param.flag, **kwargs)


def verb_arguments(args: argparse.Namespace, verb: str) -> dict[str, Any]:
    """The keyword arguments of ``verb`` that :func:`verb_flags` added to the parser, from the
    parsed ``args`` (a repeatable flag given no times is ``None``: the verb's default)."""
    return {p.name: getattr(args, p.name) for p in params(verb) if p.flag is not None}
