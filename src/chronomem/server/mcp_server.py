"""Agents edit their own memory: an MCP server (the official ``mcp`` SDK, extra ``mcp``) whose
tools are the engine's verbs on the same validated write path (DESIGN §3, §7).

One agent per connection: ``chronomem mcp --agent NAME`` over stdio, or
``/v1/spaces/{space}/agents/{agent}/mcp`` on ``chronomem serve`` (streamable HTTP, the service's
keys). No tool takes an agent: a call reads and writes the bound agent's memories only, and a
record of another agent is "not found". Every lifecycle change is audited as
``mcp:<client>:<agent>`` (over HTTP with ``@key:<id>`` appended). A bad call returns an MCP tool
error carrying the engine's typed message, and nothing is written.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import AwareDatetime, Field

from chronomem.checks import shown
from chronomem.engine import Memory
from chronomem.errors import ChronomemError, NotFoundError
from chronomem.model.record import Record
from chronomem.server.mcp_answers import (
    QUERY_CHARS,
    SHORT_CHARS,
    TEXT_CHARS,
    block_answer,
    budget,
    core_text,
    hit_answer,
    record_answer,
    vars_of,
    written,
)
from chronomem.verbs import OWN, PARAMS

__all__ = ["INSTRUCTIONS", "Binding", "build_server", "client_name", "stdio_binding"]

_MIN_RELEVANCE = next(p for p in OWN["context"] if p.name == "min_relevance")

INSTRUCTIONS = """\
This is your long-term memory (chronomem). It keeps what you observe, are told and decide, with
when it happened, and returns the right memories for a question at a given moment.

- Before answering from memory, `recall`. Hits carry ids, dates and markers such as
  [superseded by …] or [pushed down]: prefer open, current records.
- When something you remember is corrected ("actually the meeting moved to Friday"), call
  `correct` with the id of the record you replace and the new text. Do not `remember` the new
  fact beside the old one: both would compete. The old record stays in history, closed.
- When a record stopped being true and nothing replaces it, `close` it with the reason.
- When a memory misled you, give it `feedback` "harmful" with the reason: it ranks lower from
  then on. `verify` a record you confirmed is still true.
- `forget` only noise that nothing depends on, or personal data the user asks you to erase
  (`purge`). Anything cited or part of a correction chain must be closed instead.
- Your core memory blocks (persona, human, task, ...) are always in your context: keep them
  short and current with `core_memory_append` and `core_memory_replace`. Every edit is versioned.
- Now and then, `review` your memory and `approve` or `reject` what it proposes.
"""

KindName = Literal[
    "observation", "chat", "thought", "reflection", "plan", "fact", "instruction", "decision"
]
_OFFSET = (
    "ISO 8601 with a timezone offset (e.g. 2025-03-04T09:00:00+00:00, or Z for UTC); a date or "
    "time without an offset is refused"
)
Id = Annotated[
    str,
    Field(description="a record id, as returned by remember or recall", max_length=128),
]
ProposalId = Annotated[
    str, Field(description="a review proposal id, as returned by review", max_length=128)
]
Reason = Annotated[
    str, Field(description="why, in a sentence: kept in the audit log", max_length=SHORT_CHARS)
]
Text = Annotated[
    str,
    Field(description="the memory: one statement, in your words", max_length=TEXT_CHARS),
]
Query = Annotated[
    str,
    Field(
        description="what you want to remember, as a question or keywords", max_length=QUERY_CHARS
    ),
]
Label = Annotated[
    str,
    Field(
        description="the block's label: persona, human, task, ... (letters, digits, '_', '.', '-')",
        max_length=64,
    ),
]
Instant = Annotated[AwareDatetime | None, Field(description=_OFFSET)]


@dataclass(frozen=True, slots=True)
class Binding:
    """What a tool call acts on: the space's handle, the agent, and the audit's actor."""

    memory: Memory
    agent: str
    actor: str


def client_name(ctx: Context) -> str:
    """The MCP client's name from its handshake, made safe for an actor string."""
    params = getattr(ctx.session, "client_params", None)
    info = getattr(params, "client_info", None) or getattr(params, "clientInfo", None)
    name = str(getattr(info, "name", "") or "client")
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name)[:64] or "client"


