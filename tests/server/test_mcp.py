"""Agents edit their own memory through MCP (the official SDK's client, real server processes):
the lifecycle control checks, core-block versions, typed tool errors with nothing written, two
servers on one store losing nothing, one agent never reaching another's records, and the same
tools on ``chronomem serve`` behind its keys."""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp.client import Client as MCPClient
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from chronomem import Memory
from chronomem.server.keys import create_key
from chronomem.stores import open_store

from .service import running


def _server(db: Path, agent: str) -> StdioServerParameters:
    command = f"-m chronomem.cli.main mcp --no-embedder --agent {agent} --db".split()
    return StdioServerParameters(command=sys.executable, args=[*command, str(db)])


def _json(result: Any) -> Any:
    assert not result.is_error, result.content[0].text
    texts = [c.text for c in result.content]
    return json.loads(texts[0]) if len(texts) == 1 else [json.loads(t) for t in texts]


async def _call(client: MCPClient, tool: str, **arguments: Any) -> Any:
    return _json(await client.call_tool(tool, arguments))


def _hits(found: Any) -> list[dict[str, Any]]:
    return found if isinstance(found, list) else [found]


def test_a_scripted_agent_keeps_its_instructions_current(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"

    async def session() -> dict[str, Any]:
        async with MCPClient(_server(db, "ada")) as mcp:
            tools = {t.name for t in (await mcp.list_tools()).tools}
            npm = (await _call(mcp, "remember", text="Install packages with npm",
                               kind="instruction"))["id"]  # fmt: skip
            tests = (await _call(mcp, "remember", text="Run the tests with make test",
                                 kind="instruction"))["id"]  # fmt: skip
            pnpm = (await _call(mcp, "correct", record_id=npm, text="Install packages with pnpm",
                                reason="the team moved to pnpm"))["id"]  # fmt: skip
            current = _hits(await _call(mcp, "recall", query="how do I install packages?"))
            history = _hits(await _call(mcp, "recall", query="install packages with npm",
                                        include_history=True))  # fmt: skip
            untouched = _hits(await _call(mcp, "recall", query="how do I run the tests?"))
            first = await _call(mcp, "core_memory_append", label="persona",
                                content="I am Ada, a careful assistant.")  # fmt: skip
            between = datetime.now(UTC)
            await asyncio.sleep(0.01)
            await _call(mcp, "core_memory_replace", label="persona", old_content="careful",
                        new_content="meticulous")  # fmt: skip
            last = await _call(mcp, "core_memory_replace", label="persona",
                               old_content="assistant", new_content="engineer")  # fmt: skip
            versions = _hits(await _call(mcp, "history", record_id=last["record_id"]))
            then = _hits(await _call(mcp, "core_memory_read", label="persona",
                                     as_of=between.isoformat()))  # fmt: skip
            bad = await mcp.call_tool("correct", {"record_id": tests, "text": " ", "reason": "x"})
            resource = await mcp.read_resource("core://persona")
        return locals()

    got = asyncio.run(session())
    verbs = {"remember", "recall", "correct", "close", "verify", "feedback", "forget", "history"}
    assert verbs | {"get", "context", "core_memory_append", "core_memory_replace"} <= got["tools"]
    # 1. The corrected instruction is what recall returns; the old one is not among the current.
    assert got["current"][0]["id"] == got["pnpm"]
    assert got["npm"] not in {h["id"] for h in got["current"]}
    # 2. Asked about the old one, it is there, closed, and names its successor.
    old = next(h for h in got["history"] if h["id"] == got["npm"])
    assert old["status"] == "superseded"
    assert old["superseded_by"] == got["pnpm"]
    # 3. A never-corrected instruction is current and unmarked.
    plain = next(h for h in got["untouched"] if h["id"] == got["tests"])
    assert plain["status"] == "open"
    assert "superseded_by" not in plain
    assert "pushed_down" not in plain
    # Core blocks: two replaces leave three versions; as of the first, the first text.
    assert [v["text"] for v in got["versions"]] == [
        "I am Ada, a careful assistant.",
        "I am Ada, a meticulous assistant.",
        "I am Ada, a meticulous engineer.",
    ]
    assert [b["text"] for b in got["then"]] == ["I am Ada, a careful assistant."]
    assert got["resource"].contents[0].text == "I am Ada, a meticulous engineer."
    # A bad call is a tool error carrying the typed message; nothing was written.
    assert got["bad"].is_error
    assert "InvalidInputError (field: text)" in got["bad"].content[0].text
    with Memory.open(db, embedder=None) as mem:
        assert mem.get(got["tests"]).status.value == "open"
        assert mem.stats()["records"] == 6  # 3 instructions + 3 persona versions
        actors = {(e.action, e.actor) for e in mem.audit()}
    client = next(a for _, a in actors if a).split(":")[1]
    assert actors == {("supersede", f"mcp:{client}:ada")}


def test_an_agent_never_reaches_another_agents_records(tmp_path: Path) -> None:
    db = tmp_path / "two.db"
    with Memory.open(db, embedder=None) as mem:
        bobs = mem.remember("Bob's bank PIN is 4471", agent="bob", kind="fact").id

    async def session() -> tuple[Any, Any, Any]:
        async with MCPClient(_server(db, "ada")) as mcp:
            closed = await mcp.call_tool("close", {"record_id": bobs, "reason": "mine now"})
            read = await mcp.call_tool("get", {"record_id": bobs})
            found = await mcp.call_tool("recall", {"query": "bank PIN"})
        return closed, read, found

    closed, read, found = asyncio.run(session())
    assert closed.is_error
    assert read.is_error
    assert "NotFoundError" in closed.content[0].text
    assert "4471" not in read.content[0].text
    assert all("4471" not in c.text for c in found.content)
    with Memory.open(db, embedder=None) as mem:
        assert mem.get(str(bobs)).status.value == "open"


def test_two_server_processes_on_one_store_lose_nothing(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    Memory.open(db, embedder=None).close()  # created before both servers start
    per_server = 25

    async def writer(name: str) -> None:
        async with MCPClient(_server(db, "ada")) as mcp:
            for i in range(per_server):
                await _call(mcp, "remember", text=f"{name} note {i}")
                await _call(mcp, "core_memory_append", label="log", content=f"{name}-{i}")

    async def both() -> None:
        await asyncio.gather(writer("one"), writer("two"))

    asyncio.run(both())
    with Memory.open(db, embedder=None) as mem:
        texts = {h.record.text for h in mem.peek("note", agent="ada", k=100)}
        log = mem.core_blocks("ada")[0].text.split("\n")
    assert texts == {f"{n} note {i}" for n in ("one", "two") for i in range(per_server)}
    assert sorted(log) == sorted(f"{n}-{i}" for n in ("one", "two") for i in range(per_server))


def test_the_same_tools_on_the_service_behind_its_keys(tmp_path: Path) -> None:
    db = tmp_path / "served.db"
    store = open_store(db)
    key, token = create_key(store, space="town", scope="write", label=None,
                            now=datetime(2025, 1, 1, tzinfo=UTC))  # fmt: skip
    store.close()
    with running(db, embedder=None) as (url, handles):
        endpoint = f"{url}/v1/spaces/town/agents/ada/mcp"

        async def session() -> Any:
            headers = {"Authorization": f"Bearer {token}"}
            async with (
                httpx2.AsyncClient(headers=headers) as http,
                MCPClient(streamable_http_client(endpoint, http_client=http)) as mcp,
            ):
                return await _call(mcp, "remember", text="the cafe opens at 8", kind="fact")

        written = asyncio.run(session())
        record = handles.memory("town").get(written["id"])
        assert record.agent == "ada"
        refused = httpx.post(endpoint, json={}, timeout=30)
        assert refused.status_code == 401
        assert refused.headers["content-type"] == "application/problem+json"
        other = httpx.post(
            f"{url}/v1/spaces/elsewhere/agents/ada/mcp/",
            json={},
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
        assert other.status_code == 404
    assert key.id
