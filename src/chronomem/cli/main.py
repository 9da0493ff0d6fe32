"""The ``chronomem`` command: a thin adapter over :class:`~chronomem.Memory` — the parser and
the entry point (the commands are ``commands.py`` and ``service.py``, rendering ``render.py``).

Configuration is read in exactly one place, :func:`~chronomem.cli.settings.settings`. Exit codes
(:data:`EXIT_CODES`): 0 done; 1 refused or failed — every ``ChronomemError`` becomes a one-line
message on stderr, and a write the write gate refused prints ``not stored: ...``; 2 usage (an
unknown flag, a missing argument, a value of the wrong form: argparse's message and usage).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from chronomem import __version__
from chronomem.cli import browse, commands, conversation, curation, graph, service, watch
from chronomem.cli.arguments import (
    instant,
    missing_vectors_flag,
    reason_flag,
    record_fields,
    signal,
    verb_flags,
)
from chronomem.cli.settings import settings
from chronomem.config import PRESETS
from chronomem.errors import ChronomemError
from chronomem.model.event import EventKind
from chronomem.model.record import Kind, Sensitivity
from chronomem.model.review import ProposalStatus

__all__ = ["EXIT_CODES", "build_parser", "main"]

#: The exit codes of every command (README "Command line", docs/cli.md).
EXIT_CODES = {
    0: "done",
    1: "refused or failed: a one-line `chronomem: error: ...` on stderr (bad value, missing "
    "record, conflict, store or model problem), or a write the write gate refused "
    "(`not stored: ...`)",
    2: "usage: unknown command or flag, missing argument, a value of the wrong form "
    "(argparse prints the usage)",
    130: "interrupted (Ctrl-C)",
}


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--db",
        help="SQLite file or postgresql:// URL (default: $CHRONOMEM_DB or ./chronomem.db)",
    )
    common.add_argument("--space", help="namespace inside the store (default: 'default')")
    common.add_argument(
        "--server",
        help="run through a chronomem service at this URL (default: $CHRONOMEM_URL); the model "
        "stays loaded there between commands",
    )
    common.add_argument("--key", help="the service's API key (default: $CHRONOMEM_KEY)")
    common.add_argument(
        "--now",
        type=instant,
        metavar="INSTANT",
        help="simulated time: run this command as if it were this instant (default: "
        "$CHRONOMEM_NOW, else the wall clock); a write refuses a --now before the space's "
        "newest write",
    )
    common.add_argument("--json", action="store_true", help="print the result as one JSON document")
    common.add_argument(
        "--no-embedder",
        action="store_true",
        help="do not load the embedding model: lexical relevance only",
    )
    parser = argparse.ArgumentParser(
        prog="chronomem",
        description="A memory engine for LLM agents and multi-agent simulations.",
    )
    parser.add_argument("--version", action="version", version=f"chronomem {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    lifecycle = argparse.ArgumentParser(add_help=False, parents=[common])
    lifecycle.add_argument(
        "--actor", help="who makes the change (default: $CHRONOMEM_ACTOR, $USER, the OS user)"
    )

    p = sub.add_parser("remember", parents=[lifecycle], help="store a memory")
    p.add_argument("text")
    p.add_argument("--agent", default="default", help="whose memory (default: 'default')")
    p.add_argument("--kind", default="observation", choices=[k.value for k in Kind])
    record_fields(p, supersession=True)
    p.add_argument("--sensitivity", default="normal", choices=[s.value for s in Sensitivity])
    p.set_defaults(func=commands.remember_command)

    conversation.add_commands(sub, common, lifecycle, ("remember-messages",))
    p = sub.add_parser("recall", parents=[common], help="the best memories for a query")
    p.add_argument("query")
    verb_flags(p, "recall")
    p.set_defaults(func=commands.recall_command)

    p = sub.add_parser("show", parents=[common], help="one record (or --event) by id, every field")
    p.add_argument("id")
    p.add_argument("--event", action="store_true", help="the id is an event's")
    p.set_defaults(func=commands.show_command)

    paged = argparse.ArgumentParser(add_help=False, parents=[common])
    paged.add_argument("--since", type=instant, help="from this instant (inclusive)")
    paged.add_argument("--until", type=instant, help="to this instant (exclusive)")
    paged.add_argument("--as-of", type=instant, help="as the store stood then (default: now)")
    paged.add_argument("--limit", type=int, default=20, help="a page of this many (default 20)")
    paged.add_argument("--offset", type=int, default=0, help="skip this many (paging)")

    p = sub.add_parser(
        "list", parents=[common], help="browse records: by agent, kind, state, filter, window"
    )
    verb_flags(p, "records", defaults={"limit": 20})
    p.set_defaults(func=browse.list_command)

    p = sub.add_parser("events", parents=[paged], help="browse the causal graph's events")
    p.add_argument("--kind", action="append", choices=[k.value for k in EventKind])
    p.add_argument("--scope")
    p.set_defaults(func=browse.events_command)

    p = sub.add_parser("links", parents=[paged], help="browse the causal graph's links")
    p.add_argument("--event", help="only the links of this event (as cause or effect)")
    p.set_defaults(func=browse.links_command)

    p = sub.add_parser(
        "supersede",
        parents=[lifecycle],
        help="replace records with a new one",
        usage="chronomem supersede ID [ID ...] TEXT [options]",
    )
    p.add_argument(
        "ids", nargs="+", metavar="ID [ID ...] TEXT", help="the record(s) replaced, then the text"
    )
    p.add_argument("--text", help=argparse.SUPPRESS)  # deprecated: the text is positional
    reason_flag(p)
    p.add_argument("--agent", help="default: the old record's")
    p.add_argument("--kind", choices=[k.value for k in Kind], help="default: the old record's")
    record_fields(p)
    p.add_argument(
        "--sensitivity", choices=[s.value for s in Sensitivity], help="default: the old record's"
    )
    p.set_defaults(func=commands.supersede_command)

    p = sub.add_parser("close", parents=[lifecycle], help="close a record without a successor")
    p.add_argument("id")
    reason_flag(p, required=True)
    verb_flags(p, "close_record", without=("reason",))
    p.set_defaults(func=commands.close_command)

    p = sub.add_parser("history", parents=[common], help="the supersession chain of a record")
    p.add_argument("id")
    p.set_defaults(func=commands.history_command)

    p = sub.add_parser("verify", parents=[lifecycle], help="confirm a record is still true")
    p.add_argument("id")
    reason_flag(p)
    p.set_defaults(func=commands.verify_command)

    p = sub.add_parser(
        "expire", parents=[common], help="store the close of records whose time to live ran out"
    )
    p.set_defaults(func=commands.expire_command)

    p = sub.add_parser("feedback", parents=[lifecycle], help="rate a record helpful or harmful")
    p.add_argument("id")
    p.add_argument("signal", type=signal, help="helpful, harmful, or a number in [-1, 1]")
    reason_flag(p)
    p.set_defaults(func=commands.feedback_command)

    p = sub.add_parser("forget", parents=[lifecycle], help="hard-delete (or purge) a record")
    p.add_argument("id")
    reason_flag(p, required=True)
    verb_flags(p, "forget", without=("reason",))
    p.set_defaults(func=commands.forget_command)

    for verb in ("close_where", "verify_where", "forget_where"):
        name = verb.replace("_", "-")
        action = name.removesuffix("-where")
        p = sub.add_parser(
            name, parents=[lifecycle], help=f"{action} every record a filter selects, at once"
        )
        verb_flags(p, verb, required=("filter",))
        reason_flag(p, required=verb != "verify_where")
        if verb == "close_where":
            p.add_argument("--valid-until", type=instant, help="when they stopped applying")
        p.set_defaults(func=curation.where_command, verb=verb)

    p = sub.add_parser(
        "scrub",
        parents=[common],
        help="finish erasing purged records from the store's files (PostgreSQL: VACUUM FULL)",
    )
    p.set_defaults(func=commands.scrub_command)

    p = sub.add_parser("dependants", parents=[common], help="what depends on a record")
    p.add_argument("id")
    p.set_defaults(func=curation.dependants_command)

    p = sub.add_parser("audit", parents=[common], help="the log of lifecycle changes")
    p.add_argument("id", nargs="?", help="only this record's")
    p.set_defaults(func=commands.audit_command)

    graph.add_commands(sub, common)
    watch.add_command(sub, common)
    p = sub.add_parser("context", parents=[common], help="a prompt-ready context block")
    p.add_argument("query", nargs="?", default=None, help="default: the crisis's text")
    p.add_argument("--crisis", help="event id: add its causal chain and lift its causes")
    p.add_argument("--agent", action="append", help="whose memories (repeatable; default: all)")
    p.add_argument("-k", type=int, default=12)
    p.add_argument("--budget-tokens", type=int, help="cap the block (≈4 characters a token)")
    p.add_argument("--as-of", type=instant)
    p.add_argument("--preset", choices=sorted(PRESETS))
    p.add_argument("--no-touch", action="store_true")
    verb_flags(p, "context")
    p.set_defaults(func=commands.context_command)

    conversation.add_commands(sub, common, lifecycle, ("extract", "reflect"))
    p = sub.add_parser("export", parents=[common], help="write the space to a JSONL archive")
    p.add_argument("path")
    p.set_defaults(func=commands.export_command)

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
    missing_vectors_flag(p)
    p.set_defaults(func=commands.import_command)

    p = sub.add_parser(
        "migrate",
        help="copy spaces between stores (SQLite <-> PostgreSQL), ids and every field kept",
    )
    p.add_argument("--from", dest="source", required=True, help="source: a path or a URL")
    p.add_argument("--to", dest="target", required=True, help="target: a path or a URL")
    p.add_argument("--json", action="store_true", help="print the result as one JSON document")
    p.add_argument(
        "--space",
        dest="spaces",
        action="append",
        help="a space to copy (repeatable; default: every space of the source)",
    )
    p.set_defaults(func=commands.migrate_command, db=None, space=None, no_embedder=True)

    p = sub.add_parser("stats", parents=[common], help="counts, store and embedder")
    p.set_defaults(func=commands.stats_command)

    p = sub.add_parser(
        "calibrate",
        parents=[common],
        help="measure the embedding model's gate, association and importance thresholds and "
        "keep them in the store",
    )
    p.set_defaults(func=commands.calibrate_command)

    p = sub.add_parser(
        "reembed",
        parents=[common],
        help="switch the store to another embedding model while it serves (resumable)",
    )
    p.add_argument(
        "--to", metavar="MODEL",
        help="the new model: a local sentence-transformers folder, 'default' (the bundled "
        "model), or with --to-url the model an OpenAI-compatible endpoint serves",
    )  # fmt: skip
    p.add_argument("--to-url", metavar="URL", help="an OpenAI-compatible /v1 endpoint")
    p.add_argument(
        "--to-languages", metavar="CODES",
        help="the languages the endpoint's model reads (comma-separated ISO 639-1 codes)",
    )  # fmt: skip
    p.add_argument("--batch", type=int, default=256, help="records per transaction (256)")
    p.add_argument(
        "--no-cut-over", action="store_true",
        help="make the new vectors but keep serving the old ones (run again to cut over)",
    )  # fmt: skip
    p.add_argument("--status", action="store_true", help="how far a switch in progress is")
    p.add_argument("--cancel", action="store_true", help="drop a switch in progress")
    p.set_defaults(func=commands.reembed_command)

    p = sub.add_parser(
        "embed-records",
        parents=[common],
        help="embed the records written without a vector (e.g. with --allow-missing-vectors)",
    )
    p.add_argument("--batch", type=int, default=512, help="records per transaction (512)")
    p.set_defaults(func=commands.embed_records_command)

    p = sub.add_parser(
        "embed-passages",
        parents=[common],
        help="backfill passage vectors for records of several sentences written without them",
    )
    p.add_argument("--batch", type=int, default=512, help="records per transaction (512)")
    p.set_defaults(func=commands.embed_passages_command)

    review = sub.add_parser(
        "review", parents=[common], help="what to verify, close, supersede or forget (proposals)"
    )
    review.add_argument("--agent", help="only this agent's records")
    review.add_argument("--as-of", type=instant, help="review as of this instant")
    review.set_defaults(func=curation.review_command)
    review_sub = review.add_subparsers(dest="review_command", metavar="ACTION")
    p = review_sub.add_parser("list", parents=[common], help="the review queue as kept")
    p.add_argument("--status", choices=[s.value for s in ProposalStatus], help="only these")
    p.set_defaults(func=curation.proposals_command)
    p = review_sub.add_parser("approve", parents=[common], help="apply a proposal")
    p.add_argument("id", help="the proposal's id")
    p.add_argument("--actor", help="who approves (default: $CHRONOMEM_ACTOR, $USER)")
    p.set_defaults(func=curation.approve_command)
    p = review_sub.add_parser("reject", parents=[common], help="reject a proposal, with a reason")
    p.add_argument("id", help="the proposal's id")
    p.add_argument("--reason", required=True)
    p.add_argument("--actor", help="who rejects (default: $CHRONOMEM_ACTOR, $USER)")
    p.set_defaults(func=curation.reject_command)

    p = sub.add_parser(
        "access-log", parents=[common], help="the space's access log: on, off, or show reads"
    )
    p.add_argument("action", choices=["on", "off", "show"])
    p.add_argument("id", nargs="?", help="show: only this record's reads")
    p.add_argument("--limit", type=int, default=100, help="show: at most this many (default 100)")
    p.set_defaults(func=curation.access_log_command)

    p = sub.add_parser(
        "mcp", parents=[common], help="an MCP server over stdio: one agent edits its own memory"
    )
    p.add_argument("--agent", required=True, help="the agent every tool call acts as")
    p.set_defaults(func=service.mcp_command)

    core = sub.add_parser("core", help="an agent's core memory blocks (persona, human, task)")
    core_sub = core.add_subparsers(dest="core_command", required=True, metavar="ACTION")
    p = core_sub.add_parser("show", parents=[common], help="the agent's blocks (optionally as of)")
    p.add_argument("--agent", required=True)
    p.add_argument("--label", help="only this block")
    p.add_argument("--as-of", type=instant, help="the blocks as they stood then")
    p.set_defaults(func=curation.core_show_command)
    lifecycle_core = argparse.ArgumentParser(add_help=False, parents=[common])
    lifecycle_core.add_argument("--agent", required=True)
    lifecycle_core.add_argument("--actor", help="who edits (default: $CHRONOMEM_ACTOR, $USER)")
    lifecycle_core.add_argument("--limit", type=int, default=2000, help="characters (2000)")
    p = core_sub.add_parser("append", parents=[lifecycle_core], help="append text to a block")
    p.add_argument("label")
    p.add_argument("text")
    p.set_defaults(func=curation.core_append_command)
    p = core_sub.add_parser(
        "replace", parents=[lifecycle_core], help="replace text in a block (a supersession)"
    )
    p.add_argument("label")
    p.add_argument("--old", required=True, help="the text to replace (every occurrence)")
    p.add_argument("--new", required=True, help="its replacement ('' deletes it)")
    p.set_defaults(func=curation.core_replace_command)

    p = sub.add_parser(
        "serve", parents=[common], help="run the HTTP service (every verb, per-space API keys)"
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8420, help="port (default 8420)")
    p.add_argument("--preset", choices=sorted(PRESETS), default="default", help="default preset")
    p.add_argument("--llm-url", help="OpenAI-compatible API root for reflection")
    p.add_argument("--model", help="the LLM's model name for reflection")
    p.add_argument(
        "--max-body-mb", type=float, default=16.0, help="largest request body (default 16 MB)"
    )
    p.add_argument(
        "--readers",
        type=int,
        default=1,
        help="reads of one space that run at once, each on its own handle with its own copy of "
        "the space's index (default 1; see docs/http.md, Concurrency, for when more help)",
    )
    p.add_argument(
        "--webhook-lease",
        type=float,
        default=30.0,
        help="seconds a process delivering a webhook keeps it from the other processes; after a "
        "crash, its deliveries resume when the lease runs out (default 30)",
    )
    p.add_argument(
        "--log-format",
        choices=["text", "json"],
        default="text",
        help="json: one JSON object per line, a line per request with its id (default text)",
    )
    p.set_defaults(func=service.serve_command)

    keys = sub.add_parser("keys", help="API keys of the HTTP service (stored hashed in the store)")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True, metavar="ACTION")
    p = keys_sub.add_parser("create", parents=[common], help="create a key; prints it once")
    p.add_argument("--scope", required=True, choices=["read", "write", "admin"])
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--all-spaces", action="store_true", help="an admin key for every space (else --space)"
    )
    p.add_argument("--label", help="what the key is for")
    p.set_defaults(func=service.keys_create_command)
    p = keys_sub.add_parser("list", parents=[common], help="every key (never the secrets)")
    p.set_defaults(func=service.keys_list_command)
    p = keys_sub.add_parser("revoke", parents=[common], help="revoke a key by its id")
    p.add_argument("id", help="the key's id (the part after cmk_)")
    p.set_defaults(func=service.keys_revoke_command)

    p = sub.add_parser(
        "completion",
        help='print a shell completion script: eval "$(chronomem completion bash)"',
    )
    p.add_argument("shell", choices=["bash", "zsh"])
    p.set_defaults(func=None, db=None, space=None, no_embedder=True, json=False, now=None)
    p = sub.add_parser("demo", parents=[common], help="the end-to-end demo on a real SQLite file")
    p.add_argument("--fresh", action="store_true", help="delete the demo store first")
    p.set_defaults(func=commands.demo_command)
    return parser


def _split_supersede(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``supersede ID [ID ...] TEXT``: the last positional is the text, unless the deprecated
    ``--text`` gave it."""
    if args.text is None:
        if len(args.ids) < 2:
            parser.error("supersede: give the id(s) replaced, then the new text")
        args.ids, args.text = args.ids[:-1], args.ids[-1]
    else:
        print("chronomem: note: --text is deprecated; give the text last", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "supersede":
        _split_supersede(parser, args)
    if args.command in {"serve", "mcp", "demo"} and args.json:
        parser.error(f"{args.command} has no JSON output")
    if args.command == "completion":
        from chronomem.cli.completion import completion_script

        print(completion_script(parser, args.shell), end="")
        return 0
    try:
        cfg = settings(args, os.environ)
        return int(args.func(args, cfg))
    except ChronomemError as exc:
        message = str(exc).strip().replace("\n", " ")
        print(f"chronomem: error: {message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
