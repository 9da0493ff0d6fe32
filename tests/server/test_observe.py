"""What the service tells its operators (docs/observability.md): OpenTelemetry spans of an HTTP
recall with every read stage, through the SDK's in-memory exporter; ``/metrics`` scraped and
parsed by Prometheus' own parser; request ids echoed and recorded by the audit log; JSON log
lines."""

from __future__ import annotations

import io
import json
import logging
import logging.config
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from chronomem import Memory
from chronomem.client import Client
from chronomem.engine.memory import Memory as EngineMemory
from chronomem.server.keys import create_key
from chronomem.server.observe import JsonLines
from chronomem.server.run import ServeSettings, _logging
from chronomem.server.spaces import SharedEmbedder
from chronomem.stores import open_store
from chronomem.telemetry import instrument, instrumented, request_id, stage, uninstrument

from ..conftest import T0, FixedEmbedder
from .service import running

TEXTS = ["the granary burned at dawn", "the miller saw smoke over the river", "bread ran out"]
QUESTION = "what happened to the granary"
STAGES = ["read.embed", "read.sync", "read.candidates", "read.relevance", "read.scoring",
          "read.ranking", "read.hits", "read.touch"]  # fmt: skip


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrument(provider)
    try:
        yield exporter
    finally:
        uninstrument()
        provider.shutdown()


