"""Conversations in (issue 29; docs/design/conversations.md): OpenAI and LangChain messages as
chat records, one result per message, idempotent by ``source_id`` — on a real SQLite file and a
real PostgreSQL database, in several handles at once, resumed after a failure midway, over HTTP
and from the CLI — and a conversation stored this way ranks as the same turns written one by one.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from chronomem import Memory, SimClock
from chronomem.client import Client
from chronomem.engine import writes
from chronomem.errors import InvalidInputError

from ..cli.invoke import run
from ..conftest import T0
from ..server.service import running

CHAT = [
    {"role": "system", "content": "You are a travel assistant."},
    {"role": "user", "name": "Ana", "content": "I moved from Porto to Lyon in March."},
    {"role": "assistant", "content": [{"type": "text", "text": "How do you like Lyon?"}]},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "call-1", "type": "function"}]},
    {"role": "tool", "tool_call_id": "call-1", "content": "weather: rain"},
    {"role": "user", "name": "Ana", "content": "I love the food, but I miss the ocean."},
    {"role": "user", "name": "Ana", "content": "Book me a train to Marseille on Friday."},
]


def _turns(mem: Memory) -> list[tuple[str | None, str]]:
    return sorted((r.speaker, r.text) for r in mem.records(limit=1000))


def test_each_turn_becomes_a_chat_record_and_the_rest_says_why_not(mem: Memory) -> None:
    results = mem.remember_messages(CHAT, session="trip")
    assert [r.stored for r in results] == [False, True, True, False, False, True, True]
    assert results[0].reason == "a system message is not a turn of the conversation"
    assert "no text" in (results[3].reason or "")
    assert results[4].reason == "a tool message is not a turn of the conversation"
    stored = mem.get_many([r.id for r in results if r.id])
    assert {r.kind.value for r in stored} == {"chat"}
    assert {r.session for r in stored} == {"trip"}
    assert [r.speaker for r in stored] == ["Ana", "assistant", "Ana", "Ana"]
    assert stored[1].text == "How do you like Lyon?"
    assert [r.metadata["role"] for r in stored] == ["user", "assistant", "user", "user"]


def test_langchain_messages_objects_and_dicts_and_timestamps(mem: Memory) -> None:
    said = datetime(2025, 3, 2, 18, 30, tzinfo=UTC)
    results = mem.remember_messages(
        [
            SystemMessage("be brief"),
            HumanMessage("my cat is called Miso", id="h-1"),
            AIMessage("Miso is a lovely name.", id="a-1"),
            ToolMessage("42", tool_call_id="t"),
            {"type": "human", "content": "she is three", "timestamp": said.isoformat()},
            {"type": "ai", "content": "noted", "created_at": said.timestamp() + 60},
        ],
        agent="pet-bot",
    )
    assert [r.stored for r in results] == [False, True, True, False, True, True]
    records = mem.get_many([r.id for r in results if r.id])
    assert [r.source_id for r in records[:2]] == ["message:h-1", "message:a-1"]
    assert records[2].occurred_at == said
    assert records[3].occurred_at == said + timedelta(seconds=60)
    assert {r.agent for r in records} == {"pet-bot"}


@pytest.mark.parametrize(
    ("messages", "wrong"),
    [
        ("hello", "a list of messages"),
        ([{"content": "no role"}], "message 1: has no role"),  # after a good first message
        ([{"role": "user", "content": "ok"}, {"role": "narrator", "content": "x"}], "message 2"),
        ([{"role": "user", "content": 5}], "content must be text"),
        ([{"role": "user", "content": "x", "timestamp": "2025-03-01T10:00"}], "no UTC offset"),
        ([{"role": "user", "content": "x", "name": ""}], "name must be"),
        ([object()], "not a message"),
    ],
)
def test_a_message_it_cannot_read_is_refused_and_nothing_is_written(
    mem: Memory, messages: Any, wrong: str
) -> None:
    with pytest.raises(InvalidInputError, match=wrong) as raised:
        mem.remember_messages([{"role": "user", "content": "first"}, *messages] if isinstance(
            messages, list) else messages)  # fmt: skip
    assert raised.value.field == "messages"
    assert mem.records() == []


def test_a_retried_batch_never_lands_twice(mem: Memory) -> None:
    first = mem.remember_messages(CHAT, session="trip")
    again = mem.remember_messages(CHAT, session="trip")
    assert [r.stored for r in again] == [False] * len(CHAT)
    assert [r.duplicate_of for r in again] == [
        r.id if r.stored else None for r in first
    ]  # each turn names the record it made
    assert len(mem.records()) == 4
    # the same words in another session are another conversation
    assert sum(r.stored for r in mem.remember_messages(CHAT, session="other")) == 4
    # a history sent again with new turns at its end: only the new turns land
    later = [*CHAT, {"role": "assistant", "content": "Booked: Friday 9:04 to Marseille."}]
    assert [r.stored for r in mem.remember_messages(later, session="trip")][-2:] == [False, True]
    assert len(mem.records()) == 9


def test_source_id_makes_any_write_idempotent_per_agent(mem: Memory) -> None:
    a = mem.remember("invoice 118 paid", source_id="stripe:evt_1")
    b = mem.remember("invoice 118 paid", source_id="stripe:evt_1")
    assert (a.stored, b.stored, b.duplicate_of) == (True, False, a.id)
    assert mem.remember("invoice 118 paid", source_id="stripe:evt_1", agent="billing").stored
    batch = mem.remember_many(
        [{"text": "x", "source_id": "k"}, {"text": "y", "source_id": "k"}], agent="z"
    )
    assert [r.stored for r in batch] == [True, False]
    assert batch[1].duplicate_of == batch[0].id
    with pytest.raises(InvalidInputError) as raised:
        mem.remember("x", source_id="a\nb")
    assert raised.value.field == "source_id"


def test_handles_storing_one_conversation_at_once_store_it_once(
    location: str | Path, clock: SimClock
) -> None:
    handles = [Memory.open(location, embedder=None, clock=clock) for _ in range(4)]
    barrier = threading.Barrier(len(handles))
    stored: list[int] = []

    def send(m: Memory) -> None:
        barrier.wait()
        stored.append(sum(r.stored for r in m.remember_messages(CHAT, session="trip")))

    try:
        threads = [threading.Thread(target=send, args=(m,)) for m in handles]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(stored) == [0, 0, 0, 4]
        assert len(handles[0].records()) == 4
    finally:
        for m in handles:
            m.close()


def test_a_long_history_killed_midway_resumes_where_it_stopped(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = [{"role": "user", "content": f"note {i}", "id": f"n{i}"} for i in range(10)]
    monkeypatch.setattr(writes, "MESSAGES_PER_TRANSACTION", 3)
    real = Memory.remember_many
    calls = []

    def dies_on_the_third_chunk(self: Memory, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Memory, "remember_many", dies_on_the_third_chunk)
    with pytest.raises(KeyboardInterrupt):
        mem.remember_messages(history)
    assert len(mem.records()) == 6  # two chunks of three, each its own transaction
    monkeypatch.setattr(Memory, "remember_many", real)
    resumed = mem.remember_messages(history)
    assert [r.stored for r in resumed] == [False] * 6 + [True] * 4
    assert sorted(r.text for r in mem.records(limit=100)) == sorted(f"note {i}" for i in range(10))


def _both_ways(
    tmp_path: Path, model: Any, chat: list[dict[str, Any]], queries: tuple[str, ...], k: int
) -> list[list[tuple[str, float]]]:
    """Each query's hits (text, score) over ``chat`` stored through ``remember_messages`` and
    over its spoken turns written one by one with ``remember``, checked to agree: the same
    texts in the same order, the same scores to 1e-6 (a batch of texts and one text at a time
    go through the model with different padding: their float32 vectors differ in the last
    bits). Returns the messages' answers."""
    clock = SimClock(T0)
    answers = []
    for way in ("messages", "turns"):
        with Memory.open(tmp_path / f"{way}.db", embedder=model, clock=clock) as m:
            if way == "messages":
                m.remember_messages(chat, session="s")
            else:
                for msg in chat:
                    if msg["role"] not in ("user", "assistant") or not msg.get("content"):
                        continue
                    content = msg["content"]
                    text = content if isinstance(content, str) else content[0]["text"]
                    m.remember(text, kind="chat", speaker=msg.get("name", msg["role"]), session="s")
            answers.append([[(h.record.text, h.score) for h in m.peek(q, k=k)] for q in queries])
    for ours, theirs in zip(*answers, strict=True):
        assert [t for t, _ in ours] == [t for t, _ in theirs]
        assert [s for _, s in ours] == pytest.approx([s for _, s in theirs], abs=1e-6)
    return answers[0]


