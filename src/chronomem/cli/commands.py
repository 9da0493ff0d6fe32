"""The CLI's commands: each parses nothing, calls one verb of :class:`~chronomem.Memory` (or
:func:`~chronomem.migrate`) with what ``main.py`` parsed, and renders the result
(``render.py``). They return the exit code."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable
from typing import Any

from chronomem.cli.arguments import record_arguments, verb_arguments
from chronomem.cli.render import (
    format_event,
    format_hit,
    format_record,
    print_json,
    print_record_line,
    short_time,
)
from chronomem.cli.settings import (
    Settings,
    embedder_for,
    engine_class,
    language_codes,
    llm_client,
    open_memory,
)
from chronomem.errors import ConfigError
from chronomem.model.record import WriteResult
from chronomem.retrieval.options import ReadOptions

__all__: list[str] = []


#: The exit code of a write the write gate refused: like every refusal or failure (see
#: ``main.EXIT_CODES``).
REFUSED = 1


def print_result(args: argparse.Namespace, value: Any, text: Callable[[], None]) -> None:
    """``--json``: the value as one JSON document; else the command's text."""
    if args.json:
        print_json(value)
    else:
        text()


def record_fields(args: argparse.Namespace) -> dict[str, Any]:
    """``Memory.remember``'s keywords from the flags of ``arguments.record_fields`` and the
    command's own ``--agent``, ``--kind`` and ``--sensitivity`` (only those given:
    ``supersede`` then takes the old record's)."""
    own = {"kind": args.kind, "agent": args.agent, "sensitivity": args.sensitivity}
    return {**record_arguments(args), **{k: v for k, v in own.items() if v is not None}}


def _print_write(result: WriteResult, as_json: bool) -> int:
    if as_json:
        print_json(
            {
                "stored": result.stored,
                "id": result.id,
                "reason": result.reason,
                "duplicate_of": result.duplicate_of,
            }
        )
    elif result.stored:
        print(result.id)
    else:
        print(f"not stored: {result.reason}")
    return 0 if result.stored else REFUSED


def remember_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(
        cfg, create=True, allow_missing_vectors=args.allow_missing_vectors, writes=True
    ) as mem:
        result = mem.remember(
            args.text, actor=cfg.actor, **record_fields(args),
        )  # fmt: skip
    return _print_write(result, args.json)


def recall_command(args: argparse.Namespace, cfg: Settings) -> int:
    options = ReadOptions(**verb_arguments(args, "recall"))
    with open_memory(cfg) as mem:
        hits = mem.recall(args.query, options=options)
    if args.json:
        print_json([h.to_dict() for h in hits])
    elif not hits:
        print("no memories match")
    else:
        print("\n".join(format_hit(i, h) for i, h in enumerate(hits, start=1)))
    return 0


def show_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg) as mem:
        if args.event:
            event = mem.get_event(args.id)
            print_result(args, event, lambda: print(format_event(event)))
            return 0
        record = mem.get(args.id)
    if args.json:
        print_json(record.to_dict())
    else:
        print(format_record(record))
    return 0


def supersede_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg, allow_missing_vectors=args.allow_missing_vectors, writes=True) as mem:
        result = mem.supersede(
            args.ids, args.text, reason=args.reason, actor=cfg.actor, **record_fields(args)
        )
    return _print_write(result, args.json)


def close_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg, writes=True) as mem:
        record = mem.close_record(
            args.id, args.reason, valid_until=args.valid_until, actor=cfg.actor
        )
    print_result(args, record, lambda: print_record_line(record))
    return 0


def history_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg) as mem:
        chain = mem.history(args.id)
    if args.json:
        print_json([r.to_dict() for r in chain])
    else:
        for r in chain:
            print_record_line(r)
    return 0


def verify_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg, writes=True) as mem:
        record = mem.verify(args.id, actor=cfg.actor, reason=args.reason)
    print_result(args, record, lambda: print(f"{record.id} verified at {record.last_verified_at}"))
    return 0


def expire_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg, writes=True) as mem:
        closed = mem.expire()
    print_result(args, closed, lambda: print(f"{len(closed)} expired record(s) closed"))
    return 0