def _named(found: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [s for s in found if s.name == name]


def _ancestors(span: ReadableSpan, by_id: dict[int, ReadableSpan]) -> list[str]:
    out = []
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
        out.append(span.name)
    return out


def test_a_traced_http_recall_shows_every_read_stage_with_its_duration(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    embedder = SharedEmbedder(FixedEmbedder(dim=8))
    with running(tmp_path / "m.db", embedder=embedder) as (url, _), Client(url, space="town") as c:
        c.remember_many(TEXTS, agent="miller")
        spans.clear()
        with request_id("trace-me-1"):
            hits = c.recall(QUESTION, k=2)
    assert len(hits) == 2
    found = spans.get_finished_spans()
    by_id = {s.context.span_id: s for s in found}
    (root,) = _named(found, "POST /v1/spaces/{space}/recall")
    assert root.attributes is not None
    assert root.attributes["http.route"] == "/v1/spaces/{space}/recall"
    assert root.attributes["chronomem.status"] == 200
    assert root.attributes["chronomem.request_id"] == "trace-me-1"
    (verb,) = _named(found, "chronomem.recall")
    assert _ancestors(verb, by_id)[-1] == root.name
    for name in STAGES:
        (one,) = _named(found, f"chronomem.{name}")
        assert one.context.trace_id == root.context.trace_id, name
        assert "chronomem.recall" in _ancestors(one, by_id), name
        assert one.end_time is not None
        assert one.start_time is not None
        assert one.end_time >= one.start_time, name
        assert one.attributes is not None
        assert one.attributes["chronomem.request_id"] == "trace-me-1", name
    (candidates,) = _named(found, "chronomem.read.candidates")
    assert candidates.attributes is not None
    assert candidates.attributes["chronomem.space"] == "town"
    assert candidates.attributes["chronomem.agents"] == 1
    assert candidates.attributes["chronomem.candidates"] == len(TEXTS)
    assert candidates.attributes["chronomem.k"] == 2
    (touch,) = _named(found, "chronomem.read.touch")
    assert touch.attributes is not None
    assert touch.attributes["chronomem.records"] == 2
    # No memory's text and no question in any span.
    for span in found:
        for value in (span.attributes or {}).values():
            assert not any(word in str(value) for word in ("granary", "miller saw", "bread")), (
                span.name,
                value,
            )


def test_a_request_continues_the_callers_trace(tmp_path: Path, spans: InMemorySpanExporter) -> None:
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    with running(tmp_path / "m.db", embedder=FixedEmbedder(dim=8)) as (url, _):
        answer = httpx.get(
            f"{url}/v1/spaces/town/agents",
            headers={"traceparent": f"00-{trace_id}-00f067aa0ba902b7-01"},
        )
    assert answer.status_code == 200
    (root,) = _named(spans.get_finished_spans(), "GET /v1/spaces/{space}/agents")
    assert f"{root.context.trace_id:032x}" == trace_id


def test_tracing_off_runs_no_tracing_code_in_a_verb(tmp_path: Path) -> None:
    assert not instrumented()
    own = EngineMemory.__dict__.get("recall")
    assert own is not None
    assert not hasattr(own, "__wrapped__")
    with stage("read.scoring", space="town") as span:  # the shared no-op stage
        span.set(candidates=3)
    assert stage("read.hits") is stage("read.sync")
    provider = TracerProvider()
    instrument(provider)
    try:
        assert hasattr(EngineMemory.__dict__["recall"], "__wrapped__")
    finally:
        uninstrument()
    assert EngineMemory.__dict__.get("recall") is own
    assert "peek" not in EngineMemory.__dict__ or not hasattr(
        EngineMemory.__dict__["peek"], "__wrapped__"
    )
    with Memory.open(tmp_path / "m.db", embedder=FixedEmbedder(dim=8), clock=None) as mem:
        mem.remember(TEXTS[0], agent="miller")
        assert [h.record.text for h in mem.recall("granary", k=1)] == [TEXTS[0]]


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


class Counting(FixedEmbedder):
    """Records the number of texts of each model run."""

    def __init__(self) -> None:
        super().__init__(dim=8)
        self.runs: list[int] = []

    def embed(self, texts: Sequence[str], *, progress: bool = False) -> npt.NDArray[np.float32]:
        self.runs.append(len(texts))
        return super().embed(texts)


def test_metrics_scrape_cleanly_and_count_what_happened(tmp_path: Path) -> None:
    inner = Counting()
    embedder = SharedEmbedder(inner)
    with running(tmp_path / "m.db", embedder=embedder) as (url, _), Client(url, space="town") as c:
        c.remember_many(TEXTS, agent="miller")
        for _ in range(3):
            c.recall(QUESTION, k=2)
        c.peek(QUESTION, k=1)
        missing = httpx.get(f"{url}/v1/spaces/town/records/nope")
        invalid = httpx.post(f"{url}/v1/spaces/town/recall", json={"k": 2})
        made_up = httpx.get(f"{url}/v1/spaces/no-such-space-{'x' * 20}/records/nope")
        scraped = httpx.get(f"{url}/metrics")
    assert missing.status_code == made_up.status_code == 404
    assert invalid.status_code == 422
    assert scraped.status_code == 200
    assert scraped.headers["content-type"].startswith("text/plain")
    samples = _samples(scraped.text)
    recall = "/v1/spaces/{space}/recall"
    assert (
        samples[
            ("chronomem_requests_total", (("method", "POST"), ("route", recall), ("status", "200")))
        ]
        == 3
    )
    assert (
        samples[
            ("chronomem_requests_total", (("method", "POST"), ("route", recall), ("status", "422")))
        ]
        == 1
    )
    assert (
        samples[
            ("chronomem_request_duration_seconds_count", (("route", recall), ("space", "town")))
        ]
        == 3
    )
    assert samples[("chronomem_errors_total", (("type", "InvalidInputError"),))] == 1
    assert samples[("chronomem_errors_total", (("type", "NotFoundError"),))] == 2
    assert samples[("chronomem_records", (("space", "town"),))] == len(TEXTS)
    assert samples[("chronomem_store_bytes", ())] > 0
    # Every model run, with its size: the records', their passages', one per question.
    assert inner.runs[0] == len(TEXTS)
    assert inner.runs.count(1) >= 4
    assert samples[("chronomem_embedder_batch_texts_count", ())] == len(inner.runs)
    assert samples[("chronomem_embedder_batch_texts_sum", ())] == sum(inner.runs)
    assert samples[("chronomem_embedder_batch_texts_bucket", (("le", "1.0"),))] == inner.runs.count(
        1
    )
    # Made-up spaces and refused requests add no space label.
    spaces = {dict(labels).get("space") for (_, labels) in samples} - {None}
    assert spaces == {"town", "-"}


def test_metrics_need_the_admin_scope_once_keys_exist(tmp_path: Path) -> None:
    location = tmp_path / "m.db"
    with Memory.open(location, embedder=None, space="town"):
        pass
    store = open_store(location)
    try:
        _, write = create_key(store, space="town", scope="write", label=None, now=T0)
        _, admin = create_key(store, space=None, scope="admin", label=None, now=T0)
    finally:
        store.close()
    with running(location, embedder=None) as (url, _):
        assert httpx.get(f"{url}/metrics").status_code == 401
        bearer = {"Authorization": f"Bearer {write}"}
        assert httpx.get(f"{url}/metrics", headers=bearer).status_code == 403
        bearer = {"Authorization": f"Bearer {admin}"}
        assert httpx.get(f"{url}/metrics", headers=bearer).status_code == 200


def test_request_ids_are_echoed_and_recorded_by_the_audit_log(tmp_path: Path) -> None:
    with running(tmp_path / "m.db", embedder=FixedEmbedder(dim=8)) as (url, _):
        with Client(url, space="town") as c:
            wrote = c.remember(TEXTS[0], agent="miller")
            assert wrote.id is not None
            with request_id("agent-7:turn-42"):
                c.close_record(wrote.id, reason="burnt down")
            entry = c.audit(wrote.id)[-1]
        assert entry.action == "close"
        assert entry.detail["request_id"] == "agent-7:turn-42"
        mine = httpx.get(f"{url}/v1/health", headers={"X-Request-Id": "abc.DEF_1-2"})
        assert mine.headers["x-request-id"] == "abc.DEF_1-2"
        for bad in (b"has spaces", b"x" * 129, "ünïcode".encode(), b""):
            made = httpx.get(f"{url}/v1/health", headers={"X-Request-Id": bad})
            assert re.fullmatch("[0-9a-f]{32}", made.headers["x-request-id"]), bad
        first = httpx.get(f"{url}/v1/health").headers["x-request-id"]
        assert first != httpx.get(f"{url}/v1/health").headers["x-request-id"]


def _json_lines(run: Any) -> list[dict[str, Any]]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonLines())
    access = logging.getLogger("chronomem.server.access")
    access.addHandler(handler)
    level = access.level
    access.setLevel(logging.INFO)
    try:
        run()
    finally:
        access.removeHandler(handler)
        access.setLevel(level)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_each_request_logs_one_json_line_with_its_id(tmp_path: Path) -> None:
    def run() -> None:
        with running(tmp_path / "m.db", embedder=FixedEmbedder(dim=8)) as (url, _):
            httpx.post(f"{url}/v1/spaces/town/peek", json={"query": "granary"},
                       headers={"X-Request-Id": "peek-1"})  # fmt: skip
            httpx.get(f"{url}/v1/spaces/town/records/nope", headers={"X-Request-Id": "get-1"})

    lines = _json_lines(run)
    peek, missing = (
        next(x for x in lines if x.get("request_id") == r) for r in ("peek-1", "get-1")
    )
    assert peek["route"] == "/v1/spaces/{space}/peek"
    assert (peek["method"], peek["status"], peek["space"]) == ("POST", 200, "town")
    assert peek["duration_ms"] > 0
    assert peek["level"] == "info"
    assert peek["logger"] == "chronomem.server.access"
    assert (missing["status"], missing["error"], missing["space"]) == (404, "NotFoundError", None)


def test_serve_log_format_json_is_a_working_logging_config(
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = ServeSettings(db=":memory:", log_format="json")
    config = _logging(settings)
    assert config["access_log"] is False
    logging.config.dictConfig(config["log_config"])
    try:
        logging.getLogger("chronomem.test.json").info("started")
        line = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
        assert (line["logger"], line["message"], line["level"]) == (
            "chronomem.test.json",
            "started",
            "info",
        )
    finally:
        logging.config.dictConfig({"version": 1, "disable_existing_loggers": False})
        logging.getLogger().handlers.clear()
    assert _logging(ServeSettings(db=":memory:")) == {}
    with pytest.raises(Exception, match="log format"):
        _logging(ServeSettings(db=":memory:", log_format="xml"))


def test_a_request_that_crashes_is_counted_and_logged_as_an_internal_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(self: object) -> list[str]:
        raise RuntimeError("a defect")

    def run() -> None:
        with running(tmp_path / "m.db", embedder=FixedEmbedder(dim=8)) as (url, _):
            monkeypatch.setattr(EngineMemory, "agents", boom)
            crashed = httpx.get(f"{url}/v1/spaces/town/agents", headers={"X-Request-Id": "c-1"})
            assert crashed.status_code == 500
            assert crashed.json()["error"] == "InternalError"
            assert crashed.headers["X-Request-Id"] == "c-1"
            answers.append(httpx.get(f"{url}/metrics").text)

    answers: list[str] = []
    (line,) = [x for x in _json_lines(run) if x.get("request_id") == "c-1"]
    assert (line["status"], line["error"]) == (500, "InternalError")
    assert line["route"] == "/v1/spaces/{space}/agents"
    samples = _samples(answers[0])
    agents = (("method", "GET"), ("route", "/v1/spaces/{space}/agents"), ("status", "500"))
    assert samples[("chronomem_requests_total", agents)] == 1
    assert samples[("chronomem_errors_total", (("type", "InternalError"),))] == 1
