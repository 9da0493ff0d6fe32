"""The causal graph from the command line: add events and links (explicit, or inferred by
similarity and time), and walk an event's causes and effects. Each command calls one verb and
renders its result (``render.py``); it returns the exit code."""

from __future__ import annotations

import argparse
from typing import Any

from chronomem.cli.arguments import instant, verb_flags
from chronomem.cli.commands import print_result
from chronomem.cli.render import format_link, print_items, print_json
from chronomem.cli.settings import Settings, open_memory

__all__ = [
    "add_commands",
    "ancestors_command",
    "auto_link_command",
    "event_command",
    "link_command",
]


def add_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the parsers of ``event``, ``link``, ``ancestors`` and ``auto-link``."""
    p = sub.add_parser("event", parents=[common], help="add an event to the causal graph")
    p.add_argument("text")
    verb_flags(p, "add_event")
    p.set_defaults(func=event_command)

    p = sub.add_parser("link", parents=[common], help="add (or --remove) a causal link")
    p.add_argument("cause", help="event id")
    p.add_argument("effect", help="event id")
    verb_flags(p, "link")
    p.add_argument("--remove", action="store_true", help="remove the link instead")
    p.set_defaults(func=link_command)

    p = sub.add_parser("ancestors", parents=[common], help="the causes of an event")
    p.add_argument("id", help="event id")
    p.add_argument("--max-depth", type=int, default=4)
    p.add_argument("--as-of", type=instant)
    p.add_argument("--descendants", action="store_true", help="its effects instead")
    p.set_defaults(func=ancestors_command)

    p = sub.add_parser(
        "auto-link", parents=[common],
        help="link an event to similar earlier ones (inferred links, weaker than explicit ones)",
    )  # fmt: skip
    p.add_argument("id", help="event id")
    verb_flags(p, "auto_link")
    p.set_defaults(func=auto_link_command)


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
