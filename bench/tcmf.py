"""Crisis recall latency: 40 agents × 500 records, 384-d, a 4-deep causal chain plus 20 scope
events (issue: causal graph and TCMF), or more agents (issue 18: 400), or more background events
of the crisis's scope (issue 30: 200, the workload of CivilizationOS's own timing harness).

Measures, in one run on one store: the p50 of a TCMF crisis read over all agents (top-10,
read-only, explain off), the p50 of the same read without a crisis (the two interleaved query by
query), the p50 of building the crisis's inputs from the graph (what a read pays again after the
graph changed), and a per-record Python loop computing the same boost (what CivilizationOS did),
checked equal to the vectorised boost of every row. Writes ``bench/results/tcmf.{json,md}``
(40 agents) or ``bench/results/tcmf_<agents>[_<scope events>].{json,md}``. Targets: crisis
read ≤ 2× the read without a crisis at 40 agents with 200 scope events, ≤ 1.2× at 400 agents.
All reads are at one instant (a simulation's tick) unless ``--every-instant`` advances the
clock before each, or ``--tick`` also has one agent remember a memory before each and both reads
touch (``recall``).

    python bench/tcmf.py [--queries 50] [--agents 40] [--per-agent 500] [--scope-events 20]
                         [--every-instant | --tick] [--loops 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine, write_results
from chronomem import Memory, SimClock
from chronomem.retrieval.crisis import build_crisis
from chronomem.retrieval.query import Crisis

AGENTS, PER_AGENT, DIM, K = 40, 500, 384, 10


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.normal(size=(n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def build(
    path: Path, rng: np.random.Generator, agents: int = AGENTS, scope_events: int = 20,
    per_agent: int = PER_AGENT,
) -> tuple[Memory, str]:  # fmt: skip
    clock = SimClock(datetime(2024, 1, 1, tzinfo=UTC))
    mem = Memory.open(path, embedder=None, clock=clock, synchronous="NORMAL")
    chain_vectors = unit(rng, 5)
    chain = []
    for i in range(5):
        kind = "crisis" if i == 4 else "happening"
        chain.append(
            mem.add_event(f"chain {i}", kind=kind, scope="city", embedding=chain_vectors[i])
        )
        clock.advance(days=2)
    for cause, effect in pairwise(chain):
        mem.link(cause.id, effect.id, 0.9)
    scope = [
        mem.add_event(f"scope {i}", scope="city", embedding=v,
                      occurred_at=chain[-1].occurred_at - timedelta(days=1 + i % 20))
        for i, v in enumerate(unit(rng, scope_events))
    ]  # fmt: skip
    witnessed = [e.id for e in chain[:4]] + [e.id for e in scope]
    for a in range(agents):
        vectors = unit(rng, per_agent)
        # A few records near an ancestor's vector (cosine association), a few witnesses.
        vectors[:5] = chain_vectors[a % 4] + 0.3 * vectors[:5]
        mem.remember_many(
            (
                {
                    "text": f"citizen {a} memory {i}",
                    "importance": int(1 + (i % 10)),
                    "embedding": vectors[i],
                    **({"event_id": witnessed[(a + i) % len(witnessed)]} if i % 50 == 7 else {}),
                }
                for i in range(per_agent)
            ),
            agent=f"citizen{a:02d}",
        )
    clock.advance(days=1)
    return mem, chain[-1].id


def _situation(mem: Memory, crisis: str) -> Crisis:
    return build_crisis(
        mem._h.store, mem.space, mem.get_event(crisis), mem.clock.now(), mem.preset.causal,
        mem._h.store.embedding_meta().model,
    )  # fmt: skip


def loop_boost(mem: Memory, crisis: str) -> np.ndarray:
    """The same boost with a Python loop per record and per causal event."""
    from chronomem.retrieval.columns import columns

    situation = _situation(mem, crisis)
    cols = columns(mem._h.index.arrays(tuple(mem.agents())))
    out = []
    for a in cols.arrays:
        assert a.emb is not None
        for row in range(a.n):
            best = 0.0
            for event in situation.events:
                if a.event_ids[row] == event.event_id:
                    association = 1.0
                elif event.vector is not None and a.has_embedding[row]:
                    vector = event.vector / np.linalg.norm(event.vector)
                    cosine = float(np.dot(a.emb[row], vector))
                    full = min(1.0, cosine / situation.full)
                    association = full if cosine >= situation.threshold else 0.0
                else:
                    association = 0.0
                best = max(best, association * event.effective)
            out.append(best)
    return np.asarray(out)


def vector_boost(mem: Memory, crisis: str) -> np.ndarray:
    from chronomem.retrieval.columns import columns
    from chronomem.retrieval.crisis import boost_rows

    situation = _situation(mem, crisis)
    cols = columns(mem._h.index.arrays(tuple(mem.agents())))
    return boost_rows(cols, situation).value


def p50(samples: list[int]) -> float:
    return statistics.median(samples) / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--agents", type=int, default=AGENTS)
    parser.add_argument("--per-agent", type=int, default=PER_AGENT, help="records per agent")
    parser.add_argument("--loops", type=int, default=3, help="timed runs of the Python loop")
    parser.add_argument(
        "--scope-events",
        type=int,
        default=20,
        help="background events of the crisis's scope (not ancestors)",
    )
    parser.add_argument(
        "--every-instant",
        action="store_true",
        help="advance the clock a second before each query",
    )
    parser.add_argument(
        "--tick",
        action="store_true",
        help="a simulation tick before each query: the clock advances a second, one agent "
        "remembers a memory, and both reads touch what they return (recall)",
    )
    args = parser.parse_args()
    agents_n = args.agents
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory(prefix="chronomem-tcmf-") as tmp:
        t0 = time.perf_counter()
        mem, crisis = build(Path(tmp) / "tcmf.db", rng, agents_n, args.scope_events, args.per_agent)
        build_s = time.perf_counter() - t0
        agents = mem.agents()
        queries = unit(rng, args.queries)
        mem.peek("warm", agents=agents, k=K, query_embedding=queries[0], crisis=crisis)
        crisis_ns, plain_ns, inputs_ns = [], [], []
        read = mem.recall if args.tick else mem.peek
        for n, q in enumerate(queries):
            if args.every_instant or args.tick:
                mem.clock.advance(seconds=1)  # type: ignore[attr-defined]
            if args.tick:
                memory = {"text": f"tick {n}", "embedding": unit(rng, 1)[0]}
                mem.remember_many([memory], agent=agents[n % len(agents)])
            t = time.perf_counter_ns()
            hits = read("q", agents=agents, k=K, query_embedding=q, crisis=crisis)
            crisis_ns.append(time.perf_counter_ns() - t)
            t = time.perf_counter_ns()
            read("q", agents=agents, k=K, query_embedding=q)
            plain_ns.append(time.perf_counter_ns() - t)
            assert len(hits) == K
            t = time.perf_counter_ns()
            _situation(mem, crisis)  # what a read pays again when the graph changed
            inputs_ns.append(time.perf_counter_ns() - t)
        loop_ns = []
        for _ in range(args.loops):
            t = time.perf_counter_ns()
            slow = loop_boost(mem, crisis)
            loop_ns.append(time.perf_counter_ns() - t)
        fast_ns = []
        for _ in range(10):
            t = time.perf_counter_ns()
            fast = vector_boost(mem, crisis)
            fast_ns.append(time.perf_counter_ns() - t)
        np.testing.assert_allclose(fast, slow, rtol=1e-5, atol=1e-6)
        lifted = int(np.count_nonzero(fast))
        mem.close()
    row = {
        "agents": agents_n,
        "records": agents_n * args.per_agent,
        "dim": DIM,
        "causal_events": 4 + args.scope_events,
        "records_lifted": lifted,
        "crisis_recall_p50_ms": p50(crisis_ns),
        "plain_recall_p50_ms": p50(plain_ns),
        "crisis_over_plain": p50(crisis_ns) / p50(plain_ns),
        "crisis_inputs_p50_ms": p50(inputs_ns),
        "vectorised_boost_p50_ms": p50(fast_ns),
        "python_loop_boost_p50_ms": p50(loop_ns),
        "loop_over_vectorised": p50(loop_ns) / p50(fast_ns),
        "build_s": build_s,
    }
    for key, value in row.items():
        print(f"{key:28s} {value:,.3f}" if isinstance(value, float) else f"{key:28s} {value:,}")
    info = machine()
    extra = "" if agents_n == AGENTS else f" --agents {agents_n}"
    name = "tcmf" if agents_n == AGENTS else f"tcmf_{agents_n}"
    if args.per_agent != PER_AGENT:
        extra += f" --per-agent {args.per_agent}"
        name = f"{name}x{args.per_agent}"
    if args.scope_events != 20:
        extra += f" --scope-events {args.scope_events}"
        name = f"tcmf_{agents_n}_{args.scope_events}"
    if args.every_instant:
        extra += " --every-instant"
        name = f"tcmf_{agents_n}_{args.scope_events}_every_instant"
    if args.tick:
        extra += " --tick"
        name = f"tcmf_{agents_n}_{args.scope_events}_tick"
    if args.loops != 3:
        extra += f" --loops {args.loops}"
    command = f"python bench/tcmf.py --queries {args.queries}{extra}"
    if args.tick:
        when = (
            "Before each query a simulation tick: the clock advances a second, one agent "
            "remembers a memory, and both reads touch what they return (`recall`)."
        )
    elif args.every_instant:
        when = "The clock advances a second before each query."
    else:
        when = "All reads at one instant (a simulation's tick)."
    write_results(
        name,
        {"command": command, "machine": info, "result": row},
        f"# TCMF crisis recall ({agents_n} agents × {args.per_agent} records, 384-d, 4-deep "
        f"chain + {args.scope_events} scope events)\n\n"
        f"Command: `{command}` — revision {info['revision']}, {info['date']}, "
        f"{info['cpu_count']} cores (shared), Python {info['python']}, numpy {info['numpy']}. "
        f"The two reads interleaved query by query; compare them within this run only. {when}\n\n"
        "| measure | p50 ms |\n|---|---:|\n"
        f"| crisis recall over {agents_n} agents (top-10, records fetched) | "
        f"{row['crisis_recall_p50_ms']:.2f} |\n"
        f"| same read without a crisis | {row['plain_recall_p50_ms']:.2f} |\n"
        f"| crisis / without | {row['crisis_over_plain']:.2f}× |\n"
        f"| the crisis's inputs built from the graph (what a read pays again after a change "
        f"to the graph) | {row['crisis_inputs_p50_ms']:.2f} |\n"
        f"| causal boost, vectorised | {row['vectorised_boost_p50_ms']:.2f} |\n"
        f"| causal boost, per-record Python loop | {row['python_loop_boost_p50_ms']:.1f} |\n\n"
        f"The loop is {row['loop_over_vectorised']:.0f}× slower; both give the same boosts "
        f"({lifted} of {row['records']} records lifted).\n",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
