"""LongMemEval (oracle) evidence retrieval and the knowledge-update probe (issue: retrieval
quality), chronomem presets against baselines on the same MiniLM vectors and the same BM25.

Protocol: one space per question; one record per turn ("user: ..." / "assistant: ..."), recorded at
its session's time plus one minute per turn; the question is asked, read-only, at the end of its
day (some evidence is stamped later on the question's own day), by the user (``asker="user"``:
chronomem presets with a speaker weight read "I" and "my" as the user's own lines). Turn-level
recall@5/10 (turns with ``has_answer``) and session-level recall@5/10 (sessions in order of their
first retrieved turn) per question type. The knowledge-update probe, over the questions whose
evidence spans two or more sessions: how often the newest session's best evidence turn ranks above
every older evidence turn, and the MRR of the newest evidence.

    python bench/longmemeval.py
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine, write_results
from _quality import (
    BASELINES,
    CachedEmbedder,
    bm25_scores,
    langchain_time_weighted,
    rrf,
    top,
    variant,
)
from chronomem import Memory, SimClock
from chronomem.config import ScoringConfig
from chronomem.text import passages

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "data" / "longmemeval" / "longmemeval_oracle.json"
SYSTEMS = (
    *BASELINES,
    "chronomem default",
    "chronomem current-facts",
)
VARIANTS: dict[str, ScoringConfig] = {}  # --variant NAME=SPEC: "variant NAME" → its config


def parse(text: str) -> datetime:
    return datetime.strptime(text, "%Y/%m/%d (%a) %H:%M").replace(tzinfo=UTC)


def ranked(
    system: str, mem: Memory, question: dict[str, Any], qv: np.ndarray, ctx: dict[str, Any]
) -> list[str]:
    ids, cosine, bm25, hours = ctx["ids"], ctx["cosine"], ctx["bm25"], ctx["hours"]
    n = len(ids)
    if system == "cosine":
        return top(ids, cosine, n)
    if system == "bm25":
        return top(ids, bm25, n)
    if system == "rrf(cosine,bm25)":
        return rrf(top(ids, cosine, n), top(ids, bm25, n) if bm25.any() else [])
    if system == "langchain-time-weighted":
        return top(ids, langchain_time_weighted(cosine, hours), n)
    preset: str | ScoringConfig
    if system in VARIANTS:
        preset = VARIANTS[system]
    else:
        preset = {
            "generative-agents formula": "generative-agents",
            "chronomem default": "default",
            "chronomem current-facts": "current-facts",
        }[system]
    return ask(mem, question, qv, ctx["as_of"], preset, n)


def ask(
    mem: Memory,
    question: dict[str, Any],
    qv: np.ndarray,
    as_of: datetime,
    preset: str | ScoringConfig | None,
    k: int,
) -> list[str]:
    """The ids of the top ``k`` records for a question by a chronomem preset: read-only (peek), at
    ``as_of``, asked by the user (first-person questions read "I" and "my" as the user's lines)."""
    hits = mem.peek(
        question["question"],
        agent="memory",
        k=k,
        preset=preset,
        query_embedding=qv,
        as_of=as_of,
        asker="user",
    )
    return [h.record.id for h in hits]


def run(
    questions: list[dict[str, Any]],
    embedder: CachedEmbedder,
    tmp: Path,
    *,
    passages_mode: bool | str = True,
) -> list[dict[str, Any]]:
    """Every question's rows; the stores are opened with ``passages=passages_mode``."""
    rows = []
    db = tmp / "lme.db"
    texts = [
        f"{t['role']}: {t['content']}" for q in questions for s in q["haystack_sessions"] for t in s
    ]
    embedder.embed(texts, progress=True)  # one batch, cached
    embedder.embed([p for t in texts for p in passages(t)], progress=True)  # the passages too
    embedder.save()
    for number, q in enumerate(questions):
        clock = SimClock(parse(q["haystack_dates"][0]))
        mem = Memory.open(
            db, embedder=embedder, clock=clock, space=q["question_id"], synchronous="NORMAL",
            passages=passages_mode,
        )  # fmt: skip
        evidence: set[str] = set()
        whole: dict[str, np.ndarray] = {}
        session_of: dict[str, int] = {}
        when: dict[int, datetime] = {}
        for index, (session, date) in enumerate(
            zip(q["haystack_sessions"], q["haystack_dates"], strict=True)
        ):
            start = parse(date)
            when[index] = start
            turns = [f"{t['role']}: {t['content']}" for t in session]
            vectors = embedder.embed(turns)
            for i, (turn, text, vector) in enumerate(zip(session, turns, vectors, strict=True)):
                clock.set(start + timedelta(minutes=i))
                # the engine embeds it as Memory.open's default does (passages="derived")
                rid = mem.remember(text, agent="memory", importance=5).id
                assert rid is not None
                whole[rid] = vector
                session_of[rid] = index
                if turn.get("has_answer"):
                    evidence.add(rid)
        as_of = parse(q["question_date"]).replace(hour=23, minute=59, second=59)
        clock.set(max(as_of, clock.now()))
        with mem.store.snapshot():
            stored = list(mem.store.iter_records(mem.space))
        ids = [s.record.id for s in stored]
        matrix = np.stack([whole[i] for i in ids]).astype(np.float32)  # the baselines' vectors
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        qv = embedder.embed([q["question"]])[0]
        cosine = matrix @ (qv / np.linalg.norm(qv))
        bm25 = bm25_scores(mem, "memory", q["question"], ids)
        hours = np.asarray(
            [(as_of - s.record.last_accessed_at).total_seconds() / 3600 for s in stored]
        )
        ctx = {"ids": ids, "cosine": cosine, "bm25": bm25, "hours": hours, "as_of": as_of}
        answer_sessions = {
            i
            for i, sid in enumerate(q["haystack_session_ids"])
            if sid in set(q["answer_session_ids"])
        }
        evidence_sessions = sorted({session_of[e] for e in evidence}, key=lambda s: when[s])
        for system in (*SYSTEMS, *VARIANTS):
            ranking = ranked(system, mem, q, qv, ctx)
            rank = {rid: i for i, rid in enumerate(ranking, start=1)}
            row: dict[str, Any] = {
                "question_id": q["question_id"],
                "type": q["question_type"],
                "system": system,
            }
            if evidence:
                for k in (5, 10):
                    row[f"turn_recall@{k}"] = sum(
                        1 for e in evidence if rank.get(e, 10**9) <= k
                    ) / len(evidence)
            sessions = list(dict.fromkeys(session_of[r] for r in ranking))
            for k in (5, 10):
                row[f"session_recall@{k}"] = len(answer_sessions & set(sessions[:k])) / max(
                    1, len(answer_sessions)
                )
            if q["question_type"] == "knowledge-update" and len(evidence_sessions) >= 2:
                newest = min(rank[e] for e in evidence if session_of[e] == evidence_sessions[-1])
                older = min(rank[e] for e in evidence if session_of[e] != evidence_sessions[-1])
                row["ku_newest_first"] = 1.0 if newest < older else 0.0
                row["ku_newest_mrr"] = 1.0 / newest
            rows.append(row)
        mem.close()
        if number % 100 == 99:
            print(f"  {number + 1} questions", flush=True)
    return rows


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for system in (*SYSTEMS, *VARIANTS):
        mine = [r for r in rows if r["system"] == system]
        by_type: dict[str, dict[str, float]] = {}
        for qtype in [*sorted({r["type"] for r in mine}), "all"]:
            group = [r for r in mine if qtype == "all" or r["type"] == qtype]
            stats: dict[str, float] = {}
            for key in (
                "turn_recall@5",
                "turn_recall@10",
                "session_recall@5",
                "session_recall@10",
                "ku_newest_first",
                "ku_newest_mrr",
            ):
                values = [r[key] for r in group if key in r]
                if values:
                    stats[key] = float(np.mean(values))
                    stats[f"n_{key}"] = len(values)
            by_type[qtype] = stats
        out[system] = by_type
    return out


def tables(summary: dict[str, Any]) -> list[str]:
    lines = [
        "### Knowledge-update probe (newest evidence vs the older conflicting one)",
        "",
        "| system | newest ranked first | MRR of newest | items |",
        "|---|---:|---:|---:|",
    ]
    for system, s in summary.items():
        ku = s.get("knowledge-update", {})
        lines.append(
            f"| {system} | {ku.get('ku_newest_first', float('nan')):.3f} | "
            f"{ku.get('ku_newest_mrr', float('nan')):.3f} | {ku.get('n_ku_newest_first', 0)} |"
        )
    types = [t for t in next(iter(summary.values())) if t != "all"] + ["all"]
    for k in (10, 5):
        lines += [
            "",
            f"### Turn-level recall@{k} by question type",
            "",
            "| system | " + " | ".join(types) + " |",
            "|---|" + "---:|" * len(types),
        ]
        for system, s in summary.items():
            lines.append(
                f"| {system} | "
                + " | ".join(f"{s[t].get(f'turn_recall@{k}', float('nan')):.3f}" for t in types)
                + " |"
            )
    lines += [
        "",
        "### Turn-level recall@5 and session-level recall@5/10 (all types)",
        "",
        "| system | turn R@5 | turn R@10 | session R@5 | session R@10 |",
        "|---|---:|---:|---:|---:|",
    ]
    for system, s in summary.items():
        a = s["all"]
        lines.append(
            f"| {system} | {a['turn_recall@5']:.3f} | {a['turn_recall@10']:.3f} | "
            f"{a['session_recall@5']:.3f} | {a['session_recall@10']:.3f} |"
        )
    return [*lines, ""]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--types", nargs="*", help="only these question types")
    parser.add_argument(
        "--variant", action="append", default=[], metavar="NAME=SPEC",
        help="also run a ScoringConfig variant (see _quality.variant), reported as 'variant NAME'",
    )  # fmt: skip
    parser.add_argument(
        "--backend", choices=("torch", "onnx"), default="torch",
        help="the embedding backend (onnx: results in %(prog)s_onnx.{md,json})",
    )  # fmt: skip
    args = parser.parse_args()
    for item in args.variant:
        name, _, spec = item.partition("=")
        VARIANTS[f"variant {name}"] = variant(spec)
    questions = json.loads(args.data.read_text())
    if args.types:
        questions = [q for q in questions if q["question_type"] in args.types]
    embedder = CachedEmbedder(backend=args.backend)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="chronomem-lme-") as tmp:
        rows = run(questions, embedder, Path(tmp))
    embedder.save()
    summary = summarise(rows)
    lines = ["# LongMemEval (oracle) retrieval", "", *tables(summary)]
    print("\n".join(lines))
    print(f"({time.perf_counter() - started:.0f}s)")
    if args.types:
        return 0
    info = machine()
    command = " ".join(
        ["python bench/longmemeval.py", *(f'--variant "{v}"' for v in args.variant)]
        + ([] if args.backend == "torch" else ["--backend onnx"])
    )
    header = [
        f"Command: `{command}` — revision {info['revision']}, {info['date']}, "
        f"{info['cpu_count']} cores. Embeddings: all-MiniLM-L6-v2 "
        f"on {embedder.backend}; the baselines rank the whole "
        f"turns' vectors, chronomem's presets what the engine stored (Memory.open's default "
        f'passages="derived"). Questions asked at the end of their day.',
        "",
    ]
    write_results(
        "longmemeval" if args.backend == "torch" else "longmemeval_onnx",
        {"command": command, "machine": info, "summary": summary},
        lines[:2] + header + lines[2:],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
