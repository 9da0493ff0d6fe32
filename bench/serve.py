"""The HTTP service under load, against the engine in the same run (issue 15).

For each store (SQLite; PostgreSQL with ``--postgres``): a store of ``--records`` dialogue turns
(LoCoMo, then LongMemEval, with their real all-MiniLM-L6-v2 vectors; past the ~17k real turns
the data holds, the same turns again tagged with a pass number and their vectors jittered, see
``build``) served by ``chronomem serve`` in its own process (the real model loaded once, one
thread). Then:

1. **Overhead**: the same questions answered one at a time, read-only (``peek``) and touching
   (``recall``), by the engine in this process and by the service over HTTP — both embedding the
   query with the same backend (``CHRONOMEM_EMBEDDER``, the one ``auto`` picks) on one thread —
   and again with the query vectors computed beforehand and passed on both sides
   (``query_embedding``), which leaves only the HTTP round trip, the JSON and the service's
   scheduling in the difference; p50 each, and the difference. In two orders: one by one, and in
   turns of 20 questions (see ``overhead``).
2. **Load**: for each of ``--readers`` (1, 2: ``chronomem serve --readers``, a service process
   each) and each of ``--clients`` (1, 8, 32) concurrent asyncio clients, ``--seconds``
   each sending recalls (80%) and remembers of new turns (20%) back to back (the service
   saturated), then as long again with a pause of mean ``--think`` seconds between requests (agents
   between model calls); throughput, p50/p95/p99 per verb, errors. Every client is made (and
   its TLS settings with it) before the clock starts.
3. **CLI**: ``chronomem remember`` through ``--server`` in a new process each time, p50 wall time,
   next to a ``chronomem remember`` that opens the store and loads the model itself.

Prints the figures and writes ``bench/results/serve.{json,md}`` (``serve_<records>.{json,md}``
for another ``--records``).

    python bench/serve.py [--seconds 20] [--clients 1 8 32] [--think 1] [--records 100000]
                          [--readers 1 2] [--postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _machine import machine, write_results
from _quality import CachedEmbedder
from chronomem import Memory
from chronomem.client import AsyncClient, Client
from chronomem.embedders.default import default_embedder, onnx_available
from locomo import DATA as LOCOMO
from locomo import load
from longmemeval import DATA as LONGMEMEVAL

SPACE = "bench"
TURN = 20  # questions per turn in the overhead's second order
# The backend `auto` picks, named, so the engine measured here and the service run the same one.
BACKEND = "onnx" if onnx_available() else "torch"
ENV = {
    **os.environ,
    "CHRONOMEM_TORCH_THREADS": "1",
    "CHRONOMEM_EMBEDDER": BACKEND,
    "HF_HUB_OFFLINE": "1",
}


def corpus(n: int) -> tuple[list[str], list[str]]:
    """``n`` dialogue turns to store and the questions to ask (LoCoMo's)."""
    conversations = load(LOCOMO)
    texts = [t.text for c in conversations for t in c.turns]
    questions = [q["question"] for c in conversations for q in c.qa]
    if len(texts) < n:
        for item in json.loads(LONGMEMEVAL.read_text()):
            for session in item["haystack_sessions"]:
                texts += [f"{t['role']}: {t['content']}" for t in session]
            if len(texts) >= n + 2000:
                break
    return texts, questions


def build(location: str | Path, texts: list[str], n: int, embedder: CachedEmbedder) -> int:
    """``n`` records: the real turns with their real vectors, then — when the data holds fewer
    than ``n`` — the same turns again tagged with a pass number, their vectors jittered
    (σ = 0.02 per dimension, renormalised), so the scan, the lexical index and the store are as
    large as ``n`` records'. Returns how many are real."""
    real = texts[:n]
    vectors = embedder.embed(real, progress=True)
    embedder.save()
    rng = np.random.default_rng(15)
    # (the copies take a middling importance: the scorer would embed each tagged text again)
    with Memory.open(
        location, embedder=embedder, space=SPACE, passages=False,
        synchronous="NORMAL" if isinstance(location, Path) else "FULL",
    ) as mem:  # fmt: skip
        for start in range(0, n, 2000):
            at = np.arange(start, min(n, start + 2000))
            base = vectors[at % len(real)]
            extra = at >= len(real)
            jitter = base + extra[:, None] * rng.normal(scale=0.02, size=base.shape)
            jitter /= np.linalg.norm(jitter, axis=1, keepdims=True)
            items = [
                {"text": real[i], "embedding": v.astype(np.float32)} if i < len(real)
                else {"text": f"{real[i % len(real)]} (pass {i // len(real)})",
                      "embedding": v.astype(np.float32), "importance": 5}
                for i, v in zip(at.tolist(), jitter, strict=True)
            ]  # fmt: skip
            stored = sum(r.stored for r in mem.remember_many(items, agent="memory"))
            if stored != len(items):  # (the write gate takes no near-duplicate here)
                raise RuntimeError(f"{len(items) - stored} of {len(items)} records not stored")
    return len(real)


def floor_ms(rows: int = 100_000, dim: int = 384, reps: int = 50) -> float:
    """p50 of a bare float32 ``matrix @ q`` over ``rows`` × ``dim`` on one BLAS thread: how fast
    this machine reads memory at the hour of the run (its speed varies from day to day: the
    same code's figures are comparable only next to this)."""
    from threadpoolctl import threadpool_limits

    matrix = np.random.default_rng(0).standard_normal((rows, dim), dtype=np.float32)
    times = []
    with threadpool_limits(limits=1, user_api="blas"):
        for _ in range(reps):
            start = time.perf_counter()
            matrix @ matrix[0]
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def service(location: str | Path, readers: int) -> Iterator[str]:
    """``chronomem serve --readers readers`` in its own process, with the real model, until the
    block ends; every reader opened before it returns."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "chronomem.cli.main", "serve", "--db", str(location),
         "--port", str(port), "--preset", "default", "--readers", str(readers)],
        env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"the service did not start: {proc.stderr.read() if proc.stderr else ''}"
                )
            time.sleep(0.2)
        with Client(url, space=SPACE) as warm:  # load the model before measuring
            warm.peek("warm up", k=1)
        asyncio.run(_open_readers(url, readers))
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


async def _open_readers(url: str, readers: int) -> None:
    """Reads at once until the service has opened its ``readers`` handles of the space."""
    async with AsyncClient(url, space=SPACE) as client:
        for _ in range(3):
            await asyncio.gather(*(client.peek(f"warm up {i}", k=1) for i in range(4 * readers)))


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else float("nan")


def overhead(location: str | Path, url: str, questions: list[str], n: int) -> dict[str, Any]:
    """The engine here vs the service over HTTP, on the same embedding backend and thread count;
    then with precomputed query vectors on both. Two orders, the same questions:

    - *one by one*: each question to the engine, then to the service. Each HTTP call then
      follows a read of this process's own copy of the store's arrays, which has pushed the
      service's out of the shared caches (2 × 1 MiB L2, 32 MiB L3 here): the cost of a service
      sharing its machine with other work;
    - *in turns of* :data:`TURN`: the engine answers a turn of questions, then the service the
      same turn: a client calling the service again and again (an agent between its other work
      on another machine, or on this one between model calls, sees something in between).
    """
    out: dict[str, Any] = {}
    embedder = default_embedder(BACKEND, num_threads=1)
    asked = questions[:n]
    vectors = [v.tolist() for v in embedder.embed(asked)]
    with (
        Memory.open(location, embedder=embedder, space=SPACE) as mem,
        Client(url, space=SPACE) as client,
    ):
        mem.peek("warm up", k=1)
        for verb, given in (("peek", False), ("recall", False), ("peek", True), ("recall", True)):
            pairs = list(zip(asked, vectors, strict=True))
            turns = [pairs[i : i + TURN] for i in range(0, len(pairs), TURN)]
            timed: dict[str, dict[str, list[float]]] = {
                order: {"engine": [], "http": []} for order in ("one by one", "turns")
            }
            for order, groups in (("one by one", [[x] for x in pairs]), ("turns", turns)):
                for group in groups:
                    for side, target in (("engine", mem), ("http", client)):
                        for question, vector in group:
                            extra = {"query_embedding": vector} if given else {}
                            start = time.perf_counter()
                            getattr(target, verb)(question, k=10, **extra)
                            timed[order][side].append(time.perf_counter() - start)
            one, turn = timed["one by one"], timed["turns"]
            out[f"{verb} (query vector)" if given else verb] = {
                "engine_p50_ms": p(one["engine"], 0.5),
                "http_p50_ms": p(one["http"], 0.5),
                "overhead_p50_ms": p(one["http"], 0.5) - p(one["engine"], 0.5),
                "engine_p99_ms": p(one["engine"], 0.99),
                "http_p99_ms": p(one["http"], 0.99),
                "turns_engine_p50_ms": p(turn["engine"], 0.5),
                "turns_http_p50_ms": p(turn["http"], 0.5),
                "turns_overhead_p50_ms": p(turn["http"], 0.5) - p(turn["engine"], 0.5),
            }
    return out


async def load_test(
    url: str,
    questions: list[str],
    new_texts: Iterator[str],
    clients: int,
    seconds: float,
    think: float | None = None,
) -> dict[str, Any]:
    """``clients`` concurrent clients for ``seconds``, each sending recalls (80%) and remembers
    of new turns (20%): back to back (``think=None``: the service saturated), or after an
    exponentially distributed pause of mean ``think`` seconds (agents between model calls)."""
    timings: dict[str, list[float]] = {"recall": [], "remember": []}
    errors: list[str] = []

    async def pause(seconds: float, stop: float) -> None:
        """A paced client's pause, cut at the end of the run: a last pause past it would
        stretch the time the throughput is divided by (32 clients' longest ran 9 s over)."""
        await asyncio.sleep(max(0.0, min(seconds, stop - time.monotonic())))

    async def worker(seed: int, client: AsyncClient, stop: float) -> None:
        pick = random.Random(seed)
        if think is not None:  # the clients start spread over one pause
            await pause(pick.uniform(0, think), stop)
        while time.monotonic() < stop:
            verb = "remember" if pick.random() < 0.2 else "recall"
            start = time.perf_counter()
            try:
                if verb == "recall":
                    await client.recall(pick.choice(questions), k=10)
                else:
                    await client.remember(next(new_texts), agent="memory")
            except Exception as exc:  # an error is a result here: count it
                errors.append(f"{verb}: {type(exc).__name__}: {exc}")
            else:
                timings[verb].append(time.perf_counter() - start)
            if think is not None:  # (after an error too: a paced client stays paced)
                await pause(pick.expovariate(1 / think), stop)

    # Every client is made before the clock starts: made inside the workers, the last ones'
    # making (while the first ones' pauses ran) sent the first requests in a burst.
    async with contextlib.AsyncExitStack() as stack:
        made = [
            await stack.enter_async_context(AsyncClient(url, space=SPACE, timeout=120))
            for _ in range(clients)
        ]
        stop = time.monotonic() + seconds
        began = time.perf_counter()
        await asyncio.gather(*(worker(i, c, stop) for i, c in enumerate(made)))
        elapsed = time.perf_counter() - began
    done = sum(len(v) for v in timings.values())
    return {
        "clients": clients,
        "think_s": think,
        "seconds": round(elapsed, 1),
        "requests": done,
        "throughput_rps": done / elapsed,
        "errors": len(errors),
        "error_examples": errors[:5],
        **{f"{verb}_p{q}_ms": p(v, q / 100) for verb, v in timings.items() for q in (50, 95, 99)},
        **{f"{verb}_count": len(v) for verb, v in timings.items()},
    }


def cli_remember(url: str, location: str | Path, runs: int) -> dict[str, float]:
    through, direct = [], []
    for i in range(runs):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "chronomem.cli.main", "remember", f"a CLI note {i}",
             "--server", url, "--space", SPACE],
            env=ENV, check=True, capture_output=True,
        )  # fmt: skip
        through.append(time.perf_counter() - start)
    for i in range(2):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "chronomem.cli.main", "remember", f"a direct note {i}",
             "--db", str(location), "--space", SPACE],
            env=ENV, check=True, capture_output=True,
        )  # fmt: skip
        direct.append(time.perf_counter() - start)
    return {
        "through_server_p50_s": statistics.median(through),
        "through_server_max_s": max(through),
        "opening_the_store_p50_s": statistics.median(direct),
    }


