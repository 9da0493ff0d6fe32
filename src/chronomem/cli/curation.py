"""The CLI's commands about curating an agent's memory: core memory blocks (``core``), review
proposals (``review``, ``approve``, ``reject``), the access log, and changes by filter
(``close-where``, ``verify-where``, ``forget-where``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from chronomem.cli.arguments import verb_arguments
from chronomem.cli.commands import print_result
from chronomem.cli.host import invocation
from chronomem.cli.render import print_items, print_json, short_time
from chronomem.cli.settings import Settings, open_memory

if TYPE_CHECKING:
    from chronomem.model.audit import BulkResult
    from chronomem.model.review import Proposal

__all__: list[str] = []


def core_show_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg) as mem:
        found = mem.core_blocks(args.agent, as_of=args.as_of)
    found = [b for b in found if args.label is None or b.label == args.label]
    if args.json:
        print_json([b.to_dict() for b in found])
        return 0
    for block in found:
        print(f"[{block.label}]  {block.record_id}  {short_time(block.updated_at)}")
        print("  " + block.text.replace("\n", "\n  "))
    if not found:
        print(f"{args.agent} has no core blocks" + (f" labelled {args.label!r}" * bool(args.label)))
    return 0


def core_append_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg, writes=True) as mem:
        block = mem.core_append(
            args.agent, args.label, args.text, actor=cfg.actor, limit=args.limit
        )
    print_result(args, block, lambda: print(f"{block.label}: {len(block.text)} characters "
                                      f"({block.record_id})"))  # fmt: skip
    return 0


def core_replace_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg, writes=True) as mem:
        block = mem.core_replace(
            args.agent, args.label, args.old, args.new, actor=cfg.actor, limit=args.limit
        )
    print_result(args, block, lambda: print(f"{block.label}: {len(block.text)} characters "
                                      f"({block.record_id})"))  # fmt: skip
    return 0


def _print_proposal(p: Proposal) -> None:
    records = " ".join(p.record_ids)
    print(f"{p.id}  {p.action.value:<9} {p.category:<16} [{p.agent}] {records}")
    for reason in p.reasons:
        print(f"    {reason}")


def review_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg) as mem:
        found = mem.review(args.agent, as_of=args.as_of)
    if args.json:
        print_json([p.to_dict() for p in found])
        return 0
    for proposal in found:
        _print_proposal(proposal)
    if not found:
        print("nothing to review")
    else:
        run = invocation()
        print(f"\n{len(found)} proposal(s): {run} review approve ID | reject ID --reason …")
    return 0


def proposals_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg) as mem:
        found = mem.proposals(args.status)
    empty = "no proposals" + (f" {args.status}" if args.status else "")
    return print_items(found, args.json, _print_proposal, empty)


def dependants_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg) as mem:
        found = mem.dependants(args.id)
    return print_items(
        found, args.json, lambda d: print(f"{d.record_id}  {d.relation}"),
        "nothing depends on it: forget may delete it",
    )  # fmt: skip


def approve_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg, writes=True) as mem:
        done = mem.approve(args.id, actor=cfg.actor)
    print_result(args, done, lambda: print(f"approved: {done.action.value} "
                                     f"{' '.join(done.record_ids)}"))  # fmt: skip
    return 0


def reject_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg, writes=True) as mem:
        done = mem.reject(args.id, args.reason, actor=cfg.actor)
    print_result(args, done, lambda: print(f"rejected {done.id}: it stays away until its records "
                                     "change"))  # fmt: skip
    return 0


def access_log_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg) as mem:
        if args.action != "show":
            mem.set_access_log(args.action == "on")
            state = {"access_log": args.action == "on", "space": cfg.space}
            print_result(
                args, state, lambda: print(f"access log {args.action} for space {cfg.space!r}")
            )
            return 0
        found = mem.accesses(args.id, limit=args.limit)
    if args.json:
        print_json([a.to_dict() for a in found])
        return 0
    for a in found:
        who = a.actor or "unknown"
        print(f"{short_time(a.at)}  {a.verb:<6} {a.record_id}  by {who}  {a.query or ''}")
    if not found:
        print("no reads logged (is the access log on? chronomem access-log on)")
    return 0


def where_command(args: argparse.Namespace, cfg: Settings) -> int:
    """``close-where``, ``verify-where`` and ``forget-where``: the verb ``args.verb`` names."""
    extra = {"reason": args.reason, "actor": cfg.actor}
    if args.verb == "close_where":
        extra["valid_until"] = args.valid_until
    with open_memory(cfg, writes=not args.dry_run) as mem:
        result = getattr(mem, args.verb)(**extra, **verb_arguments(args, args.verb))
    print_result(args, result, lambda: _print_bulk(result))
    return 0


def _print_bulk(result: BulkResult) -> None:
    done = {"close": "closed", "verify": "verified", "forget": "forgotten"}[result.action]
    count = len(result.record_ids)
    head = f"would be {done}" if result.dry_run else done
    print(f"{count} record{'s' if count != 1 else ''} {head}")
    purged = set(result.purged)
    for record_id in result.record_ids:
        print(f"  {record_id}{'  (purged)' if record_id in purged else ''}")
    if result.flagged:
        print(f"  flagged evidence_missing: {', '.join(result.flagged)}")
    if result.remains:
        print(f"  not yet physically erased: {result.remains}")
