"""The extraction prompt (issue 29; docs/design/conversations.md, part 2): numbered turns of a
conversation and numbered open memories of the agent, and the JSON answer it asks for. Written
for small local models too: one task, the answer's schema spelled out and offered as structured
output, numbers rather than ids to cite."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["EXTRACTION_SCHEMA", "OPERATIONS", "extraction_prompt"]

#: What a proposal does with the agent's memory.
OPERATIONS = ("ADD", "SUPERSEDE", "CLOSE", "NOTHING")
#: The kinds of memory a proposal may be, and the record kind each is stored as.
KINDS = {
    "fact": "fact", "preference": "fact", "instruction": "instruction", "plan": "plan",
    "event": "observation",
}  # fmt: skip

EXTRACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "memories": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "op": {"type": "string", "enum": list(OPERATIONS)},
                    "kind": {"type": "string", "enum": list(KINDS)},
                    "text": {"type": "string"},
                    "turns": {"type": "array", "items": {"type": "integer"}},
                    "memory": {"type": "integer"},
                    "sensitive": {"type": "string", "enum": ["none", "personal", "secret"]},
                },
                "required": ["op", "turns"],
            },
        },
        "events": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "turns": {"type": "array", "items": {"type": "integer"}},
                },
                "required": ["text", "turns"],
            },
        },
        "causes": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "cause": {"type": "integer"},
                    "effect": {"type": "integer"},
                    "confidence": {"type": "number"},
                },
                "required": ["cause", "effect", "confidence"],
            },
        },
    },
    "required": ["memories"],
}


#: The most characters of one turn or memory shown (a pasted document is not a turn to mine).
SHOWN_CHARS = 2_000


def _line(text: str) -> str:
    """A turn or memory on one line (the numbering stays unambiguous), cut to SHOWN_CHARS."""
    flat = " ".join(text.split())
    return flat if len(flat) <= SHOWN_CHARS else flat[:SHOWN_CHARS] + " …"


def extraction_prompt(
    agent: str,
    turns: Sequence[tuple[str, str, str]],
    memories: Sequence[tuple[str, str]],
    limit: int,
) -> str:
    """``turns``: (speaker, role, text) in order; ``memories``: (kind, text) of the agent's open
    memories a proposal may replace or close."""
    shown_turns = "\n".join(
        f"[{i}] {speaker} ({role}): {_line(text)}"
        for i, (speaker, role, text) in enumerate(turns, 1)
    )
    shown_memories = (
        "\n".join(f"({i}) [{kind}] {_line(text)}" for i, (kind, text) in enumerate(memories, 1))
        or "(none)"
    )
    return f"""You maintain the long-term memory of {agent}.

Conversation turns (new):
{shown_turns}

What {agent} already remembers (open memories):
{shown_memories}

List at most {limit} memories worth keeping from the NEW turns: durable facts about the people,
their preferences, instructions they give, plans, and events. Each is one short, self-contained
statement in the third person ("Ana lives in Lyon"), never a question or a greeting.
For each, choose op:
- "ADD": new, not already remembered;
- "SUPERSEDE": it replaces remembered memory (N), which is no longer true; give "memory": N;
- "CLOSE": remembered memory (N) stopped being true and nothing replaces it; give "memory": N
  (no "text");
- "NOTHING": already remembered as it is.
"turns" lists the numbers of the turns it comes from (at least one). "kind" is one of fact,
preference, instruction, plan, event. "sensitive" is "secret" for passwords, keys and codes,
"personal" for health, finances, addresses and the like, else "none".
Only what the turns say: what the assistant said is not a fact about the user unless the user
confirmed it.
Optionally, "events": things that happened, each {{"text": ..., "turns": [...]}}, and "causes":
one event leading to another, {{"cause": E, "effect": E, "confidence": 0..1}} with E the number
of an event in your "events" list (1 = the first); only causes the turns state or clearly imply.
Answer with JSON only:
{{"memories": [{{"op": "ADD", "kind": "fact", "text": "...", "turns": [1], "sensitive": "none"}}],
 "events": [], "causes": []}}
"""
