"""The ``chronomem`` command: a thin adapter over :class:`~chronomem.Memory`.

Configuration is read in exactly one place, :func:`settings`. Every ``ChronomemError`` becomes a
one-line message on stderr and exit code 1; usage errors exit with 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from chronomem.clock import require_aware
from chronomem.config import PRESETS, ReflectionConfig
from chronomem.context.block import record_markers
from chronomem.engine import Memory
from chronomem.errors import ChronomemError, ConfigError, InvalidInputError
from chronomem.llm import OpenAICompatibleLLM
from chronomem.model.event import EventKind
from chronomem.model.record import Hit, Kind, Record, Sensitivity

__all__ = ["Settings", "build_parser", "main", "settings"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    db: str
    space: str
    embedder: bool
    torch_threads: int | None
    actor: str | None
    llm_url: str | None
    llm_model: str | None
    llm_api_key: str | None


def settings(args: argparse.Namespace, environ: Mapping[str, str]) -> Settings:
    """The one place the CLI reads its environment: ``CHRONOMEM_DB``, ``CHRONOMEM_SPACE``,
    ``CHRONOMEM_TORCH_THREADS``, ``CHRONOMEM_ACTOR`` (else ``USER``) for the audit log, and
    ``CHRONOMEM_LLM_URL`` / ``CHRONOMEM_LLM_MODEL`` / ``CHRONOMEM_LLM_API_KEY`` for reflection.
    Flags win over the environment; the API key is read from the environment only."""
    threads = environ.get("CHRONOMEM_TORCH_THREADS")
    actor = getattr(args, "actor", None) or environ.get("CHRONOMEM_ACTOR") or environ.get("USER")
    return Settings(
        db=args.db or environ.get("CHRONOMEM_DB") or "chronomem.db",
        space=args.space or environ.get("CHRONOMEM_SPACE") or "default",
        embedder=not args.no_embedder,
        torch_threads=int(threads) if threads else None,
        actor=actor,
        llm_url=getattr(args, "llm_url", None) or environ.get("CHRONOMEM_LLM_URL"),
        llm_model=getattr(args, "model", None) or environ.get("CHRONOMEM_LLM_MODEL"),
        llm_api_key=environ.get("CHRONOMEM_LLM_API_KEY"),
    )


def llm_client(cfg: Settings) -> OpenAICompatibleLLM:
    """The OpenAI-compatible client the settings describe."""
    if not cfg.llm_url or not cfg.llm_model:
        raise ConfigError(
            "reflection needs an LLM: pass --llm-url and --model (or set CHRONOMEM_LLM_URL and "
            "CHRONOMEM_LLM_MODEL), e.g. http://localhost:11434/v1 and llama3.1 for Ollama"
        )
    return OpenAICompatibleLLM(cfg.llm_url, cfg.llm_model, api_key=cfg.llm_api_key)


def _instant(text: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO 8601 instant (e.g. 2024-01-31T09:00:00Z)"
        ) from None
    try:
        return require_aware(parsed, "time")
    except InvalidInputError:
        raise argparse.ArgumentTypeError(
            f"{text!r} has no UTC offset; add one, e.g. {text}Z or {text}+02:00"
        ) from None


def _open(cfg: Settings, preset: str | None = None) -> Memory:
    embedder: Any = None
    if cfg.embedder:
        from chronomem.embedders.sentence_transformers import SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder(num_threads=cfg.torch_threads)
    return Memory.open(cfg.db, embedder=embedder, space=cfg.space, preset=preset or "default")


def _print_json(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False, indent=2, default=str))


def _short_time(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M")


def _age(seconds: float) -> str:
    if seconds < 3600:
        return f"{seconds / 60:.0f}m"
    if seconds < 86400 * 2:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"


def format_hit(rank: int, hit: Hit) -> str:
    """One hit as text (and its breakdown when present)."""
    r = hit.record
    holders = ",".join(dict.fromkeys(hit.holders or (r.agent,)))
    marker = lifecycle_marker(r)
    line = (
        f"{rank:>3}  {hit.score:8.4f}  [{holders}] {_short_time(r.recorded_at)}  "
        f"imp {r.importance:g}  {r.id}{marker}\n     {r.text}"
    )
    b = hit.breakdown
    if b is None:
        return line
    rel = f"relevance {b.relevance:.3f} ({b.relevance_mode}"
    if b.relevance_dense is not None:
        rel += f", cosine {b.relevance_dense:.3f}"
    elif b.preselected is False:
        rel += ", not pre-selected by pgvector: cosine counted as 0"
    if b.relevance_lexical is not None:
        rel += f", bm25 {b.relevance_lexical:.3f}"
    if b.speaker is not None:
        rel += f", the asker's own line ({b.speaker})"
    rel += ")"
    w = b.weights
    factors = "".join(f"  x {name} {value:.3f}" for name, value in b.factors.items())
    return (
        f"{line}\n     {rel} x{w.relevance:g}  |  recency {b.recency:.3f} "
        f"(raw {b.recency_raw:.4f}, {b.recency_mode}, age {_age(b.age.total_seconds())}) "
        f"x{w.recency:g}  |  importance {b.importance:.3f} (raw {b.importance_raw:g}) "
        f"x{w.importance:g}  =  {b.episodic:.4f}{factors}  [{b.preset}, {b.normalisation}]"
    )


def lifecycle_marker(r: Record) -> str:
    """A short marker for records that are not plainly open and sound."""
    return "".join(f" [{m}]" for m in record_markers(r))


def format_record(r: Record) -> str:
    rows = r.to_dict()
    width = max(len(k) for k in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows.items())


def _cmd_remember(args: argparse.Namespace, cfg: Settings) -> int:
    with _open(cfg) as mem:
        result = mem.remember(
            args.text,
            agent=args.agent,
            kind=args.kind,
            importance=args.importance,
            occurred_at=args.occurred_at,
            domain=args.domain,
            tags=args.tag or (),
            evidence=args.evidence or (),
            supersedes=args.supersedes or (),
            sensitivity=args.sensitivity,
            actor=cfg.actor,
        )
    if args.json:
        _print_json(
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
        print(f"not stored: {result.reason} (duplicate of {result.duplicate_of})")
    return 0


def _cmd_recall(args: argparse.Namespace, cfg: Settings) -> int:
    with _open(cfg, args.preset) as mem:
        agents = args.agent or None
        hits = mem.recall(
            args.query,
            agents=agents,
            k=args.k,
            as_of=args.as_of,
            valid_at=args.valid_at,
            include_history=args.include_history,
            touch=not args.no_touch,
            explain=args.explain,
            kinds=args.kind or None,
            crisis=args.crisis,
            asker=args.asker,
        )
    if args.json:
        _print_json([h.to_dict() for h in hits])
    elif not hits:
        print("no memories match")
    else:
        print("\n".join(format_hit(i, h) for i, h in enumerate(hits, start=1)))
    return 0


def _cmd_show(args: argparse.Namespace, cfg: Settings) -> int:
    with _open(cfg) as mem:
        record = mem.get(args.id)
    if args.json:
        _print_json(record.to_dict())
    else:
        print(format_record(record))
    return 0


def _print_record_line(r: Record) -> None:
    print(f"{r.id}  {_short_time(r.recorded_at)}  [{r.kind.value}]{lifecycle_marker(r)}  {r.text}")


def _cmd_supersede(args: argparse.Namespace, cfg: Settings) -> int:
    with _open(cfg) as mem:
        fields: dict[str, Any] = {}
        if args.kind:
            fields["kind"] = args.kind
        if args.importance is not None:
            fields["importance"] = args.importance
        if args.valid_from is not None:
            fields["valid_from"] = args.valid_from
        result = mem.supersede(args.ids, args.text, reason=args.reason, actor=cfg.actor, **fields)
    print(result.id)
    return 0


def _cmd_close(args: argparse.Namespace, cfg: Settings) -> int:
    with _open(cfg) as mem:
        record = mem.close(args.id, args.reason, valid_until=args.valid_until, actor=cfg.actor)
    _print_record_line(record)
    return 0


def _cmd_history(args: argparse.Namespace, cfg: Settings) -> int:
    with _open(cfg) as mem:
        chain = mem.history(args.id)
    if args.json:
        _print_json([r.to_dict() for r in chain])
    else:
        for r in chain:
            _print_record_line(r)
    return 0


def _cmd_verify(args: argparse.Namespace, cfg: Settings) -> int:
    with _open(cfg) as mem:
        record = mem.verify(args.id, actor=cfg.actor, reason=args.reason)
    print(f"{record.id} verified at {record.last_verified_at}")
    return 0


def _signal(text: str) -> str | float:
    if text in {"helpful", "harmful"}:
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: use helpful, harmful, or a number in [-1, 1]"
        ) from None


def _cmd_feedback(args: argparse.Namespace, cfg: Settings) -> int:
    with _open(cfg) as mem:
        record = mem.feedback(args.id, args.signal, args.reason, actor=cfg.actor)
    print(f"{record.id} feedback score {record.feedback_score:g}")
    return 0


def _cmd_forget(args: argparse.Namespace, cfg: Settings) -> int:
    with _open(cfg) as mem:
        result = mem.forget(args.id, args.reason, purge=args.purge, actor=cfg.actor)
    what = "purged" if result.purged else "deleted"
    print(f"{result.record_id} {what}")
    if result.flagged:
        print(f"  flagged evidence_missing: {', '.join(result.flagged)}")
    if result.remains:
        print(f"  not yet physically erased: {result.remains}")
    return 0


def _cmd_audit(args: argparse.Namespace, cfg: Settings) -> int:
    with _open(cfg) as mem:
        entries = mem.audit(args.id)
    if args.json:
        _print_json([e.to_dict() for e in entries])
        return 0
    for e in entries:
        detail = f"  {json.dumps(dict(e.detail))}" if e.detail else ""
        why = f"  reason: {e.reason}" if e.reason else ""
        when = _short_time(e.at)
        print(f"{e.seq:>5}  {when}  {e.action:<9} {e.record_id}  by {e.actor}{why}{detail}")
    if not entries:
        print("no lifecycle changes recorded")
    return 0


def _cmd_event(args: argparse.Namespace, cfg: Settings) -> int:
    with _open(cfg) as mem:
        event = mem.add_event(
            args.text, occurred_at=args.occurred_at, kind=args.kind, scope=args.scope
        )
    if args.json:
        _print_json(event.to_dict())
    else:
        print(event.id)
    return 0


def _cmd_link(args: argparse.Namespace, cfg: Settings) -> int:
    with _open(cfg) as mem:
        if args.remove:
            removed = mem.unlink(args.cause, args.effect)
            print("removed" if removed else "no such link")
            return 0
        link = mem.link(args.cause, args.effect, weight=args.weight)
    print(f"{link.cause} -> {link.effect}  weight {link.weight:g}  ({link.provenance.value})")
    return 0


def _cmd_ancestors(args: argparse.Namespace, cfg: Settings) -> int:
    with _open(cfg) as mem:
        reach = (mem.descendants if args.descendants else mem.ancestors)(
            args.id, max_depth=args.max_depth, as_of=args.as_of
        )
    if args.json:
        _print_json([a.to_dict() for a in reach])
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


def _cmd_context(args: argparse.Namespace, cfg: Settings) -> int:
    with _open(cfg, args.preset) as mem:
        block = mem.context(
            args.query,
            agents=args.agent or None,
            crisis=args.crisis,
            k=args.k,
            budget_tokens=args.budget_tokens,
            as_of=args.as_of,
            touch=not args.no_touch,
        )
    if args.json:
        _print_json(block.to_dict())
    else:
        print(block.text, end="")
    return 0


def _cmd_reflect(args: argparse.Namespace, cfg: Settings) -> int:
    llm = llm_client(cfg)
    config = ReflectionConfig(questions=args.questions, insights=args.insights)
    with _open(cfg) as mem:
        if args.if_due and mem.accumulated_importance(args.agent) < config.threshold:
            total = mem.accumulated_importance(args.agent)
            print(f"not due: {args.agent} has accumulated {total:g} of {config.threshold:g}")
            return 0
        result = mem.reflect(args.agent, llm=llm, config=config)
    print(f"{len(result.records)} reflection(s) for {result.agent} ({result.calls} model calls)")
    for question in result.questions:
        print(f"  Q: {question}")
    for record in result.records:
        print(f"  {record.id}  depth {record.depth}  {record.text}")
        print(f"      evidence: {', '.join(record.evidence)}")
    return 0


def _cmd_export(args: argparse.Namespace, cfg: Settings) -> int:
    with _open(cfg) as mem:
        count = mem.export(args.path)
    print(f"exported {count} records to {args.path}")
    return 0


def _cmd_import(args: argparse.Namespace, cfg: Settings) -> int:
    if args.format == "generative-agents":
        with _open(cfg) as mem:
            ga = mem.import_generative_agents(args.path, agent=args.agent, progress=True)
        print(ga.summary())
        return 0
    with _open(cfg) as mem:
        report = mem.import_(args.path)
    print(
        f"imported {report.records} records, {report.audit_entries} audit entries, "
        f"{report.events} events and {report.links} links from {report.path}"
    )
    for problem in report.problems:
        print(f"  {problem}")
    return 0


def _cmd_migrate(args: argparse.Namespace, cfg: Settings) -> int:
    from chronomem.migrate import MigratedSpace, migrate
    from chronomem.stores.postgres import redact

    def done(report: MigratedSpace) -> None:
        print(
            f"  {report.space}: {report.records} records, {report.audit_entries} audit entries, "
            f"{report.events} events, {report.links} links"
        )

    print(f"migrating {redact(args.source)} -> {redact(args.target)}")
    reports = migrate(args.source, args.target, spaces=args.spaces, on_space=done)
    print(f"migrated {len(reports)} space(s)")
    return 0


def _cmd_stats(args: argparse.Namespace, cfg: Settings) -> int:
    with _open(cfg) as mem:
        stats = mem.stats()
    if args.json:
        _print_json(stats)
        return 0
    print(f"store      {stats['store']} (schema v{stats['schema_version']})")
    print(f"space      {stats['space']}")
    print(f"embedder   {stats['embedding_model']} (dimension {stats['embedding_dim']})")
    print(f"records    {stats['records']}  ({stats['bytes_on_disk']:,} bytes on disk)")
    print(f"candidates {stats['candidates']}")
    for agent, kinds in stats["agents"].items():
        detail = ", ".join(f"{k} {n}" for k, n in kinds.items())
        print(f"  {agent}: {detail}")
    return 0


def _cmd_embed_passages(args: argparse.Namespace, cfg: Settings) -> int:
    with _open(cfg) as mem:
        done = mem.embed_passages(progress=sys.stderr.isatty())
    print(f"{done} record(s) gained passage vectors")
    return 0


def _cmd_demo(args: argparse.Namespace, cfg: Settings) -> int:
    from chronomem.cli.demo import run_demo

    llm = llm_client(cfg) if cfg.llm_url and cfg.llm_model else None
    return run_demo(
        db=args.db or "demo.chronomem.db", fresh=args.fresh, threads=cfg.torch_threads, llm=llm
    )


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--db",
        help="SQLite file or postgresql:// URL (default: $CHRONOMEM_DB or ./chronomem.db)",
    )
    common.add_argument("--space", help="namespace inside the store (default: 'default')")
    common.add_argument(
        "--no-embedder",
        action="store_true",
        help="do not load the embedding model: lexical relevance only",
    )
    parser = argparse.ArgumentParser(
        prog="chronomem",
        description="A memory engine for LLM agents and multi-agent simulations.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("remember", parents=[common], help="store a memory")
    p.add_argument("text")
    p.add_argument("--agent", default="default", help="whose memory (default: 'default')")
    p.add_argument("--kind", default="observation", choices=[k.value for k in Kind])
    p.add_argument("--importance", type=float, help="1 (mundane) .. 10 (life-changing)")
    p.add_argument("--occurred-at", type=_instant, help="world time, ISO 8601 with offset")
    p.add_argument("--domain")
    p.add_argument("--tag", action="append", help="repeatable")
    p.add_argument("--evidence", action="append", help="cited record id (repeatable)")
    p.add_argument("--supersedes", action="append", help="id this record replaces (repeatable)")
    p.add_argument("--sensitivity", default="normal", choices=[s.value for s in Sensitivity])
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_cmd_remember)

    p = sub.add_parser("recall", parents=[common], help="the best memories for a query")
    p.add_argument("query")
    p.add_argument("--agent", action="append", help="whose memories (repeatable; default: all)")
    p.add_argument("-k", type=int, default=10, help="how many (default 10)")
    p.add_argument("--as-of", type=_instant, help="evaluate at this instant (default: now)")
    p.add_argument("--valid-at", type=_instant, help="world time for validity windows")
    p.add_argument(
        "--include-history", action="store_true", help="closed and superseded records too"
    )
    p.add_argument("--kind", action="append", choices=[k.value for k in Kind])
    p.add_argument("--preset", choices=sorted(PRESETS), help="scoring preset (default: default)")
    p.add_argument("--explain", action="store_true", help="show each score's components")
    p.add_argument("--no-touch", action="store_true", help="read-only: do not mark as accessed")
    p.add_argument("--crisis", help="event id: lift memories tied to its causes (TCMF)")
    p.add_argument(
        "--asker", help="who asks (a transcript speaker): first-person queries favour their lines"
    )
    p.add_argument("--json", action="store_true", help="print hits as JSON")
    p.set_defaults(func=_cmd_recall)

    p = sub.add_parser("show", parents=[common], help="one record by id, every field")
    p.add_argument("id")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_show)

    lifecycle = argparse.ArgumentParser(add_help=False, parents=[common])
    lifecycle.add_argument(
        "--actor", help="who makes the change (default: $CHRONOMEM_ACTOR, $USER)"
    )

    p = sub.add_parser("supersede", parents=[lifecycle], help="replace records with a new one")
    p.add_argument("ids", nargs="+", metavar="ID", help="the record(s) replaced")
    p.add_argument("--text", required=True, help="the replacement")
    p.add_argument("--reason")
    p.add_argument("--kind", choices=[k.value for k in Kind], help="default: the old record's")
    p.add_argument("--importance", type=float)
    p.add_argument("--valid-from", type=_instant, help="when the replacement applies from")
    p.set_defaults(func=_cmd_supersede)

    p = sub.add_parser("close", parents=[lifecycle], help="close a record without a successor")
    p.add_argument("id")
    p.add_argument("--reason", required=True)
    p.add_argument("--valid-until", type=_instant, help="when it stopped applying (default now)")
    p.set_defaults(func=_cmd_close)

    p = sub.add_parser("history", parents=[common], help="the supersession chain of a record")
    p.add_argument("id")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_history)

    p = sub.add_parser("verify", parents=[lifecycle], help="confirm a record is still true")
    p.add_argument("id")
    p.add_argument("--reason")
    p.set_defaults(func=_cmd_verify)

    p = sub.add_parser("feedback", parents=[lifecycle], help="rate a record helpful or harmful")
    p.add_argument("id")
    p.add_argument("signal", type=_signal, help="helpful, harmful, or a number in [-1, 1]")
    p.add_argument("--reason")
    p.set_defaults(func=_cmd_feedback)

    p = sub.add_parser("forget", parents=[lifecycle], help="hard-delete (or purge) a record")
    p.add_argument("id")
    p.add_argument("--reason", required=True)
    p.add_argument("--purge", action="store_true", help="scrub the bytes from the files too")
    p.set_defaults(func=_cmd_forget)

    p = sub.add_parser("audit", parents=[common], help="the log of lifecycle changes")
    p.add_argument("id", nargs="?", help="only this record's")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_audit)

    p = sub.add_parser("event", parents=[common], help="add an event to the causal graph")
    p.add_argument("text")
    p.add_argument("--kind", default="happening", choices=[k.value for k in EventKind])
    p.add_argument("--occurred-at", type=_instant, help="world time (default: now)")
    p.add_argument("--scope", help="institution, district... (for the scope fallback)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_event)

    p = sub.add_parser("link", parents=[common], help="add (or --remove) a causal link")
    p.add_argument("cause", help="event id")
    p.add_argument("effect", help="event id")
    p.add_argument("--weight", type=float, default=1.0, help="in (0, 1], default 1")
    p.add_argument("--remove", action="store_true", help="remove the link instead")
    p.set_defaults(func=_cmd_link)

    p = sub.add_parser("ancestors", parents=[common], help="the causes of an event")
    p.add_argument("id", help="event id")
    p.add_argument("--max-depth", type=int, default=4)
    p.add_argument("--as-of", type=_instant)
    p.add_argument("--descendants", action="store_true", help="its effects instead")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_ancestors)

    p = sub.add_parser("context", parents=[common], help="a prompt-ready context block")
    p.add_argument("query", nargs="?", default=None, help="default: the crisis's text")
    p.add_argument("--crisis", help="event id: add its causal chain and lift its causes")
    p.add_argument("--agent", action="append", help="whose memories (repeatable; default: all)")
    p.add_argument("-k", type=int, default=12)
    p.add_argument("--budget-tokens", type=int, help="cap the block (≈4 characters a token)")
    p.add_argument("--as-of", type=_instant)
    p.add_argument("--preset", choices=sorted(PRESETS))
    p.add_argument("--no-touch", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_context)

    p = sub.add_parser("reflect", parents=[common], help="reflect with an LLM (cited insights)")
    p.add_argument("--agent", required=True)
    p.add_argument("--llm-url", help="OpenAI-compatible API root (default: $CHRONOMEM_LLM_URL)")
    p.add_argument("--model", help="model name (default: $CHRONOMEM_LLM_MODEL)")
    p.add_argument("--questions", type=int, default=3, help="focal questions (default 3)")
    p.add_argument("--insights", type=int, default=5, help="insights per question (default 5)")
    p.add_argument("--if-due", action="store_true", help="only if the importance trigger is due")
    p.set_defaults(func=_cmd_reflect)

    p = sub.add_parser("export", parents=[common], help="write the space to a JSONL archive")
    p.add_argument("path")
    p.set_defaults(func=_cmd_export)

    p = sub.add_parser(
        "import", parents=[common], help="load a JSONL archive, or another system's memories"
    )
    p.add_argument("path", help="the archive, or (generative-agents) the persona folder")
    p.add_argument(
        "--format",
        choices=["chronomem", "generative-agents"],
        default="chronomem",
        help="chronomem JSONL (default) or a Generative Agents persona's associative_memory",
    )
    p.add_argument("--agent", help="generative-agents: import as this agent (default: its name)")
    p.set_defaults(func=_cmd_import)

    p = sub.add_parser(
        "migrate",
        help="copy spaces between stores (SQLite <-> PostgreSQL), ids and every field kept",
    )
    p.add_argument("--from", dest="source", required=True, help="source: a path or a URL")
    p.add_argument("--to", dest="target", required=True, help="target: a path or a URL")
    p.add_argument(
        "--space",
        dest="spaces",
        action="append",
        help="a space to copy (repeatable; default: every space of the source)",
    )
    p.set_defaults(func=_cmd_migrate, db=None, space=None, no_embedder=True)

    p = sub.add_parser("stats", parents=[common], help="counts, store and embedder")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_stats)

    p = sub.add_parser(
        "embed-passages",
        parents=[common],
        help="backfill passage vectors for records of several sentences written without them",
    )
    p.set_defaults(func=_cmd_embed_passages)

    p = sub.add_parser("demo", parents=[common], help="the end-to-end demo on a real SQLite file")
    p.add_argument("--fresh", action="store_true", help="delete the demo store first")
    p.set_defaults(func=_cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    cfg = settings(args, os.environ)
    try:
        return int(args.func(args, cfg))
    except ChronomemError as exc:
        message = str(exc).strip().replace("\n", " ")
        print(f"chronomem: error: {message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