def test_a_conversation_ranks_as_the_same_turns_remembered_one_by_one(
    tmp_path: Path, minilm: Any
) -> None:
    """The real model: a conversation stored through messages reads as the same turns written
    with ``remember(kind="chat", speaker=..., session=...)`` (:func:`_both_ways`)."""
    queries = ("where does Ana live now?", "what does Ana miss?", "train")
    answers = _both_ways(tmp_path, minilm, CHAT, queries, k=4)
    assert answers[0][0][0] == "I moved from Porto to Lyon in March."


def test_messages_over_http_and_from_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "chat.db"
    with Memory.open(db, embedder=None) as m:
        m.remember("first")
    with running(db, embedder=None) as (url, _), Client(url) as client:
        sent = [HumanMessage("I prefer aisle seats", id="u1"), AIMessage("Noted.", id="a1")]
        results = client.remember_messages(sent, agent="travel", session="s")
        assert [r.stored for r in results] == [True, True]
        assert [r.stored for r in client.remember_messages(sent, agent="travel")] == [
            False,
            False,
        ]
        assert client.get(results[0].id or "").speaker == "user"
        with pytest.raises(InvalidInputError):
            client.remember_messages([{"role": "narrator", "content": "x"}])
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(json.dumps(m) for m in CHAT) + "\n")
    code, out, _ = run(capsys, "remember-messages", str(path), "--session", "t", "--db", str(db))
    assert (code, out.strip()) == (
        0,
        "4 turn(s) stored, 0 already stored, 3 message(s) not turns of the conversation",
    )
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO(json.dumps(CHAT)))
    code, out, _ = run(
        capsys, "remember-messages", "-", "--session", "t", "--db", str(db), "--json"
    )
    assert code == 0
    assert [r["duplicate_of"] is not None for r in json.loads(out)].count(True) == 4
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    code, _, err = run(capsys, "remember-messages", str(bad), "--db", str(db))
    assert code == 1
    assert "not a JSON array or JSONL" in err