def feedback_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg, writes=True) as mem:
        record = mem.feedback(args.id, args.signal, args.reason, actor=cfg.actor)
    print_result(
        args, record, lambda: print(f"{record.id} feedback score {record.feedback_score:g}")
    )
    return 0


def forget_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg, writes=True) as mem:
        result = mem.forget(args.id, args.reason, purge=args.purge, actor=cfg.actor)
    if args.json:
        print_json(result)
        return 0
    what = "purged" if result.purged else "deleted"
    print(f"{result.record_id} {what}")
    if result.flagged:
        print(f"  flagged evidence_missing: {', '.join(result.flagged)}")
    if result.remains:
        print(f"  not yet physically erased: {result.remains}")
    return 0


def scrub_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg) as mem:
        result = mem.scrub()
    if args.json:
        print_json(result)
    elif result.scrubbed:
        print("scrubbed: no byte of a purged record is left in the store's files")
    else:
        print(f"scrubbed what the store can; {result.remains}")
    return 0


def audit_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg) as mem:
        entries = mem.audit(args.id)
    if args.json:
        print_json([e.to_dict() for e in entries])
        return 0
    for e in entries:
        detail = f"  {json.dumps(dict(e.detail))}" if e.detail else ""
        why = f"  reason: {e.reason}" if e.reason else ""
        when, who = short_time(e.at), e.actor or "unknown"
        print(f"{e.seq:>5}  {when}  {e.action:<9} {e.record_id}  by {who}{why}{detail}")
    if not entries:
        print("no lifecycle changes recorded")
    return 0


def context_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg) as mem:
        block = mem.context(
            args.query,
            agents=args.agent or None,
            crisis=args.crisis,
            k=args.k,
            budget_tokens=args.budget_tokens,
            as_of=args.as_of,
            touch=not args.no_touch,
            preset=args.preset,
            **verb_arguments(args, "context"),
        )
    if args.json:
        print_json(block.to_dict())
    else:
        print(block.text, end="")
    return 0


def export_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg) as mem:
        count = mem.export(args.path)
    exported = {"records": count, "path": args.path}
    print_result(args, exported, lambda: print(f"exported {count} records to {args.path}"))
    return 0


def import_command(args: argparse.Namespace, cfg: Settings) -> int:
    allow = args.allow_missing_vectors
    if args.format == "generative-agents":
        with open_memory(cfg, create=True, allow_missing_vectors=allow) as mem:
            if not isinstance(mem, engine_class()):
                raise ConfigError(
                    "importing a Generative Agents folder reads local files: run it against the "
                    "store (--db), not through --server"
                )
            ga = mem.import_generative_agents(args.path, agent=args.agent, progress=True)
        print_result(args, ga, lambda: print(ga.summary()))
        return 0
    with open_memory(cfg, create=True, allow_missing_vectors=allow) as mem:
        report = mem.import_(args.path)
    if args.json:
        print_json(report)
        return 0
    print(
        f"imported {report.records} records, {report.audit_entries} audit entries, "
        f"{report.events} events and {report.links} links from {report.path}"
    )
    for problem in report.problems:
        print(f"  {problem}")
    return 0


def migrate_command(args: argparse.Namespace, cfg: Settings) -> int:
    from chronomem.stores.postgres import redact
    from chronomem.transfer.migrate import MigratedSpace, migrate

    def done(report: MigratedSpace) -> None:
        print(
            f"  {report.space}: {report.records} records, {report.audit_entries} audit entries, "
            f"{report.events} events, {report.links} links"
        )

    if args.json:
        print_json(migrate(args.source, args.target, spaces=args.spaces))
        return 0
    print(f"migrating {redact(args.source)} -> {redact(args.target)}")
    reports = migrate(args.source, args.target, spaces=args.spaces, on_space=done)
    print(f"migrated {len(reports)} space(s)")
    return 0


def stats_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg) as mem:
        stats = mem.stats()
    if args.json:
        print_json(stats)
        return 0
    print(f"store      {stats.get('store', cfg.server)} (schema v{stats['schema_version']})")
    print(f"space      {stats['space']}")
    print(f"embedder   {stats['embedding_model']} (dimension {stats['embedding_dim']})")
    print(f"records    {stats['records']}  ({stats['bytes_on_disk']:,} bytes on disk)")
    print(f"candidates {stats['candidates']}")
    limits = stats["thresholds"]
    print(
        f"thresholds gate {limits['gate']:g}, association {limits['association']:g}"
        + (" (calibrated)" if limits["calibrated"] else "")
    )
    for agent, kinds in stats["agents"].items():
        detail = ", ".join(f"{k} {n}" for k, n in kinds.items())
        print(f"  {agent}: {detail}")
    return 0