def run_store(name: str, location: str | Path, args: argparse.Namespace) -> dict[str, Any]:
    texts, questions = corpus(args.records)
    real = build(location, texts, args.records, CachedEmbedder())
    print(f"[{name}] {args.records} records stored ({real} real turns)", flush=True)
    result: dict[str, Any] = {"store": name, "records": args.records, "real_turns": real}
    new = (f"note {i}: {texts[i % len(texts)]}" for i in itertools.count())
    result["load"] = []
    for n, readers in enumerate(args.readers):
        with service(location, readers) as url:
            if n == 0:
                result["overhead"] = overhead(location, url, questions, args.queries)
                print(f"[{name}] overhead {json.dumps(result['overhead'])}", flush=True)
            for clients in args.clients:
                for think in (None, args.think):
                    ld = asyncio.run(load_test(url, questions, new, clients, args.seconds, think))
                    ld["readers"] = readers
                    result["load"].append(ld)
                    print(f"[{name}] load {json.dumps(ld)}", flush=True)
            if n == 0:
                result["cli"] = cli_remember(url, location, args.cli_runs)
                print(f"[{name}] cli {json.dumps(result['cli'])}", flush=True)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20, help="per load run")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument(
        "--think", type=float, default=1.0, help="mean pause of a paced client, seconds"
    )
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--cli-runs", type=int, default=10)
    parser.add_argument("--postgres", action="store_true", help="also a throwaway PostgreSQL")
    parser.add_argument(
        "--readers", type=int, nargs="+", default=[1, 2], help="serve --readers, one run each"
    )
    args = parser.parse_args()
    floor = floor_ms()
    print(f"float32 100k x 384 matrix @ q, one thread: {floor:.1f} ms p50", flush=True)
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="chronomem-serve-") as tmp:
        results.append(run_store("sqlite", Path(tmp) / "serve.db", args))
    if args.postgres:
        from tests.postgres_server import server

        from chronomem.stores.postgres import scratch_database

        with server() as admin, scratch_database(admin, prefix="chronomem_serve") as url:
            results.append(run_store("postgresql", url, args))
    lines = [
        "# The HTTP service under load",
        "",
        f"Command: `python bench/serve.py --seconds {args.seconds:g} --clients "
        f"{' '.join(map(str, args.clients))} --think {args.think:g} "
        f"--records {args.records} --readers {' '.join(map(str, args.readers))}"
        f"{' --postgres' if args.postgres else ''}"
        f"{f' --queries {args.queries}' if args.queries != 200 else ''}"
        f"{f' --cli-runs {args.cli_runs}' if args.cli_runs != 10 else ''}` — "
        f"{machine()['revision']}, {datetime.now(UTC):%Y-%m-%d}, {os.cpu_count()} cores shared "
        "by the service, the load generator and the engine (and other jobs on the machine). "
        f"Real all-MiniLM-L6-v2 on the {BACKEND} backend, one thread per model run, in the "
        "service and in the engine measured here; the service runs up to one model run per "
        "core at once (CHRONOMEM_TORCH_THREADS=1), queries first. "
        f"{results[0]['real_turns']:,} real turns with their vectors; the rest of the "
        f"{args.records:,} records are the same turns again, tagged with a pass number, their "
        "vectors jittered (σ = 0.02, renormalised): the data holds no more real turns. "
        f"This machine's speed at the hour of the run: a bare float32 `matrix @ q` over 100k × "
        f"384 on one thread took {floor:.1f} ms p50 (compare runs next to it).",
        "",
        "Overhead, one client: the same questions to the engine in this process and to the "
        "service, one by one (each HTTP call after an engine read, whose arrays push the "
        f"service's out of the shared caches) and in turns of {TURN} (the engine answers "
        f"{TURN} questions, then the service the same {TURN}; p50 of each side).",
        "",
        "| store | verb | one by one: engine / HTTP p50 ms | HTTP − engine ms "
        f"| in turns of {TURN}: engine / HTTP p50 ms | HTTP − engine ms |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in results:
        for verb, o in r["overhead"].items():
            lines.append(
                f"| {r['store']} | {verb} | {o['engine_p50_ms']:.2f} / {o['http_p50_ms']:.2f} | "
                f"{o['overhead_p50_ms']:+.2f} | {o['turns_engine_p50_ms']:.2f} / "
                f"{o['turns_http_p50_ms']:.2f} | {o['turns_overhead_p50_ms']:+.2f} |"
            )
    lines += [
        "",
        "Load: each client sends recalls (80%, top-10) and remembers of new turns (20%), back "
        f"to back (*saturated*) or after a pause of mean {args.think:g} s, exponentially "
        "distributed (*paced*: agents between model calls), for "
        f"{args.seconds:g} s per row, against `chronomem serve --readers N` (N handles of the "
        "space may read at once; 1: one at a time).",
        "",
        "| store | readers | clients | mode | requests/s | errors | recall p50 / p95 / p99 ms | "
        "remember p50 / p95 / p99 ms |",
        "|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    for r in results:
        for ld in r["load"]:
            mode = "saturated" if ld["think_s"] is None else f"paced ({ld['think_s']:g} s)"
            lines.append(
                f"| {r['store']} | {ld['readers']} | {ld['clients']} | {mode} | "
                f"{ld['throughput_rps']:.1f} | "
                f"{ld['errors']} | {ld['recall_p50_ms']:.1f} / {ld['recall_p95_ms']:.1f} / "
                f"{ld['recall_p99_ms']:.1f} | {ld['remember_p50_ms']:.1f} / "
                f"{ld['remember_p95_ms']:.1f} / {ld['remember_p99_ms']:.1f} |"
            )
    lines += [
        "",
        "| store | CLI `remember` through `--server`, p50 s | max s "
        "| opening the store and the model itself, p50 s |",
        "|---|---:|---:|---:|",
    ]
    for r in results:
        c = r["cli"]
        lines.append(
            f"| {r['store']} | {c['through_server_p50_s']:.3f} | {c['through_server_max_s']:.3f} "
            f"| {c['opening_the_store_p50_s']:.2f} |"
        )
    name = "serve" if args.records == 100_000 else f"serve_{args.records}"
    write_results(name, {"machine": machine(), "floor_ms": floor, "results": results}, lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
