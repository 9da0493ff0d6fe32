"""The CLI's browsing commands: ``list`` (records), ``events`` and ``links`` — what a store holds,
filtered and a page at a time, without writing Python."""

from __future__ import annotations

import argparse
import sys

from chronomem.cli.render import format_link, print_json, print_record_line, short_time
from chronomem.cli.settings import Settings, open_memory

__all__: list[str] = []


def _footer(shown: int, args: argparse.Namespace, what: str) -> None:
    """Where the page ends and how to ask for the next (on stderr: stdout stays the list)."""
    if shown == 0:
        print(f"no {what}" + (" on this page" if args.offset else ""), file=sys.stderr)
    elif shown == args.limit:
        first, last = args.offset + 1, args.offset + shown
        print(f"({what} {first}-{last}; more: --offset {last})", file=sys.stderr)


def list_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg) as mem:
        found = mem.records(
            agents=args.agent or None,
            kinds=args.kind or None,
            domain=args.domain,
            include_history=args.include_history,
            since=args.since,
            until=args.until,
            as_of=args.as_of,
            limit=args.limit,
            offset=args.offset,
            status=args.state,
        )
    if args.json:
        print_json([r.to_dict() for r in found])
        return 0
    for r in found:
        print_record_line(r, agent=True)
    _footer(len(found), args, "records")
    return 0


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
    if args.json:
        print_json([e.to_dict() for e in found])
        return 0
    for e in found:
        scope = f"  ({e.scope})" if e.scope else ""
        print(f"{e.id}  {short_time(e.occurred_at)}  [{e.kind.value}] {e.text}{scope}")
    _footer(len(found), args, "events")
    return 0


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
    if args.json:
        print_json([link.to_dict() for link in found])
        return 0
    for link in found:
        print(format_link(link, texts))
    _footer(len(found), args, "links")
    return 0
