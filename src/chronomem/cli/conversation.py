"""What the agent makes of its conversations, from the command line: a conversation's messages
stored as its turns, the memories an LLM extracts from them, and reflection. Each command calls
one verb and renders its result; it returns the exit code."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chronomem.cli.arguments import instant, missing_vectors_flag
from chronomem.cli.commands import print_result
from chronomem.cli.render import print_json
from chronomem.cli.settings import Settings, engine_class, llm_client, open_memory
from chronomem.config import ReflectionConfig
from chronomem.errors import InvalidInputError
from chronomem.extraction.policy import ExtractionPolicy

__all__ = ["add_commands"]


def add_commands(
    sub: Any, common: argparse.ArgumentParser, lifecycle: argparse.ArgumentParser,
    names: Sequence[str],
) -> None:  # fmt: skip
    """Add the parsers of ``names`` (``remember-messages``, ``extract``, ``reflect``)."""
    if "remember-messages" in names:
        p = sub.add_parser(
            "remember-messages", parents=[lifecycle],
            help="store a conversation: each user or assistant turn of OpenAI or LangChain "
            "messages",
        )  # fmt: skip
        p.add_argument("path", help="a JSON array or JSONL of messages (- for standard input)")
        p.add_argument("--agent", default="default", help="whose memory (default: 'default')")
        p.add_argument("--session", help="the conversation, thread or run it belongs to")
        missing_vectors_flag(p)
        p.set_defaults(func=remember_messages_command)
    if "extract" in names:
        p = sub.add_parser(
            "extract", parents=[common],
            help="memories an LLM proposes from new conversation turns, through the lifecycle",
        )  # fmt: skip
        p.add_argument("--agent", default="default", help="whose turns (default: 'default')")
        p.add_argument("--session", help="only this conversation's turns")
        p.add_argument("--llm-url", help="OpenAI-compatible API root (default: $CHRONOMEM_LLM_URL)")
        p.add_argument("--model", help="model name (default: $CHRONOMEM_LLM_MODEL)")
        p.add_argument("--review", action="store_true", help="queue every proposal for review")
        p.add_argument(
            "--trust", action="append", metavar="SPEAKER",
            help="a speaker whose instructions need no review (repeatable; default: user)",
        )  # fmt: skip
        p.set_defaults(func=extract_command)
    if "reflect" in names:
        p = sub.add_parser("reflect", parents=[common], help="reflect with an LLM (cited insights)")
        p.add_argument("--agent", required=True)
        p.add_argument("--llm-url", help="OpenAI-compatible API root (default: $CHRONOMEM_LLM_URL)")
        p.add_argument("--model", help="model name (default: $CHRONOMEM_LLM_MODEL)")
        p.add_argument("--questions", type=int, default=3, help="focal questions (default 3)")
        p.add_argument("--insights", type=int, default=5, help="insights per question (default 5)")
        p.add_argument(
            "--if-due", action="store_true", help="only if the importance trigger is due"
        )
        p.add_argument("--as-of", type=instant, help="reflect on the records up to this instant")
        p.add_argument(
            "--touch", action="store_const", const=True, default=None,
            help="evidence retrieval touches what it reads (default: read-only)",
        )  # fmt: skip
        p.add_argument(
            "--importance", action="store_true",
            help="show the agent's accumulated importance against the trigger, and reflect not",
        )  # fmt: skip
        p.set_defaults(func=reflect_command)


def remember_messages_command(args: argparse.Namespace, cfg: Settings) -> int:
    messages = _messages(args.path)
    with open_memory(
        cfg, create=True, allow_missing_vectors=args.allow_missing_vectors, writes=True
    ) as mem:
        results = mem.remember_messages(
            messages, agent=args.agent, session=args.session, progress=sys.stderr.isatty(),
            actor=cfg.actor,
        )  # fmt: skip
    stored = sum(r.stored for r in results)
    again = sum(r.duplicate_of is not None for r in results)
    said = (
        f"{stored} turn(s) stored, {again} already stored, {len(results) - stored - again} "
        "message(s) not turns of the conversation"
    )
    print_result(args, results, lambda: print(said))
    return 0


def _messages(path: str) -> list[Any]:
    """The messages of a JSON array or JSONL file (``-``: standard input)."""
    text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    try:
        stripped = text.lstrip()
        if stripped.startswith("["):
            found = json.loads(stripped)
        else:
            found = [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            f"{path}: not a JSON array or JSONL of messages (line {exc.lineno}: {exc.msg})",
            field="messages",
        ) from None
    if not isinstance(found, list):
        raise InvalidInputError(f"{path}: give a JSON array of messages", field="messages")
    return found


def extract_command(args: argparse.Namespace, cfg: Settings) -> int:
    policy = ExtractionPolicy(
        mode="review" if args.review else "apply",
        trusted_speakers=frozenset(args.trust or ("user",)),
    )
    with open_memory(cfg, writes=True) as mem:
        if isinstance(mem, engine_class()):
            report = mem.extract(
                args.agent, session=args.session, llm=llm_client(cfg, "extraction"), policy=policy
            )
        else:  # through the service: its LLM
            report = mem.extract(args.agent, session=args.session, policy=policy)
    said = (
        f"{report.turns} new turn(s): {sum(a.stored for a in report.applied)} memory change(s) "
        f"applied, {len(report.queued)} queued for review, {len(report.rejected)} rejected "
        f"({report.calls} model call(s))"
    )
    print_result(args, report, lambda: print(said))
    return 0


def reflect_command(args: argparse.Namespace, cfg: Settings) -> int:
    config = ReflectionConfig(questions=args.questions, insights=args.insights)
    with open_memory(cfg, writes=args.importance is False) as mem:
        if args.importance:
            total = mem.accumulated_importance(args.agent)
            state = {"agent": args.agent, "accumulated": total, "threshold": config.threshold}
            said = f"{args.agent} has accumulated {total:g} of {config.threshold:g}"
            print_result(args, state, lambda: print(said))
            return 0
        if args.if_due and mem.accumulated_importance(args.agent) < config.threshold:
            total = mem.accumulated_importance(args.agent)
            due = {"due": False, "accumulated": total, "threshold": config.threshold}
            said = f"not due: {args.agent} has accumulated {total:g} of {config.threshold:g}"
            print_result(args, due, lambda: print(said))
            return 0
        when = {"as_of": args.as_of, "touch": args.touch}
        if isinstance(mem, engine_class()):
            result = mem.reflect(args.agent, llm=llm_client(cfg), config=config, **when)
        else:  # through the service: its LLM and reflection settings
            result = mem.reflect(args.agent, **when)
    if args.json:
        print_json(result)
        return 0
    print(f"{len(result.records)} reflection(s) for {result.agent} ({result.calls} model calls)")
    for question in result.questions:
        print(f"  Q: {question}")
    for record in result.records:
        print(f"  {record.id}  depth {record.depth}  {record.text}")
        print(f"      evidence: {', '.join(record.evidence)}")
    return 0
