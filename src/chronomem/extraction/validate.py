"""Validation of an extraction answer (issue 29): parsing a proposal is not trusting it. The
answer's shape is checked as a whole (a wrong shape is sent back to the model once, with the
reasons); each proposal then on its own — its operation, its kind, its text, the turns it
cites (they exist and belong to this batch) and the memory it replaces or closes — and one that
fails is reported with its reasons, never stored."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chronomem.extraction.prompts import KINDS, OPERATIONS
from chronomem.llm.answers import AnswerError
from chronomem.text import normalise_text

__all__ = [
    "MAX_MEMORY_CHARS",
    "Answer",
    "ExtractedCause",
    "ExtractedEvent",
    "Extracted",
    "Rejected",
    "validate_extraction",
]

#: The longest statement a proposal may make (a memory is one statement, not a transcript).
MAX_MEMORY_CHARS = 1_000
_SENSITIVE = ("none", "personal", "secret")


@dataclass(frozen=True, slots=True)
class Extracted:
    """One valid proposal: ``turns`` index the batch's turns, ``memory`` the memories shown
    (both 0-based); ``label`` is the answer's kind (``preference``), ``kind`` the record's."""

    op: str
    kind: str
    label: str
    text: str | None
    turns: tuple[int, ...]
    memory: int | None
    sensitive: str


@dataclass(frozen=True, slots=True)
class Rejected:
    """A proposal that is not stored, as the model gave it, and why."""

    proposal: Any
    reasons: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ExtractedEvent:
    """An event the turns tell of: its text and the turns (0-based) it comes from."""

    text: str
    turns: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ExtractedCause:
    """``cause`` led to ``effect`` (0-based indices into the answer's valid events), with the
    model's stated confidence in [0, 1]."""

    cause: int
    effect: int
    confidence: float


@dataclass(frozen=True, slots=True)
class Answer:
    """What a valid answer proposes, and what of it was refused."""

    memories: list[Extracted]
    events: list[ExtractedEvent]
    causes: list[ExtractedCause]
    rejected: list[Rejected]


def validate_extraction(answer: Any, *, turns: int, memories: int, limit: int) -> Answer:
    """The valid proposals of ``answer`` and the rejected ones. Raises :class:`AnswerError`
    when the answer as a whole has the wrong shape (not ``{"memories": [...]}``, or more than
    ``limit`` memories or events)."""
    if not isinstance(answer, Mapping) or not isinstance(answer.get("memories"), list):
        raise AnswerError(['the answer must be an object {"memories": [...]}'])
    items = answer["memories"]
    if len(items) > limit:
        raise AnswerError([f"{len(items)} memories were given; at most {limit} were asked for"])
    for key in ("events", "causes"):
        if not isinstance(answer.get(key, []), list):
            raise AnswerError([f'"{key}" must be a list'])
    if len(answer.get("events", [])) > limit:
        raise AnswerError([f"{len(answer['events'])} events were given; at most {limit}"])
    valid, rejected = _memories(items, turns, memories)
    events: list[ExtractedEvent] = []
    numbered: dict[int, int] = {}
    for n, item in enumerate(answer.get("events", []), 1):
        problems: list[str] = []
        text = item.get("text") if isinstance(item, Mapping) else None
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_MEMORY_CHARS:
            problems.append("an event needs a text of one statement")
        cited = _turns(item.get("turns") if isinstance(item, Mapping) else None, turns, problems)
        if problems:
            rejected.append(Rejected(item, tuple(problems)))
            continue
        numbered[n] = len(events)
        events.append(ExtractedEvent(text.strip(), cited))  # type: ignore[union-attr]
    causes = []
    for item in answer.get("causes", []):
        found, problems = _cause(item, numbered)
        if found is None:
            rejected.append(Rejected(item, tuple(problems)))
        else:
            causes.append(found)
    return Answer(valid, events, causes, rejected)


def _cause(item: Any, numbered: Mapping[int, int]) -> tuple[ExtractedCause | None, list[str]]:
    if not isinstance(item, Mapping):
        return None, ["a cause must be an object"]
    problems = []
    ends = []
    for end in ("cause", "effect"):
        n = item.get(end)
        if isinstance(n, bool) or not isinstance(n, int) or n not in numbered:
            problems.append(f"{end} {n!r} is no valid event of this answer")
        else:
            ends.append(numbered[n])
    confidence = item.get("confidence")
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, int | float)
        or not 0 < confidence <= 1
    ):
        problems.append(f"confidence must be a number in (0, 1]; got {confidence!r}")
    if len(ends) == 2 and ends[0] == ends[1]:
        problems.append("an event cannot cause itself")
    if problems:
        return None, problems
    assert isinstance(confidence, int | float)
    return ExtractedCause(ends[0], ends[1], float(confidence)), []


