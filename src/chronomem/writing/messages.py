"""Conversations in (issue 29; docs/design/conversations.md): chat messages in the shapes agent
frameworks use — OpenAI's (``role``, ``content`` as text or a list of parts, ``name``) and
LangChain's (message objects, or their dicts with ``type``) — as the ``remember`` fields of one
``chat`` record per turn, or the reason a message is no turn of the conversation.

Pure: nothing here touches the store. Each turn's ``source_id`` is the message's own id, else a
hash of what identifies it (its session, its timestamp or its position in the batch, its role,
name and text), so a batch retried whole never lands twice.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from chronomem.checks import parse_instant, shown
from chronomem.errors import InvalidInputError

__all__ = ["SPEAKING_ROLES", "Turn", "message_fields", "turns"]

#: The roles whose messages are turns of the conversation, and how LangChain names them.
SPEAKING_ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant"}
#: Messages that are not the conversation: instructions to the model, tool traffic.
_NOT_SPOKEN = frozenset({"system", "developer", "tool", "function", "chat_tool", "remove"})
_ID_FIELDS = ("id", "message_id")
_TIME_FIELDS = ("timestamp", "created_at", "time", "date")


@dataclass(frozen=True, slots=True)
class Turn:
    """One message read: ``fields`` (``remember``'s keywords) when it is a turn of the
    conversation, else ``skipped`` saying why it is not stored."""

    fields: dict[str, Any] | None
    skipped: str | None = None


def turns(messages: Iterable[Any], *, session: str | None) -> list[Turn]:
    """Each message as a :class:`Turn`, in order. A message of a shape this does not read is an
    :class:`InvalidInputError` naming its position: nothing of the batch is written then."""
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Iterable):
        raise InvalidInputError(
            "messages must be a list of messages (dicts with role and content, or LangChain "
            "messages)",
            field="messages",
        )
    out = []
    for position, message in enumerate(messages):
        try:
            out.append(_turn(_as_mapping(message), position, session))
        except InvalidInputError as exc:
            raise InvalidInputError(f"message {position}: {exc}", field="messages") from None
    return out


def message_fields(message: Any) -> dict[str, Any]:
    """A message as a dict of its fields (what an HTTP client sends): a dict as it is, a
    LangChain message object by its attributes."""
    return dict(_as_mapping(message))


def _as_mapping(message: Any) -> Mapping[str, Any]:
    """A message's fields: a dict as it is; a LangChain message object by its attributes."""
    if isinstance(message, Mapping):
        return message
    if hasattr(message, "type") and hasattr(message, "content"):
        extra = getattr(message, "additional_kwargs", None) or {}
        return {
            "type": message.type, "content": message.content,
            "name": getattr(message, "name", None), "id": getattr(message, "id", None),
            **{k: extra[k] for k in _TIME_FIELDS if k in extra},
        }  # fmt: skip
    raise InvalidInputError(
        f"not a message: {shown(message)} (a dict with role and content, or a LangChain message)"
    )


def _turn(m: Mapping[str, Any], position: int, session: str | None) -> Turn:
    role = m.get("role", m.get("type"))
    if not isinstance(role, str) or not role:
        raise InvalidInputError(f"has no role (or LangChain type): {shown(dict(m))}")
    role = role.lower()
    if role in _NOT_SPOKEN:
        return Turn(None, f"a {role} message is not a turn of the conversation")
    speaking = SPEAKING_ROLES.get(role)
    if speaking is None:
        raise InvalidInputError(
            f"role {role!r} is none of user, assistant, system, developer, tool (or LangChain's "
            "human, ai, system, tool)"
        )
    text = _text(m.get("content"))
    if not text.strip():
        return Turn(None, f"the {speaking} message has no text (tool calls or media only)")
    name = m.get("name")
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise InvalidInputError(f"name must be a non-empty string; got {shown(name)}")
    speaker = name.strip() if isinstance(name, str) else speaking
    when = _instant(m)
    fields: dict[str, Any] = {
        "text": text, "kind": "chat", "speaker": speaker, "session": session,
        "source_id": _source(m, position, session, speaking, speaker, text, when),
        "metadata": {"role": speaking},
    }  # fmt: skip
    if when is not None:
        fields["occurred_at"] = when
    return Turn(fields)


def _text(content: Any) -> str:
    """A message's text: a string, or the text parts of a list of parts (OpenAI's ``{"type":
    "text", "text": ...}``, LangChain's content blocks); images and audio carry none."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "\n".join(parts)
    raise InvalidInputError(f"content must be text or a list of parts; got {shown(content)}")


def _instant(m: Mapping[str, Any]) -> datetime | None:
    """When the message was said: ISO 8601 with an offset, or seconds since the epoch."""
    for name in _TIME_FIELDS:
        value = m.get(name)
        if value is None:
            continue
        if isinstance(value, int | float) and not isinstance(value, bool):
            if not math.isfinite(value):
                raise InvalidInputError(f"{name} must be a finite number of seconds")
            return datetime.fromtimestamp(value, tz=UTC)
        return parse_instant(value, name)
    return None


def _source(
    m: Mapping[str, Any], position: int, session: str | None, role: str, speaker: str, text: str,
    when: datetime | None,
) -> str:  # fmt: skip
    """The turn's ``source_id``: the message's id, else a hash of what tells it apart."""
    for name in _ID_FIELDS:
        given = m.get(name)
        if isinstance(given, str | int) and not isinstance(given, bool) and str(given).strip():
            return f"message:{str(given).strip()}"[:200]
    where = when.isoformat() if when is not None else f"#{position}"
    key = json.dumps([session, where, role, speaker, text], ensure_ascii=False)
    return "message-sha256:" + hashlib.sha256(key.encode()).hexdigest()
