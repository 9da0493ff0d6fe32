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

from chronomem.engine import Memory
from chronomem.errors import ChronomemError, NotFoundError
from chronomem.model.core import CoreBlock
from chronomem.model.record import Hit, Record, WriteResult

__all__ = ["INSTRUCTIONS", "Binding", "build_server", "client_name", "stdio_binding"]

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
Id = Annotated[str, Field(description="a record id, as returned by remember or recall")]
Reason = Annotated[str, Field(description="why, in a sentence: kept in the audit log")]


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


def _hit(hit: Hit) -> dict[str, Any]:
    r = hit.record
    out: dict[str, Any] = {
        "id": r.id, "text": r.text, "kind": r.kind.value, "score": round(hit.score, 4),
        "importance": r.importance, "occurred_at": r.occurred_at.isoformat(),
        "status": r.status.value,
    }  # fmt: skip
    if r.superseded_by:
        out["superseded_by"] = r.superseded_by
    if r.feedback_score < 0:
        out["pushed_down"] = True
    if hit.breakdown is not None:
        out["why"] = hit.breakdown.to_dict()
    return out


def _record(r: Record) -> dict[str, Any]:
    out = r.to_dict()
    out.pop("space", None)
    return out


def _written(result: WriteResult) -> dict[str, Any]:
    return {k: v for k, v in vars_of(result).items() if v is not None}


def vars_of(value: Any) -> dict[str, Any]:
    return {name: getattr(value, name) for name in value.__dataclass_fields__}


def _block(block: CoreBlock) -> dict[str, Any]:
    return block.to_dict()


def _own(b: Binding, record_id: str) -> Record:
    """The record, if it is the bound agent's; another agent's is not found (no leak)."""
    record = b.memory.get(record_id)
    if record.agent != b.agent:
        raise NotFoundError(f"no record {record_id!r} in your memory", record_id=record_id)
    return record


