"""The CLI's browsing commands: ``list`` (records), ``events`` and ``links`` — what a store holds,
filtered and a page at a time, without writing Python."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from chronomem.cli.arguments import verb_arguments
from chronomem.cli.render import format_event, format_link, print_json, print_record_line
from chronomem.cli.settings import Settings, open_memory
from chronomem.model.event import Event

__all__: list[str] = []


def _footer(shown: int, args: argparse.Namespace, what: str) -> None:
    """Where the page ends and how to ask for the next (on stderr: stdout stays the list)."""
    if shown == 0:
        print(f"no {what}" + (" on this page" if args.offset else ""), file=sys.stderr)
    elif shown == args.limit:
        first, last = args.offset + 1, args.offset + shown
        print(f"({what} {first}-{last}; more: --offset {last})", file=sys.stderr)


def _show(
    found: Sequence[Any], args: argparse.Namespace, what: str, line: Callable[[Any], None]
) -> int:
    """One page: as JSON with ``--json``, else a line per item and the footer."""
    if args.json:
        print_json([item.to_dict() for item in found])
        return 0
    for item in found:
        line(item)
    _footer(len(found), args, what)
    return 0


def list_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg) as mem:
        found = mem.records(**verb_arguments(args, "records"))
    return _show(found, args, "records", lambda r: print_record_line(r, agent=True))


def events_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg) as mem:
        found = mem.events(
            kinds=args.kind or None,
            scope=args.scope,
            since=args.since,
            until=args.until,
            as_of=args.as_of,
            limit=args.limit,
            offset=args.offset,
        )
    return _show(found, args, "events", _print_event)


def links_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg) as mem:
        found = [
            link
            for link in mem.links()
            if (args.as_of is None or link.created_at <= args.as_of)
            and (args.since is None or link.created_at >= args.since)
            and (args.until is None or link.created_at < args.until)
            and (args.event is None or args.event in (link.cause, link.effect))
        ]
        found.sort(key=lambda link: (link.created_at, link.cause, link.effect))
        found = found[args.offset : args.offset + args.limit]
        texts = {e: mem.get_event(e).text for link in found for e in (link.cause, link.effect)}
    return _show(found, args, "links", lambda link: print(format_link(link, texts)))


def _print_event(e: Event) -> None:
    print(format_event(e))
