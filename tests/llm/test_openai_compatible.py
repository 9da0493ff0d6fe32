"""The OpenAI-compatible client against a real local HTTP server that plays a script, driving
``reflect``: every case ends in a stored, valid reflection or a typed error with nothing stored."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chronomem import Memory, SimClock
from chronomem.config import ReflectionConfig
from chronomem.errors import LLMHTTPError, LLMTimeoutError, ReflectionError
from chronomem.llm import OpenAICompatibleLLM

from ..conftest import store_of
from ..scripted_http import Script, scripted_server


def completion(content: str) -> tuple[int, dict[str, str], str]:
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}]}  # fmt: skip
    return 200, {"Content-Type": "application/json"}, json.dumps(body)


@pytest.fixture
def server() -> Iterator[tuple[str, Script]]:
    with scripted_server(lambda body: completion("{}")) as served:
        yield served


QUESTIONS = completion(json.dumps({"questions": ["What is Isabella preparing for?"]}))


def insights(*items: dict[str, Any]) -> tuple[int, dict[str, str], str]:
    return completion(json.dumps({"insights": list(items)}))


GOOD = insights({"insight": "Isabella is hosting a Valentine's party", "evidence": [1, 2]})


@pytest.fixture
def town(db_path: Path, clock: SimClock) -> Iterator[Memory]:
    config = ReflectionConfig(questions=1, insights=2, attempts=3)
    with Memory.open(db_path, embedder=None, clock=clock, reflection=config) as mem:
        for text in ("Isabella is planning a Valentine's Day party", "Maria will decorate the cafe",
                     "Isabella bought balloons for the party"):  # fmt: skip
            clock.advance(hours=1)
            mem.remember(text, agent="isabella", importance=6)
        clock.advance(hours=1)
        yield mem


def _reflections(mem: Memory) -> list[Any]:
    return mem.peek("party", agent="isabella", kinds=["reflection"], k=50)


def _client(url: str, **kwargs: Any) -> OpenAICompatibleLLM:
    kwargs.setdefault("backoff", 0.0)
    return OpenAICompatibleLLM(url, "test-model", api_key="sk-test", **kwargs)


def test_valid_output_is_stored_with_its_citations(server, town) -> None:  # type: ignore[no-untyped-def]
    url, script = server
    script.answers = [QUESTIONS, GOOD]
    result = town.reflect("isabella", llm=_client(url))
    [record] = result.records
    assert record.kind.value == "reflection"
    assert record.depth == 1
    assert len(record.evidence) == 2
    assert [h.record.id for h in _reflections(town)] == [record.id]
    request = script.requests[0]
    assert request["model"] == "test-model"
    assert request["response_format"]["type"] == "json_schema"
    assert script.headers[0]["Authorization"] == "Bearer sk-test"


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (completion("Sure! Isabella is hosting a party (because of 1, 2)."), "not JSON"),
        (insights({"insight": "Isabella is hosting", "evidence": [9]}), "cites [9]"),
        (insights({"insight": "Isabella is hosting", "evidence": []}), "cites no statement"),
        (insights({"insight": "A party", "evidence": [1]},
                  {"insight": "a  PARTY", "evidence": [2]}), "repeats"),
        (insights(*({"insight": f"insight {i}", "evidence": [1]} for i in range(3))),
         "at most 2"),
    ],
)  # fmt: skip
def test_invalid_answers_are_retried_then_refused_with_nothing_stored(  # type: ignore[no-untyped-def]
    server, town, bad, reason
) -> None:
    url, script = server
    script.answers = [QUESTIONS, bad, bad, bad]
    with pytest.raises(ReflectionError, match=re.escape(reason)) as err:
        town.reflect("isabella", llm=_client(url))
    assert len(err.value.reasons) == 3
    assert _reflections(town) == []  # never a placeholder memory
    assert town.accumulated_importance("isabella") > 0  # the trigger is kept for next time
    retry = script.requests[2]["messages"][-1]["content"]
    assert "That answer is invalid" in retry


def test_an_invalid_answer_then_a_valid_one_is_stored(server, town) -> None:  # type: ignore[no-untyped-def]
    url, script = server
    script.answers = [QUESTIONS, insights({"insight": "x", "evidence": [0]}), GOOD]
    result = town.reflect("isabella", llm=_client(url))
    assert result.calls == 3
    assert len(result.records) == 1


def test_http_500_then_success(server, town) -> None:  # type: ignore[no-untyped-def]
    url, script = server
    script.answers = [(500, {}, "upstream exploded"), QUESTIONS, GOOD]
    assert len(town.reflect("isabella", llm=_client(url)).records) == 1


def test_429_honours_retry_after(server, town) -> None:  # type: ignore[no-untyped-def]
    url, script = server
    waits: list[float] = []
    script.answers = [(429, {"Retry-After": "2"}, "slow down"), QUESTIONS, GOOD]
    result = town.reflect("isabella", llm=_client(url, sleep=waits.append))
    assert waits == [2.0]
    assert len(result.records) == 1


def test_a_timeout_is_a_typed_error_and_stores_nothing(server, town) -> None:  # type: ignore[no-untyped-def]
    url, script = server
    script.answers = [("sleep", 1.5), QUESTIONS]
    client = _client(url, timeout=0.3, max_retries=0)
    with pytest.raises(ReflectionError) as err:
        town.reflect("isabella", llm=client)
    assert isinstance(err.value.__cause__, LLMTimeoutError)
    assert _reflections(town) == []


def test_errors_are_never_returned_as_model_output(server) -> None:  # type: ignore[no-untyped-def]
    url, script = server
    script.answers = [(400, {}, "TOKEN LIMIT EXCEEDED")]
    with pytest.raises(LLMHTTPError) as err:
        _client(url).complete([{"role": "user", "content": "hi"}])
    assert err.value.status == 400  # not retried: a client error
    assert len(script.requests) == 1
    script.answers = [(503, {}, "down")] * 3
    with pytest.raises(LLMHTTPError, match="503"):
        _client(url, max_retries=2).complete([{"role": "user", "content": "hi"}])
    script.answers = [(200, {}, "<html>not json</html>")]
    with pytest.raises(Exception, match="did not return a chat completion"):
        _client(url).complete([{"role": "user", "content": "hi"}])


def test_the_cli_reflects_through_the_endpoint(server, town, capsys) -> None:  # type: ignore[no-untyped-def]
    from chronomem.cli.main import main

    url, script = server
    script.answers = [QUESTIONS, GOOD]
    db = str(store_of(town).location)
    town.close()
    code = main(["reflect", "--agent", "isabella", "--llm-url", url, "--model", "m",
                 "--questions", "1", "--insights", "2", "--db", db, "--no-embedder"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert "1 reflection(s) for isabella" in out
    assert "Isabella is hosting a Valentine's party" in out
    code = main(["reflect", "--agent", "isabella", "--llm-url", url, "--model", "m", "--if-due",
                 "--db", db, "--no-embedder"])  # fmt: skip
    assert "not due" in capsys.readouterr().out
    code = main(["reflect", "--agent", "isabella", "--db", db, "--no-embedder"])
    assert code == 1
    assert "reflection needs an LLM" in capsys.readouterr().err