_SEND = """
import json, sys
from chronomem import Memory
with Memory.open(sys.argv[1], embedder=None) as m:
    results = m.remember_messages(json.loads(sys.argv[2]), session="trip")
print(sum(r.stored for r in results))
"""


def test_processes_storing_one_conversation_at_once_store_it_once(location: str | Path) -> None:
    with Memory.open(location, embedder=None) as m:  # the store exists before they race
        m.remember("before the race")
    sent = [
        subprocess.Popen(
            [sys.executable, "-c", _SEND, str(location), json.dumps(CHAT)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for _ in range(3)
    ]  # fmt: skip
    answers = [p.communicate(timeout=180) for p in sent]
    assert all(p.returncode == 0 for p in sent), [err for _, err in answers]
    assert sorted(int(out) for out, _ in answers) == [0, 0, 4]
    with Memory.open(location, embedder=None) as m:
        assert len(m.records(kinds=["chat"])) == 4


def test_korean_and_japanese_conversations_rank_as_their_turns_too(
    tmp_path: Path, minilm: Any
) -> None:
    """Text that is not an English transcript: Korean and Japanese turns, one written as prose
    quoting its speaker — stored through messages and turn by turn, read the same."""
    chat = [
        {"role": "user", "name": "민지", "content": "저는 다음 달에 부산으로 이사해요."},
        {"role": "assistant", "content": "부산은 바다가 아름답죠. 어느 동네로 가세요?"},
        {"role": "user", "name": "Ken", "content": 'Ken said, "来週から大阪で働きます。"'},
        {"role": "user", "name": "민지", "content": "해운대 근처로 가요."},
    ]
    queries = ("민지는 어디로 이사해요?", "大阪で働く", "해운대")
    answers = _both_ways(tmp_path, minilm, chat, queries, k=3)
    assert answers[1][0][0] == 'Ken said, "来週から大阪で働きます。"'
    assert answers[2][0][0] == "해운대 근처로 가요."