def calibrate_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg, create=True) as mem:
        measured = mem.calibrate(progress=sys.stderr.isatty())

    def text() -> None:
        ev = measured.evidence
        print(f"calibrated {measured.model} on {', '.join(measured.languages)} pairs")
        print(
            f"  gate        {measured.gate:g}  (nearest different pair {ev['nearest_different']:g}"
            f" of {ev['gate_pairs']:g}; {ev['same_merged']:.0%} of restatements merged)"
        )
        print(
            f"  association {measured.association:g}  (mean cosine about an event "
            f"{ev['mean_about']:g}, unrelated {ev['mean_unrelated']:g})"
        )
        imp = measured.importance
        print(
            "  importance  shipped constants (the model does not read English)"
            if imp is None
            else f"  importance  temperature {imp.temperature:g}, intercept {imp.intercept:g}, "
            f"slope {imp.slope:g}"
        )

    print_result(args, json.loads(measured.to_json()), text)
    return 0


def reembed_command(args: argparse.Namespace, cfg: Settings) -> int:
    from chronomem.engine import Memory

    if cfg.server:
        raise ConfigError("reembed runs beside the service, on the store: pass --db, not --server")
    local = dataclasses.replace(cfg, embedder=False)  # the old model is not needed
    with open_memory(local) as mem:
        assert isinstance(mem, Memory)
        if args.status or args.cancel:
            if args.cancel:
                dropped = mem.cancel_reembed()
                print_result(
                    args, {"dropped": dropped}, lambda: print(f"dropped {dropped} vectors")
                )
                return 0
            state = mem.reembed_state()
            print_result(
                args,
                None if state is None else dataclasses.asdict(state),
                lambda: print(
                    "no switch in progress"
                    if state is None
                    else f"switching to {state.model} (dimension {state.dim}) since "
                    f"{state.started}: {state.done} of {state.total} vectors made"
                ),
            )
            return 0
        if not args.to:
            raise ConfigError("reembed needs the new model: --to FOLDER, --to default, or --to-url")
        target = embedder_for(
            dataclasses.replace(
                cfg,
                embedder=True,
                embed_model=None if args.to == "default" and not args.to_url else args.to,
                embed_url=args.to_url,
                embed_languages=language_codes(args.to_languages),
            )
        )
        assert target is not None
        report = mem.reembed(
            target, batch=args.batch, progress=sys.stderr.isatty(), cut_over=not args.no_cut_over
        )
    print_result(
        args,
        dataclasses.asdict(report),
        lambda: print(
            f"{'switched' if report.cut_over else 'prepared'} {report.total} vectors to "
            f"{report.model} (dimension {report.dim}): {report.embedded} embedded now"
            + (f", {report.stragglers} written during the switch" if report.stragglers else "")
            + ("" if report.cut_over else "; run again to cut over")
        ),
    )
    return 0


def embed_records_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg) as mem:
        done = mem.embed_records(progress=sys.stderr.isatty(), batch=args.batch)
    print_result(args, {"embedded": done}, lambda: print(f"{done} record(s) gained a vector"))
    return 0


def embed_passages_command(args: argparse.Namespace, cfg: Settings) -> int:
    with open_memory(cfg) as mem:
        done = mem.embed_passages(progress=sys.stderr.isatty(), batch=args.batch)
    print_result(
        args, {"embedded": done}, lambda: print(f"{done} record(s) gained passage vectors")
    )
    return 0


def demo_command(args: argparse.Namespace, cfg: Settings) -> int:
    from chronomem.cli.demo import run_demo

    if cfg.now is not None:
        raise ConfigError("the demo runs its own simulated clock; --now does not apply to it")
    llm = llm_client(cfg) if cfg.llm_url and cfg.llm_model else None
    return run_demo(
        db=args.db or "demo.chronomem.db", fresh=args.fresh, threads=cfg.torch_threads, llm=llm
    )