def _own_proposal(b: Binding, proposal_id: str) -> None:
    if not any(p.id == proposal_id and p.agent == b.agent for p in b.memory.proposals("open")):
        raise NotFoundError(f"no open review proposal {proposal_id!r} of yours")


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
        text: Annotated[str, Field(description="the memory, one statement")],
        kind: KindName = "observation",
        importance: Annotated[
            float | None, Field(ge=1, le=10, description="1 mundane .. 10 life-changing")
        ] = None,
        occurred_at: Annotated[
            AwareDatetime | None, Field(description="when it happened (default now)")
        ] = None,
        domain: Annotated[str | None, Field(description="a topic, e.g. 'deploys'")] = None,
        tags: list[str] | None = None,
        valid_until: Annotated[
            AwareDatetime | None, Field(description="when it stops applying")
        ] = None,
    ) -> dict[str, Any]:
        b = bind(ctx)
        result = b.memory.remember(
            text, agent=b.agent, kind=kind, importance=importance, occurred_at=occurred_at,
            domain=domain, tags=tags or (), valid_until=valid_until, actor=b.actor,
        )  # fmt: skip
        return _written(result)

    @tool(
        "The memories that best answer a question, best first, with ids, dates and status. "
        "Superseded records are left out unless include_history; `as_of` asks what you knew then."
    )
    def recall(
        ctx: Context,
        query: str,
        k: Annotated[int, Field(ge=1, le=50)] = 8,
        as_of: AwareDatetime | None = None,
        include_history: bool = False,
        kinds: list[KindName] | None = None,
        explain: Annotated[bool, Field(description="include why each ranked where it did")] = False,
    ) -> list[dict[str, Any]]:
        b = bind(ctx)
        hits = b.memory.recall(
            query, agent=b.agent, k=k, as_of=as_of, include_history=include_history,
            kinds=kinds, explain=explain,
        )  # fmt: skip
        return [_hit(h) for h in hits]

    @tool(
        "Correct a memory: store the new text as the replacement of the record you name. The old "
        "record is closed (kept in history, marked superseded) and the new one applies from now. "
        "Always name the record you replace; never leave both open."
    )
    def correct(ctx: Context, record_id: Id, text: str, reason: Reason) -> dict[str, Any]:
        b = bind(ctx)
        _own(b, record_id)
        return _written(b.memory.supersede(record_id, text, reason=reason, actor=b.actor))

    @tool("Close a record that stopped being true with nothing replacing it. Kept in history.")
    def close(ctx: Context, record_id: Id, reason: Reason) -> dict[str, Any]:
        b = bind(ctx)
        _own(b, record_id)
        return _record(b.memory.close_record(record_id, reason, actor=b.actor))

    @tool("Confirm a record is still true: it stops losing rank to staleness.")
    def verify(ctx: Context, record_id: Id, reason: str | None = None) -> dict[str, Any]:
        b = bind(ctx)
        _own(b, record_id)
        return _record(b.memory.verify(record_id, actor=b.actor, reason=reason))

    @tool(
        "Rate a memory: 'harmful' when it misled you (it ranks lower from then on), 'helpful' "
        "when it helped. Always give the reason."
    )
    def feedback(
        ctx: Context, record_id: Id, signal: Literal["helpful", "harmful"], reason: Reason
    ) -> dict[str, Any]:
        b = bind(ctx)
        _own(b, record_id)
        return _record(b.memory.feedback(record_id, signal, reason, actor=b.actor))

    @tool(
        "Delete a memory for good. Only for noise nothing depends on, or personal data you were "
        "asked to erase (purge=true removes its bytes from disk). A record cited by others or part "
        "of a correction chain cannot be forgotten: close it instead."
    )
    def forget(ctx: Context, record_id: Id, reason: Reason, purge: bool = False) -> dict[str, Any]:
        b = bind(ctx)
        _own(b, record_id)
        return vars_of(b.memory.forget(record_id, reason, purge=purge, actor=b.actor))

    @tool("Every version of a memory, oldest first: what it said before each correction.")
    def history(ctx: Context, record_id: Id) -> list[dict[str, Any]]:
        b = bind(ctx)
        _own(b, record_id)
        return [_record(r) for r in b.memory.history(record_id)]

    @tool("One record with every field (status, validity, who superseded it, ratings).")
    def get(ctx: Context, record_id: Id) -> dict[str, Any]:
        return _record(_own(bind(ctx), record_id))

    @tool(
        "A prompt-ready block for a question: your core memory blocks, the best evidence with "
        "dates and markers, and with a crisis event id the causal chain that led to it."
    )
    def context(
        ctx: Context,
        query: str | None = None,
        crisis: Annotated[str | None, Field(description="an event id")] = None,
        k: Annotated[int, Field(ge=1, le=50)] = 12,
        budget_tokens: Annotated[int | None, Field(ge=50)] = None,
    ) -> str:
        b = bind(ctx)
        block = b.memory.context(
            query, agent=b.agent, crisis=crisis, k=k, budget_tokens=budget_tokens
        )
        core = _core_text(b.memory.core_blocks(b.agent))
        return f"{core}{block.text}"

    @tool(
        "Your core memory blocks (label → text), always part of your context; with as_of, as "
        "they stood then."
    )
    def core_memory_read(
        ctx: Context, label: str | None = None, as_of: AwareDatetime | None = None
    ) -> list[dict[str, Any]]:
        b = bind(ctx)
        blocks = b.memory.core_blocks(b.agent, as_of=as_of)
        return [_block(x) for x in blocks if label is None or x.label == label]

    @tool(
        "Append to one of your core memory blocks (e.g. 'human': what you learn about the user). "
        "Creates the block if missing. Blocks are size-limited: replace stale text to make room."
    )
    def core_memory_append(
        ctx: Context,
        label: Annotated[str, Field(description="persona, human, task, ...")],
        content: str,
    ) -> dict[str, Any]:
        b = bind(ctx)
        return _block(b.memory.core_append(b.agent, label, content, actor=b.actor))

    @tool(
        "Replace text in one of your core memory blocks (every occurrence of old_content; an "
        "empty new_content deletes it). Versioned: the previous text stays in history."
    )
    def core_memory_replace(
        ctx: Context, label: str, old_content: str, new_content: str
    ) -> dict[str, Any]:
        b = bind(ctx)
        block = b.memory.core_replace(b.agent, label, old_content, new_content, actor=b.actor)
        return _block(block)

    @tool(
        "Review your memory: proposals to verify stale facts, forget unused noise, link versions "
        "or merge near-duplicates, close what misled you. Nothing changes until you approve."
    )
    def review(ctx: Context) -> list[dict[str, Any]]:
        b = bind(ctx)
        return [p.to_dict() for p in b.memory.review(b.agent)]

    @tool("Apply one of your review proposals (by its id); it goes through the normal write path.")
    def approve(ctx: Context, proposal_id: str) -> dict[str, Any]:
        b = bind(ctx)
        _own_proposal(b, proposal_id)
        return b.memory.approve(proposal_id, actor=b.actor).to_dict()

    @tool("Reject one of your review proposals, with the reason: it stays away until it changes.")
    def reject(ctx: Context, proposal_id: str, reason: Reason) -> dict[str, Any]:
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


def _core_text(blocks: list[CoreBlock]) -> str:
    if not blocks:
        return ""
    parts = [f"<{b.label}>\n{b.text}\n</{b.label}>" for b in blocks]
    return "Core memory:\n" + "\n".join(parts) + "\n\n"


def stdio_binding(memory: Memory, agent: str) -> Callable[[Context], Binding]:
    """The binding of ``chronomem mcp``: one handle and one agent for the whole process."""

    def bind(ctx: Context) -> Binding:
        return Binding(memory=memory, agent=agent, actor=f"mcp:{client_name(ctx)}:{agent}")

    return bind
