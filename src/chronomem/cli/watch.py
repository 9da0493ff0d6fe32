"""``chronomem watch``: a space's change feed (docs/design/change-feed.md) on stdout, one line
per change — or one JSON object per line with ``--json`` — and with ``--follow`` each new change
as it commits, until interrupted. Through ``--server`` it long-polls the service; on a store it
asks the store every ``--interval`` seconds, so it sees other processes' writes too."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from typing import Any

from chronomem.cli.render import short_time
from chronomem.cli.settings import Settings, open_memory
from chronomem.engine import Memory
from chronomem.model.change import MAX_CHANGES, Change

__all__ = ["add_command", "watch_command"]

#: Changes asked for at once (the most a read of the feed returns).
_PAGE = MAX_CHANGES
#: How long one long poll of the service waits for a change.
_POLL_WAIT_S = 25.0


def add_command(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("watch", parents=[common], help="the space's changes, as they commit")
    p.add_argument("--after", type=int, default=0, help="start after this seq (default: 0)")
    p.add_argument("--follow", "-f", action="store_true", help="keep printing new changes")
    p.add_argument(
        "--interval", type=float, default=0.5, help="seconds between asks of a store (--follow)"
    )
    p.set_defaults(func=watch_command)


def _line(change: Change, as_json: bool) -> str:
    if as_json:
        return json.dumps(change.to_dict(), ensure_ascii=False)
    what = change.record_id or ", ".join(f"{k}={v}" for k, v in change.detail.items())
    who = f"  {change.agent}" if change.agent else ""
    text = f"  {change.text!r:.80}" if change.text else ""
    return f"#{change.seq}  {short_time(change.at)}  {change.kind:<9} {what}{who}{text}"


def watch_command(args: argparse.Namespace, cfg: Settings) -> int:
    if args.after < 0:
        print("error: --after must be 0 or more", file=sys.stderr)
        return 2
    if not args.interval > 0:
        print("error: --interval must be more than 0 seconds", file=sys.stderr)
        return 2
    position = args.after
    with open_memory(dataclasses.replace(cfg, embedder=False)) as mem:  # no model is needed
        try:
            while True:
                if isinstance(mem, Memory) or not args.follow:
                    found = mem.changes(position, limit=_PAGE)
                else:  # the service holds the answer until a change commits
                    found = mem.changes(position, limit=_PAGE, wait=_POLL_WAIT_S)
                for change in found:
                    print(_line(change, args.json), flush=True)
                    position = change.seq
                if len(found) == _PAGE:
                    continue  # more is there now
                if not args.follow:
                    return 0
                if isinstance(mem, Memory):
                    time.sleep(args.interval)
        except KeyboardInterrupt:
            return 0
