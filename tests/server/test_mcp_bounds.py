"""The MCP server under abuse, through the official SDK client over both transports (stdio and
streamable HTTP on ``chronomem serve``): size bounds on what a model writes and reads, errors that
quote at most a short prefix of the bad input, nothing written by a refused call, and a schema
whose every parameter says what it is (dates: that an offset is required)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.client import Client as MCPClient
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from chronomem import Memory
from chronomem.server.mcp_answers import HIT_CHARS, RESULT_CHARS, TEXT_CHARS

from .service import running

# An error a model reads must stay small whatever it was sent.
MAX_ERROR_CHARS = 1_000

Session = Callable[[], Any]


@asynccontextmanager
async def _stdio(db: Path) -> AsyncIterator[MCPClient]:
    command = f"-m chronomem.cli.main mcp --no-embedder --agent ada --db {db}".split()
    async with MCPClient(StdioServerParameters(command=sys.executable, args=command)) as mcp:
        yield mcp


@pytest.fixture(params=["stdio", "http"])
def connect(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """An opener of MCP sessions on one store (``db``), over the transport of the param."""
    db = tmp_path / "bounds.db"
    Memory.open(db, embedder=None).close()
    if request.param == "stdio":
        yield db, lambda: _stdio(db)
        return
    with running(db, embedder=None) as (url, _):

        @asynccontextmanager
        async def http() -> AsyncIterator[MCPClient]:
            endpoint = f"{url}/v1/spaces/default/agents/ada/mcp"
            async with (
                httpx2.AsyncClient() as client,
                MCPClient(streamable_http_client(endpoint, http_client=client)) as mcp,
            ):
                yield mcp

        yield db, http


def _error(result: Any) -> str:
    assert result.is_error, result.content
    text = "".join(c.text for c in result.content)
    assert len(text) <= MAX_ERROR_CHARS, f"{len(text)}-character error: {text[:200]}"
    return text


def _json(result: Any) -> Any:
    assert not result.is_error, result.content[0].text
    texts = [c.text for c in result.content]
    return json.loads(texts[0]) if len(texts) == 1 else [json.loads(t) for t in texts]


def test_oversized_and_malformed_calls_are_refused_briefly(connect: Any) -> None:
    db, open_session = connect
    huge = "x" * 2_000_000
    long_id = "1" * 200_000

    async def session() -> dict[str, Any]:
        async with open_session() as mcp:
            return {
                "huge memory": await mcp.call_tool("remember", {"text": huge}),
                "just too long": await mcp.call_tool("remember", {"text": "y" * (TEXT_CHARS + 1)}),
                "long id get": await mcp.call_tool("get", {"record_id": long_id}),
                "long id correct": await mcp.call_tool(
                    "correct", {"record_id": long_id, "text": "new", "reason": "r"}
                ),
                "long id forget": await mcp.call_tool(
                    "forget", {"record_id": long_id, "reason": "r"}
                ),
                "unknown id": await mcp.call_tool("get", {"record_id": "0" * 26}),
                "k too large": await mcp.call_tool("recall", {"query": "q", "k": 10_000}),
                "k zero": await mcp.call_tool("recall", {"query": "q", "k": 0}),
                "huge query": await mcp.call_tool("recall", {"query": huge}),
                "naive date": await mcp.call_tool(
                    "recall", {"query": "q", "as_of": "2025-03-04T09:00:00"}
                ),
                "date only": await mcp.call_tool("recall", {"query": "q", "as_of": "2025-03-04"}),
                "NUL": await mcp.call_tool("remember", {"text": "a\x00b"}),
                "many tags": await mcp.call_tool(
                    "remember", {"text": "tagged", "tags": [f"t{i}" for i in range(500)]}
                ),
                "wrong type": await mcp.call_tool("remember", {"text": ["not", "a", "string"]}),
                "long reason": await mcp.call_tool(
                    "close", {"record_id": "0" * 26, "reason": "r" * 100_000}
                ),
                "long label": await mcp.call_tool(
                    "core_memory_append", {"label": "l" * 10_000, "content": "c"}
                ),
            }

    got = asyncio.run(session())
    errors = {name: _error(result) for name, result in got.items()}
    assert "NotFoundError" in errors["unknown id"]
    assert "offset" in errors["naive date"].lower() or "timezone" in errors["naive date"].lower()
    with Memory.open(db, embedder=None) as mem:
        assert mem.stats()["records"] == 0  # nothing a refused call sent was written


def test_answers_stay_small_whatever_the_memory_holds(connect: Any) -> None:
    db, open_session = connect
    with Memory.open(db, embedder=None) as mem:
        big = [
            mem.remember(f"budget report part {i}: " + "numbers " * 10_000, agent="ada").id
            for i in range(5)
        ]

    async def session() -> dict[str, Any]:
        async with open_session() as mcp:
            return {
                "recall": _json(await mcp.call_tool("recall", {"query": "budget report", "k": 5})),
                "get": _json(await mcp.call_tool("get", {"record_id": big[0]})),
                "history": _json(await mcp.call_tool("history", {"record_id": big[0]})),
                "context": (await mcp.call_tool("context", {"query": "budget report"})),
            }

    got = asyncio.run(session())
    hits = got["recall"] if isinstance(got["recall"], list) else [got["recall"]]
    assert len(hits) == 5
    assert all(len(h["text"]) <= HIT_CHARS + 1 for h in hits)
    assert all(h["text_cut"] and h["text_chars"] > 80_000 for h in hits)
    assert sum(len(h["text"]) for h in hits) <= RESULT_CHARS + len(hits)
    assert got["get"]["text_cut"]
    assert len(got["get"]["text"]) <= RESULT_CHARS + 1
    context = "".join(c.text for c in got["context"].content)
    assert len(context) <= 4 * 3_000 + 2_000  # the default budget, in characters


def test_every_parameter_says_what_it_is(connect: Any) -> None:
    _, open_session = connect

    async def session() -> Any:
        async with open_session() as mcp:
            return (await mcp.list_tools()).tools

    tools = asyncio.run(session())
    missing = [
        f"{tool.name}.{name}"
        for tool in tools
        for name, schema in tool.input_schema.get("properties", {}).items()
        if not schema.get("description")
    ]
    assert not missing, f"parameters without a description: {missing}"
    dates = [
        (tool.name, name, schema["description"])
        for tool in tools
        for name, schema in tool.input_schema.get("properties", {}).items()
        if name in {"as_of", "occurred_at", "valid_until"}
    ]
    assert dates
    assert all("offset" in description for _, _, description in dates), dates
    bounded = {
        (tool.name, name)
        for tool in tools
        for name, schema in tool.input_schema.get("properties", {}).items()
        if "maxLength" in json.dumps(schema) or "maximum" in json.dumps(schema)
    }
    assert {("remember", "text"), ("recall", "query"), ("recall", "k"), ("get", "record_id")} <= (
        bounded
    )