def _own(b: Binding, record_id: str) -> Record:
    """The record, if it is the bound agent's; another agent's is not found (no leak)."""
    record = b.memory.get(record_id)
    if record.agent != b.agent:
        raise NotFoundError(f"no record {shown(record_id)} in your memory", record_id=record_id)
    return record


def _own_proposal(b: Binding, proposal_id: str) -> None:
    if not any(p.id == proposal_id and p.agent == b.agent for p in b.memory.proposals("open")):
        raise NotFoundError(f"no open review proposal {shown(proposal_id)} of yours")


def _as_tool_error(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The engine's typed errors as MCP tool errors the model can read and act on."""
    import functools

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ChronomemError as exc:
            field = getattr(exc, "field", None)
            where = f" (field: {field})" if field else ""
            raise ToolError(f"{type(exc).__name__}{where}: {exc}") from exc

    return call


def build_server(bind: Callable[[Context], Binding]) -> MCPServer:
    """The MCP server; ``bind`` says, per call, which handle, agent and actor it acts as."""
    server = MCPServer(name="chronomem", instructions=INSTRUCTIONS)

    def tool(description: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            server.tool(name=fn.__name__.removesuffix("_"), description=description)(
                _as_tool_error(fn)
            )
            return fn

        return register

    @tool(
        "Store one memory of yours: something observed, said, decided, a fact or an instruction. "
        "Facts and instructions that nearly repeat an open one are not stored (the answer says "
        "which record they duplicate). To change something you already remember, use `correct`."
    )
    def remember(
        ctx: Context,
        text: Text,
        kind: Annotated[KindName, Field(description="what sort of memory it is")] = "observation",
        importance: Annotated[
            float | None, Field(ge=1, le=10, description="1 mundane .. 10 life-changing")
        ] = None,
        occurred_at: Annotated[
            AwareDatetime | None, Field(description=f"when it happened (default now); {_OFFSET}")
        ] = None,
        domain: Annotated[
            str | None, Field(description="a topic, e.g. 'deploys'", max_length=SHORT_CHARS)
        ] = None,
        tags: Annotated[
            list[Annotated[str, Field(max_length=100)]] | None,
            Field(description="short labels to find it by", max_length=20),
        ] = None,
        valid_until: Annotated[
            AwareDatetime | None, Field(description=f"when it stops applying; {_OFFSET}")
        ] = None,
        session: Annotated[
            str | None,
            Field(description="the conversation or run it belongs to", max_length=100),
        ] = None,
        ttl: Annotated[
            float | None,
            Field(gt=0, description="keep it this many seconds (e.g. 3600), then it is closed"),
        ] = None,
    ) -> dict[str, Any]:  # fmt: skip
        b = bind(ctx)
        result = b.memory.remember(
            text, agent=b.agent, kind=kind, importance=importance, occurred_at=occurred_at,
            domain=domain, tags=tags or (), valid_until=valid_until, session=session, ttl=ttl,
            actor=b.actor,
        )  # fmt: skip
        return written(result)

    @tool(
        "The memories that best answer a question, best first, with ids, dates and status. "
        "Superseded records are left out unless include_history; `as_of` asks what you knew then."
    )
    def recall(
        ctx: Context,
        query: Query,
        k: Annotated[int, Field(ge=1, le=50, description="how many memories, at most")] = 8,
        as_of: Annotated[
            AwareDatetime | None,
            Field(description=f"answer as you knew things then (default now); {_OFFSET}"),
        ] = None,
        include_history: Annotated[
            bool, Field(description="also closed and superseded records")
        ] = False,
        kinds: Annotated[
            list[KindName] | None, Field(description="only these kinds of memory")
        ] = None,
        explain: Annotated[bool, Field(description="include why each ranked where it did")] = False,
        filter: Annotated[dict[str, Any] | None, Field(description=PARAMS["filter"].doc)] = None,
        session: Annotated[
            str | None, Field(description=PARAMS["session"].doc, max_length=100)
        ] = None,
        refresh_ttl: Annotated[bool, Field(description=PARAMS["refresh_ttl"].doc)] = False,
    ) -> list[dict[str, Any]]:
        b = bind(ctx)
        hits = b.memory.recall(
            query, agent=b.agent, k=k, as_of=as_of, include_history=include_history,
            kinds=kinds, explain=explain, filter=filter, session=session, refresh_ttl=refresh_ttl,
        )  # fmt: skip
        limits = budget([h.record.text for h in hits])
        return [hit_answer(h, limit) for h, limit in zip(hits, limits, strict=True)]

    @tool(
        "Correct a memory: store the new text as the replacement of the record you name. The old "
        "record is closed (kept in history, marked superseded) and the new one applies from now. "
        "Always name the record you replace; never leave both open."
    )
    def correct(
        ctx: Context,
        record_id: Id,
        text: Annotated[
            str, Field(description="the corrected memory, whole", max_length=TEXT_CHARS)
        ],
        reason: Reason,
    ) -> dict[str, Any]:
        b = bind(ctx)
        _own(b, record_id)
        return written(b.memory.supersede(record_id, text, reason=reason, actor=b.actor))

    @tool("Close a record that stopped being true with nothing replacing it. Kept in history.")
    def close(ctx: Context, record_id: Id, reason: Reason) -> dict[str, Any]:
        b = bind(ctx)
        _own(b, record_id)
        return record_answer(b.memory.close_record(record_id, reason, actor=b.actor))

    @tool("Confirm a record is still true: it stops losing rank to staleness.")
    def verify(
        ctx: Context,
        record_id: Id,
        reason: Annotated[
            str | None, Field(description="how you know, optional", max_length=SHORT_CHARS)
        ] = None,
    ) -> dict[str, Any]:
        b = bind(ctx)
        _own(b, record_id)
        return record_answer(b.memory.verify(record_id, actor=b.actor, reason=reason))

    @tool(
        "Rate a memory: 'harmful' when it misled you (it ranks lower from then on), 'helpful' "
        "when it helped. Always give the reason."
    )
    def feedback(
        ctx: Context,
        record_id: Id,
        signal: Annotated[
            Literal["helpful", "harmful"], Field(description="did it help or mislead you")
        ],
        reason: Reason,
    ) -> dict[str, Any]:
        b = bind(ctx)
        _own(b, record_id)
        return record_answer(b.memory.feedback(record_id, signal, reason, actor=b.actor))

    @tool(
        "Delete a memory for good. Only for noise nothing depends on, or personal data you were "
        "asked to erase (purge=true removes its bytes from disk). A record cited by others or part "
        "of a correction chain cannot be forgotten: close it instead."
    )
    def forget(
        ctx: Context,
        record_id: Id,
        reason: Reason,
        purge: Annotated[
            bool, Field(description="also remove its bytes from disk (personal data, secrets)")
        ] = False,
    ) -> dict[str, Any]:
        b = bind(ctx)
        _own(b, record_id)
        return vars_of(b.memory.forget(record_id, reason, purge=purge, actor=b.actor))

    @tool("Every version of a memory, oldest first: what it said before each correction.")
    def history(ctx: Context, record_id: Id) -> list[dict[str, Any]]:
        b = bind(ctx)
        _own(b, record_id)
        versions = b.memory.history(record_id)
        limits = budget([r.text for r in versions])
        return [record_answer(r, limit) for r, limit in zip(versions, limits, strict=True)]

    @tool("One record with every field (status, validity, who superseded it, ratings).")
    def get(ctx: Context, record_id: Id) -> dict[str, Any]:
        return record_answer(_own(bind(ctx), record_id))

    @tool(
        "A prompt-ready block for a question: your core memory blocks, the best evidence with "
        "dates and markers, and with a crisis event id the causal chain that led to it."
    )
    def context(
        ctx: Context,
        query: Annotated[
            str | None,
            Field(description="the question (default: the crisis's text)", max_length=QUERY_CHARS),
        ] = None,
        crisis: Annotated[
            str | None, Field(description="an event id: show its causes", max_length=128)
        ] = None,
        k: Annotated[int, Field(ge=1, le=50, description="how many memories, at most")] = 12,
        budget_tokens: Annotated[
            int,
            Field(
                ge=50,
                le=8_000,
                description="the most tokens the block may take (about 4 characters each)",
            ),
        ] = 3_000,
        min_relevance: Annotated[
            float, Field(ge=0, le=1, description=_MIN_RELEVANCE.doc)
        ] = _MIN_RELEVANCE.default,
    ) -> str:
        b = bind(ctx)
        block = b.memory.context(
            query, agent=b.agent, crisis=crisis, k=k, budget_tokens=budget_tokens,
            min_relevance=min_relevance,
        )  # fmt: skip
        core = core_text(b.memory.core_blocks(b.agent))
        return f"{core}{block.text}"

    @tool(
        "Your core memory blocks (label → text), always part of your context; with as_of, as "
        "they stood then."
    )
    def core_memory_read(
        ctx: Context,
        label: Annotated[
            str | None, Field(description="one block's label (default: every block)", max_length=64)
        ] = None,
        as_of: Annotated[
            AwareDatetime | None, Field(description=f"as the blocks stood then; {_OFFSET}")
        ] = None,
    ) -> list[dict[str, Any]]:
        b = bind(ctx)
        blocks = b.memory.core_blocks(b.agent, as_of=as_of)
        return [block_answer(x) for x in blocks if label is None or x.label == label]

    @tool(
        "Append to one of your core memory blocks (e.g. 'human': what you learn about the user). "
        "Creates the block if missing. Blocks are size-limited: replace stale text to make room."
    )
    def core_memory_append(
        ctx: Context,
        label: Label,
        content: Annotated[
            str, Field(description="the text to add, on a new line", max_length=TEXT_CHARS)
        ],
    ) -> dict[str, Any]:
        b = bind(ctx)
        return block_answer(b.memory.core_append(b.agent, label, content, actor=b.actor))

    @tool(
        "Replace text in one of your core memory blocks (every occurrence of old_content; an "
        "empty new_content deletes it). Versioned: the previous text stays in history."
    )
    def core_memory_replace(
        ctx: Context,
        label: Label,
        old_content: Annotated[
            str, Field(description="the exact text to replace", max_length=TEXT_CHARS)
        ],
        new_content: Annotated[
            str, Field(description="what replaces it (empty: delete it)", max_length=TEXT_CHARS)
        ],
    ) -> dict[str, Any]:
        b = bind(ctx)
        block = b.memory.core_replace(b.agent, label, old_content, new_content, actor=b.actor)
        return block_answer(block)

    @tool(
        "Review your memory: proposals to verify stale facts, forget unused noise, link versions "
        "or merge near-duplicates, close what misled you. Nothing changes until you approve."
    )
    def review(ctx: Context) -> list[dict[str, Any]]:
        b = bind(ctx)
        return [p.to_dict() for p in b.memory.review(b.agent)]

    @tool("Apply one of your review proposals (by its id); it goes through the normal write path.")
    def approve(ctx: Context, proposal_id: ProposalId) -> dict[str, Any]:
        b = bind(ctx)
        _own_proposal(b, proposal_id)
        return b.memory.approve(proposal_id, actor=b.actor).to_dict()

    @tool("Reject one of your review proposals, with the reason: it stays away until it changes.")
    def reject(ctx: Context, proposal_id: ProposalId, reason: Reason) -> dict[str, Any]:
        b = bind(ctx)
        _own_proposal(b, proposal_id)
        return b.memory.reject(proposal_id, reason, actor=b.actor).to_dict()

    @server.resource(
        "core://{label}",
        name="core memory block",
        description="One of the agent's core memory blocks, current text",
        mime_type="text/plain",
    )
    def core_resource(label: str, ctx: Context) -> str:
        b = bind(ctx)
        found = [x for x in b.memory.core_blocks(b.agent) if x.label == label]
        if not found:
            from mcp.server.mcpserver.exceptions import ResourceNotFoundError

            raise ResourceNotFoundError(f"no core block {label!r}")
        return found[0].text

    return server


def stdio_binding(memory: Memory, agent: str) -> Callable[[Context], Binding]:
    """The binding of ``chronomem mcp``: one handle and one agent for the whole process."""

    def bind(ctx: Context) -> Binding:
        return Binding(memory=memory, agent=agent, actor=f"mcp:{client_name(ctx)}:{agent}")

    return bind