def _memories(
    items: list[Any], turns: int, memories: int
) -> tuple[list[Extracted], list[Rejected]]:
    valid, rejected = [], []
    seen: set[str] = set()
    for item in items:
        problems: list[str] = []
        found = _proposal(item, turns, memories, problems)
        if found is not None and found.text is not None:
            key = normalise_text(found.text)
            if key in seen:
                problems.append("it repeats an earlier proposal of this answer")
            seen.add(key)
        if problems or found is None:
            rejected.append(Rejected(item, tuple(problems)))
        elif found.op != "NOTHING":
            valid.append(found)
    return valid, rejected


def _proposal(item: Any, turns: int, memories: int, problems: list[str]) -> Extracted | None:
    if not isinstance(item, Mapping):
        problems.append("a proposal must be an object")
        return None
    op = item.get("op")
    if op not in OPERATIONS:
        problems.append(f"op must be one of {', '.join(OPERATIONS)}; got {op!r}")
        return None
    cited = _turns(item.get("turns"), turns, problems)
    label = item.get("kind", "fact")
    if label not in KINDS:
        problems.append(f"kind must be one of {', '.join(KINDS)}; got {label!r}")
    text = item.get("text")
    if op in ("ADD", "SUPERSEDE"):
        if not isinstance(text, str) or not text.strip():
            problems.append(f"{op} needs the memory's text")
        elif len(text) > MAX_MEMORY_CHARS:
            problems.append(f"the text has {len(text)} characters; a memory is one statement")
    memory = item.get("memory")
    target = None
    if op in ("SUPERSEDE", "CLOSE"):
        if isinstance(memory, bool) or not isinstance(memory, int) or not 1 <= memory <= memories:
            shown = f"memories 1..{memories}" if memories else "no memories"
            problems.append(f"{op} names memory {memory!r}, but {shown} were shown")
        else:
            target = memory - 1
    sensitive = item.get("sensitive", "none")
    if sensitive is None:
        sensitive = "none"
    if sensitive not in _SENSITIVE:
        problems.append(f"sensitive must be one of {', '.join(_SENSITIVE)}; got {sensitive!r}")
    if problems:
        return None
    return Extracted(
        op=op, kind=KINDS[label], label=label,
        text=text.strip() if isinstance(text, str) and op != "CLOSE" else None,
        turns=cited, memory=target, sensitive=sensitive,
    )  # fmt: skip


def _turns(value: Any, count: int, problems: list[str]) -> tuple[int, ...]:
    """The cited turns, 0-based: at least one, each a turn of this batch, none twice."""
    if not isinstance(value, list) or not value:
        problems.append("it cites no turn (turns: the numbers of the turns it comes from)")
        return ()
    out: list[int] = []
    for n in value:
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= count:
            problems.append(f"it cites turn {n!r}, but this batch has turns 1..{count}")
        elif n - 1 in out:
            problems.append(f"it cites turn {n} twice")
        else:
            out.append(n - 1)
    return tuple(out)
