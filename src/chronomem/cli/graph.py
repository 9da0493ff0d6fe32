"""The causal graph from the command line: add events and links (explicit, or inferred by
similarity and time), and walk an event's causes and effects. Each command calls one verb and
renders its result (``render.py``); it returns the exit code."""

from __future__ import annotations

import argparse

from chronomem.cli.commands import print_result
from chronomem.cli.render import format_link, print_items, print_json
from chronomem.cli.settings import Settings, open_memory

__all__ = ["ancestors_command", "auto_link_command", "event_command", "link_command"]


def event_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg, create=True, writes=True) as mem:
        event = mem.add_event(
            args.text, occurred_at=args.occurred_at, kind=args.kind, scope=args.scope,
            metadata=args.metadata,
        )  # fmt: skip
    if args.json:
        print_json(event.to_dict())
    else:
        print(event.id)
    return 0


def link_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg, writes=True) as mem:
        if args.remove:
            removed = mem.unlink(args.cause, args.effect)
            said = "removed" if removed else "no such link"
            print_result(args, {"removed": removed}, lambda: print(said))
            return 0
        link = mem.link(
            args.cause, args.effect, weight=args.weight, provenance=args.provenance,
            similarity=args.similarity,
        )  # fmt: skip
        texts = {e: mem.get_event(e).text for e in (link.cause, link.effect)}
    print_result(args, link, lambda: print(format_link(link, texts)))
    return 0


def ancestors_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg) as mem:
        reach = (mem.descendants if args.descendants else mem.ancestors)(
            args.id, max_depth=args.max_depth, as_of=args.as_of
        )
    if args.json:
        print_json([a.to_dict() for a in reach])
        return 0
    if not reach:
        print("none within the depth bound")
    for a in reach:
        e = a.event
        print(
            f"depth {a.depth}  strength {a.strength:.3f}  {e.id}  {e.occurred_at:%Y-%m-%d}  "
            f"[{e.kind.value}] {e.text}"
        )
    return 0


def auto_link_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg, writes=True) as mem:
        links = mem.auto_link(
            args.id, window=args.window, threshold=args.threshold, weight_scale=args.weight_scale
        )
        texts = {e: mem.get_event(e).text for link in links for e in (link.cause, link.effect)}
    return print_items(
        links, args.json, lambda link: print(format_link(link, texts)),
        "no event similar enough within the window",
    )  # fmt: skip
