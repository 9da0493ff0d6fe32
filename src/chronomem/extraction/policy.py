"""What happens to a valid proposal (issue 29): stored through the normal write path, queued for
review, or refused — the attribution and poisoning rules. Pure: the proposal, the turns it
cites and the memory it would change in, a decision and its reason out."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from chronomem.extraction.validate import Extracted
from chronomem.model.record import Kind, Record

__all__ = ["ASSISTANT_ONLY", "ExtractionPolicy", "Route", "assistant_only", "role_of", "route"]

#: Why a proposal resting on the assistant's turns alone is refused.
ASSISTANT_ONLY = (
    "it rests on the assistant's turns alone: what the assistant said is no fact about the user "
    "unless the user confirmed it"
)

# What a secret looks like in a statement: named as one, or a token shaped like an API key.
_SECRET = re.compile(
    r"\b(password|passcode|passphrase|pin( code)?|security code|door code|access token"
    r"|(api|admin|master|private|secret|access|root|recovery)[ _-]?(key|token|password|code))\b"
    r"|\b(sk|pk|ghp|gho|xox[abp]|AKIA)[-_A-Za-z0-9]{12,}",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtractionPolicy:
    """How extraction treats what it finds.

    Attributes:
        mode: ``apply`` stores what passes the rules below and queues the rest for review;
            ``review`` queues every proposal.
        trusted_speakers: the speakers whose instructions the agent may take as given (default
            ``user``: the turns of a conversation's own user, written without a name). An
            instruction — or a change to one — resting on any other speaker's turn is queued.
        memories_per_call: the most proposals asked of one call.
        turns_per_call: the most turns shown in one call.
        memories_shown: how many of the agent's open memories are shown to match against.
        attempts: calls per batch when the answer has the wrong shape (2: one repair retry).
    """

    mode: Literal["apply", "review"] = "apply"
    trusted_speakers: frozenset[str] = field(default_factory=lambda: frozenset({"user"}))
    memories_per_call: int = 20
    turns_per_call: int = 40
    memories_shown: int = 20
    attempts: int = 2


@dataclass(frozen=True, slots=True)
class Route:
    """``apply``, ``review`` or ``reject``, why (``None`` for a plain apply), and the
    sensitivity the record gets."""

    action: Literal["apply", "review", "reject"]
    reason: str | None
    sensitivity: str = "normal"


def role_of(turn: Record) -> str:
    """Who spoke a turn: ``user`` or ``assistant`` (``writing/messages.py`` keeps it)."""
    return str(turn.metadata.get("role", "user"))


def assistant_only(cited: Sequence[Record]) -> bool:
    """Whether every cited turn is the assistant's."""
    return {role_of(t) for t in cited} == {"assistant"}


def route(
    e: Extracted, cited: Sequence[Record], target: Record | None, policy: ExtractionPolicy
) -> Route:
    """Where ``e`` goes. ``cited`` are its turns, ``target`` the memory it replaces or closes."""
    if assistant_only(cited):
        return Route("reject", ASSISTANT_ONLY)
    secret = e.sensitive == "secret" or (e.text is not None and _SECRET.search(e.text))
    sensitivity = "secret" if secret else ("personal" if e.sensitive == "personal" else "normal")
    touches_instructions = e.kind == Kind.INSTRUCTION.value or (
        target is not None and target.kind is Kind.INSTRUCTION
    )
    if touches_instructions:
        strangers = sorted(
            {t.speaker or "?" for t in cited if role_of(t) != "assistant"} - policy.trusted_speakers
        )
        if strangers:
            who = ", ".join(strangers)
            return Route(
                "review",
                f"an instruction resting on what {who} said: not a trusted speaker "
                f"(trusted: {', '.join(sorted(policy.trusted_speakers))})",
                sensitivity,
            )
    if secret:
        return Route("review", "it holds a secret: a person decides whether to keep it", "secret")
    if policy.mode == "review":
        return Route("review", "the policy reviews every extraction", sensitivity)
    return Route("apply", None, sensitivity)
