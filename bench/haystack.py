"""LongMemEval long haystacks rebuilt from the oracle file (issue 19): the official retrieval
metrics over ~48 sessions / ~490 turns per question, chronomem presets against baselines on the
same MiniLM vectors and the same BM25.

Construction (LongMemEval-S style, from longmemeval_oracle.json): 12 questions per question type
(fixed seed; abstention questions, ids ending in "_abs", left out as the official retrieval eval
does). A question's haystack is its own evidence sessions, at their own dates, plus distractor
sessions drawn (seeded by the question id) from the other questions' sessions (not from its
``_abs`` twin's) until the haystack holds ``SESSIONS`` sessions or ``TURNS`` turns; each
distractor starts at a random minute of the ``SPREAD`` before the question's date. Records and
reads as bench/longmemeval.py: one record per turn ("user: ..." / "assistant: ..."), one minute
per turn, written in time order; the question is asked read-only at the end of its day by the
user.

Metrics (LongMemEval src/retrieval/eval_utils.py): recall_any@k (any evidence item in the top
k), recall_all@k (all of them), NDCG@k (binary relevance), k in {5, 10}; turn level (evidence:
the ``has_answer`` turns of the question's own sessions, user and assistant alike) and session
level (sessions in order of their first retrieved turn; evidence: ``answer_session_ids``).
Where it departs from the official eval: that indexes the user's turns only (here every turn: the
answers to single-session-assistant questions are the assistant's lines); its session NDCG counts
every turn of an evidence session within the turns that reach k sessions (here: NDCG of the
session ranking); its evidence sessions are those with a ``has_answer`` user turn.

    python bench/haystack.py [--per-type N] [--questions N] [--preset NAME]
        [--variant NAME=SPEC] [--spread-days D] [--jobs N] [--no-baselines] [--out NAME]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine, write_results
from _quality import CachedEmbedder, bm25_scores, ndcg, rrf, top, variant
from chronomem import Memory, SimClock
from chronomem.config import ScoringConfig
from chronomem.text import passages
from longmemeval import DATA, ask, parse

SEED = 19
PER_TYPE = 12
SESSIONS = 48
TURNS = 490
SPREAD = timedelta(days=180)
KS = (5, 10)
# The stores live in memory-backed scratch space when there is one: the run writes ~36k records,
# one transaction each (each turn its own instant), and only reads them back once.
SCRATCH = "/dev/shm" if Path("/dev/shm").is_dir() else None
BEST_OF_SENTENCES = "best of turn and sentences"
BASELINE_SYSTEMS = ("cosine", "bm25", "rrf(cosine,bm25)", BEST_OF_SENTENCES)
TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "knowledge-update",
    "temporal-reasoning",
)


@dataclass(frozen=True, slots=True)
class Session:
    session_id: str
    start: datetime
    turns: list[dict[str, Any]]
    own: bool  # one of the question's own sessions (its has_answer flags count)


def select(questions: list[dict[str, Any]], per_type: int, seed: int) -> list[dict[str, Any]]:
    """``per_type`` questions of each type (no abstention), drawn with ``seed``, round-robin over
    the types so that the first N cover them all; a smaller ``per_type`` gives a subset."""
    groups = defaultdict(list)
    for q in sorted(questions, key=lambda q: q["question_id"]):
        if not q["question_id"].endswith("_abs"):
            groups[q["question_type"]].append(q)
    rng = random.Random(seed)
    for t in TYPES:  # a fixed order of each type's questions: smaller runs take its first ones
        rng.shuffle(groups[t])
    return [groups[t][i] for i in range(per_type) for t in TYPES if i < len(groups[t])]


def haystack(
    question: dict[str, Any],
    pool: dict[str, tuple[str, list[dict[str, Any]]]],
    seed: int,
    spread: timedelta = SPREAD,
) -> list[Session]:
    """The question's sessions plus distractors from ``pool`` (session id -> (owner question
    base id, turns)), in time order. Seeded by the question id alone, so a question's haystack
    does not depend on which other questions run."""
    rng = random.Random(f"{seed}:{question['question_id']}")
    sessions = [
        Session(sid, parse(date), turns, True)
        for sid, date, turns in zip(
            question["haystack_session_ids"],
            question["haystack_dates"],
            question["haystack_sessions"],
            strict=True,
        )
    ]
    base = question["question_id"].removesuffix("_abs")
    own = set(question["haystack_session_ids"])
    candidates = sorted(sid for sid, (owner, _) in pool.items() if owner != base and sid not in own)
    rng.shuffle(candidates)
    asked = parse(question["question_date"])
    turns = sum(len(s.turns) for s in sessions)
    for sid in candidates:
        if len(sessions) >= SESSIONS or turns >= TURNS:
            break
        minutes = rng.randrange(int(spread.total_seconds() // 60))
        sessions.append(
            Session(sid, asked - spread + timedelta(minutes=minutes), pool[sid][1], False)
        )
        turns += len(pool[sid][1])
    return sorted(sessions, key=lambda s: (s.start, s.session_id))


def text_of(turn: dict[str, Any]) -> str:
    return f"{turn['role']}: {turn['content']}"


def scores(ranking: list[str], relevant: set[str], prefix: str) -> dict[str, float]:
    """recall_any@k, recall_all@k and NDCG@k of one ranking (LongMemEval's evaluate_retrieval)."""
    out = {}
    for k in KS:
        head = set(ranking[:k])
        out[f"{prefix} recall_any@{k}"] = float(any(r in head for r in relevant))
        out[f"{prefix} recall_all@{k}"] = float(all(r in head for r in relevant))
        out[f"{prefix} ndcg@{k}"] = ndcg(ranking, relevant, k)
    return out


def run_question(
    question: dict[str, Any],
    sessions: list[Session],
    systems: dict[str, str | ScoringConfig | None],
    embedder: CachedEmbedder,
    db: Path,
) -> list[dict[str, Any]]:
    written = sorted(
        (s.start + timedelta(minutes=i), n, i)
        for n, s in enumerate(sessions)
        for i in range(len(s.turns))
    )
    texts = [text_of(sessions[n].turns[i]) for _, n, i in written]
    vectors = embedder.embed(texts)
    clock = SimClock(written[0][0])
    mem = Memory.open(db, embedder=embedder, clock=clock, synchronous="NORMAL")
    ids, session_of, evidence = [], {}, set()
    for (at, n, i), text in zip(written, texts, strict=True):
        clock.set(at)
        # the engine embeds it as Memory.open's default does (passages="derived")
        rid = mem.remember(text, agent="memory", importance=5).id
        assert rid is not None
        ids.append(rid)
        session_of[rid] = sessions[n].session_id
        if sessions[n].own and sessions[n].turns[i].get("has_answer"):
            evidence.add(rid)
    as_of = parse(question["question_date"]).replace(hour=23, minute=59, second=59)
    clock.set(max(as_of, clock.now()))
    qv = embedder.embed([question["question"]])[0]
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    q = qv / np.linalg.norm(qv)
    cosine = unit @ q
    # A turn's best cosine over itself and its sentences (what presets with passages=True use).
    split = [passages(text) for text in texts]
    pv = embedder.embed([part for parts in split for part in parts])
    of_row = np.repeat(np.arange(len(texts)), [len(parts) for parts in split])
    best = cosine.copy()
    np.maximum.at(best, of_row, pv @ q / np.linalg.norm(pv, axis=1))
    bm25 = bm25_scores(mem, "memory", question["question"], ids)
    n = len(ids)
    answer_sessions = set(question["answer_session_ids"])
    rows = []
    for system, preset in systems.items():
        if system == "cosine":
            ranking = top(ids, cosine, n)
        elif system == "bm25":
            ranking = top(ids, bm25, n)
        elif system == "rrf(cosine,bm25)":
            ranking = rrf(top(ids, cosine, n), top(ids, bm25, n) if bm25.any() else [])
        elif system == BEST_OF_SENTENCES:
            ranking = top(ids, best, n)
        else:
            ranking = ask(mem, question, qv, as_of, preset, n)
        by_session = list(dict.fromkeys(session_of[r] for r in ranking))
        rows.append(
            {
                "question_id": question["question_id"],
                "type": question["question_type"],
                "system": system,
                **scores(ranking, evidence, "turn"),
                **scores(by_session, answer_sessions, "session"),
            }
        )
    mem.close()
    for path in db.parent.glob(f"{db.name}*"):  # ~14 MB a question, in memory under /dev/shm
        path.unlink()
    return rows


_WORKER: dict[str, CachedEmbedder] = {}


def _start_worker(backend: str) -> None:
    _WORKER["embedder"] = CachedEmbedder(backend=backend)


def _run_task(
    task: tuple[dict[str, Any], list[Session], dict[str, str | ScoringConfig | None], Path],
) -> list[dict[str, Any]]:
    return run_question(*task[:3], _WORKER["embedder"], task[3])


METRICS = [f"{level} {m}@{k}" for level in ("turn", "session") for k in KS
           for m in ("recall_any", "recall_all", "ndcg")]  # fmt: skip


def summarise(rows: list[dict[str, Any]], systems: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for system in systems:
        mine = [r for r in rows if r["system"] == system]
        out[system] = {
            group: {
                **{m: float(np.mean([r[m] for r in sub])) for m in METRICS},
                "n": len(sub),
            }
            for group in ("all", *TYPES)
            if (sub := [r for r in mine if group in ("all", r["type"])])
        }
    return out


def tables(summary: dict[str, Any]) -> list[str]:
    lines = [
        "### Overall (official LongMemEval retrieval metrics)",
        "",
        "| system | " + " | ".join(METRICS) + " |",
        "|---|" + "---:|" * len(METRICS),
    ]
    for system, s in summary.items():
        lines.append(f"| {system} | " + " | ".join(f"{s['all'][m]:.3f}" for m in METRICS) + " |")
    types = [t for t in TYPES if t in next(iter(summary.values()))]
    lines += [
        "",
        "### Turn recall_any@5 by question type",
        "",
        "| system | "
        + " | ".join(f"{t} (n={next(iter(summary.values()))[t]['n']})" for t in types)
        + " | all |",
        "|---|" + "---:|" * (len(types) + 1),
    ]
    for system, s in summary.items():
        cells = [f"{s[t]['turn recall_any@5']:.3f}" for t in [*types, "all"]]
        lines.append(f"| {system} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--per-type", type=int, default=PER_TYPE, help="questions per type")
    parser.add_argument("--questions", type=int, help="only the first N of the selection")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument(
        "--spread-days",
        type=float,
        default=SPREAD.days,
        help="distractors start within this many days before the question",
    )
    parser.add_argument("--preset", action="append", default=[], help="another preset to run")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME=SPEC",
        help="a ScoringConfig to run as NAME: 'versions.band=0.2;dense_share=0.6' (overrides of "
        "default; 'current-facts:...' for another preset) or a Python expression such as "
        "'replace(default, versions=None)'",
    )
    parser.add_argument(
        "--jobs", type=int, default=1, help="questions run in this many processes at once"
    )
    parser.add_argument("--no-baselines", action="store_true", help="chronomem systems only")
    parser.add_argument(
        "--out", help="results name in bench/results (default: haystack for a full run)"
    )
    parser.add_argument(
        "--backend", choices=("torch", "onnx"), default="torch",
        help="the embedding backend (see _quality.CachedEmbedder)",
    )  # fmt: skip
    args = parser.parse_args()
    everything = json.loads(args.data.read_text())
    questions = select(everything, args.per_type, args.seed)[: args.questions]
    pool: dict[str, tuple[str, list[dict[str, Any]]]] = {}
    for q in everything:
        for sid, turns in zip(q["haystack_session_ids"], q["haystack_sessions"], strict=True):
            pool.setdefault(sid, (q["question_id"].removesuffix("_abs"), turns))
    systems: dict[str, str | ScoringConfig | None] = {}
    if not args.no_baselines:
        systems.update((name, None) for name in BASELINE_SYSTEMS)
    for name in ["default", *args.preset]:
        systems[f"chronomem {name}"] = name
    for item in args.variant:
        name, _, spec = item.partition("=")
        systems[f"variant {name}"] = variant(spec)
    started = time.perf_counter()
    spread = timedelta(days=args.spread_days)
    stacks = [haystack(q, pool, args.seed, spread) for q in questions]
    embedder = CachedEmbedder(backend=args.backend)
    texts = [text_of(t) for stack in stacks for s in stack for t in s.turns]
    embedder.embed([q["question"] for q in questions] + texts, progress=True)
    embedder.embed([p for t in dict.fromkeys(texts) for p in passages(t)], progress=True)
    embedder.save()
    embedded = time.perf_counter() - started
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="chronomem-haystack-", dir=SCRATCH) as tmp:
        tasks = [
            (q, stack, systems, Path(tmp) / f"{number}.db")
            for number, (q, stack) in enumerate(zip(questions, stacks, strict=True))
        ]
        if args.jobs > 1:
            with ProcessPoolExecutor(
                args.jobs, initializer=_start_worker, initargs=(args.backend,)
            ) as pool_of_workers:
                done = pool_of_workers.map(_run_task, tasks)
                rows = [row for question_rows in done for row in question_rows]
        else:
            for number, (q, stack, chosen, db) in enumerate(tasks):
                rows += run_question(q, stack, chosen, embedder, db)
                if number % 12 == 11:
                    print(f"  {number + 1} questions ({time.perf_counter() - started:.0f}s)")
    elapsed = time.perf_counter() - started
    summary = summarise(rows, list(systems))
    shape = {
        "questions": len(questions),
        "sessions per haystack": float(np.mean([len(s) for s in stacks])),
        "turns per haystack": float(np.mean([sum(len(x.turns) for x in s) for s in stacks])),
        "evidence sessions per haystack": float(np.mean([sum(x.own for x in s) for s in stacks])),
    }
    lines = ["# LongMemEval long haystacks (rebuilt from the oracle file)", "", *tables(summary)]
    print("\n".join(lines))
    print(f"{shape}; embedding {embedded:.0f}s, total {elapsed:.0f}s")
    full = args.questions is None and args.per_type == PER_TYPE and spread == SPREAD
    name = args.out or ("haystack" if full else None)
    if name is None:
        return 0
    info = machine()
    command = "python bench/haystack.py " + " ".join(sys.argv[1:])
    header = [
        f"Command: `{command.strip()}` — revision {info['revision']}, {info['date']}, "
        f"{info['cpu_count']} cores (shared). Embeddings: all-MiniLM-L6-v2 on "
        f"{embedder.backend}; the baselines rank "
        f"the whole turns' vectors, chronomem's presets what the engine stored (Memory.open's "
        'default passages="derived"). '
        f"Haystacks: {shape['questions']} questions, "
        f"{shape['sessions per haystack']:.1f} sessions and {shape['turns per haystack']:.0f} "
        f"turns on average, distractors within {args.spread_days:g} days before the question, "
        f"seed {args.seed}. Time: {elapsed:.0f} s (embedding {embedded:.0f} s).",
        "",
    ]
    variants = {n: repr(c) for n, c in systems.items() if isinstance(c, ScoringConfig)}
    write_results(
        name,
        {
            "command": command.strip(),
            "machine": info,
            "haystacks": shape,
            "seconds": {"total": elapsed, "embedding": embedded},
            "variants": variants,
            "summary": summary,
            "rows": rows,
        },
        lines[:2] + header + lines[2:],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
