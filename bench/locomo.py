"""LoCoMo evidence retrieval (issue: retrieval quality), chronomem presets against baselines in
one run, on the same MiniLM vectors and the same BM25.

Protocol: one space per conversation; one record per dialogue turn ("Speaker: text", plus the
image caption when there is one), recorded at its session's time plus one minute per turn;
questions asked one day after the last session, read-only (peek), top 20. Evidence recall@5/10/20,
hit@10 and MRR per category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop) and over 1–4;
category 5 (adversarial) separately. Malformed evidence ids are normalised ("D8:6; D9:17" and
space-separated lists split, "D:11:26" -> "D11:26", "D30:05" -> "D30:5"); ids that name no turn
are dropped and counted. Reported for the first five conversations (the only ones used for
tuning), the last five, and all ten.

    python bench/locomo.py [--data ../shared/data/locomo/locomo10.json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import RESULTS, machine, write_results
from _quality import (
    BASELINES,
    CachedEmbedder,
    bm25_scores,
    langchain_time_weighted,
    mean,
    metrics,
    rrf,
    store_of,
    top,
    variant,
)
from chronomem import Memory, SimClock
from chronomem.config import ScoringConfig
from chronomem.text import passages

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "data" / "locomo" / "locomo10.json"
TUNING = ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
K = 20
VARIANTS: dict[str, ScoringConfig] = {}  # --variant NAME=SPEC: "variant NAME" → its config
SYSTEMS = (
    *BASELINES,
    "chronomem default",
    "chronomem current-facts",
    "chronomem generative-agents-code",
    "chronomem tcmf",
)


@dataclass
class Turn:
    dia_id: str
    text: str
    at: datetime
    speaker: str | None = None  # --format roles: the speaker travels as the record's field


# How a turn is written (``--format``): a transcript line, a line of prose, or the words alone
# with the speaker as the record's ``speaker`` (as chat messages with a role/name come).
FORMATS = ("transcript", "prose", "roles")


def turn_text(speaker: str, words: str, caption: str | None, form: str) -> tuple[str, str | None]:
    photo = f" [shares a photo: {caption}]" if caption else ""
    if form == "prose":
        return f'{speaker} said, "{words}"{photo}', None
    if form == "roles":
        return f"{words}{photo}", speaker
    return f"{speaker}: {words}{photo}", None


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn]
    qa: list[dict[str, Any]]
    last: datetime
    dropped_evidence: int = 0
    questions_without_evidence: int = 0
    speakers: tuple[str, str] = ("", "")
    extra: dict[str, Any] = field(default_factory=dict)


def parse_time(text: str) -> datetime:
    return datetime.strptime(text, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def normalise_evidence(raw: list[str], known: set[str]) -> tuple[list[str], int]:
    out, dropped = [], 0
    for item in raw:
        for part in re.split(r"[;,\s]+", item.strip()):
            if not part:
                continue
            part = re.sub(r"^D:(\d+):(\d+)$", r"D\1:\2", part)
            match = re.fullmatch(r"D(\d+):(\d+)", part)
            if not match:
                dropped += 1
                continue
            ident = f"D{int(match.group(1))}:{int(match.group(2))}"
            if ident in known:
                out.append(ident)
            else:
                dropped += 1
    return list(dict.fromkeys(out)), dropped


def load(path: Path, form: str = "transcript") -> list[Conversation]:
    data = json.loads(path.read_text())
    out = []
    for c in data:
        conv = c["conversation"]
        turns: list[Turn] = []
        n = 1
        while f"session_{n}" in conv:
            start = parse_time(conv[f"session_{n}_date_time"])
            for i, t in enumerate(conv[f"session_{n}"]):
                text, who = turn_text(t["speaker"], t["text"], t.get("blip_caption"), form)
                turns.append(Turn(t["dia_id"], text, start + timedelta(minutes=i), who))
            n += 1
        known = {t.dia_id for t in turns}
        qa, dropped, empty = [], 0, 0
        for q in c["qa"]:
            evidence, lost = normalise_evidence(q.get("evidence", []), known)
            dropped += lost
            if not evidence:
                empty += 1
                continue
            qa.append({**q, "evidence": evidence})
        out.append(
            Conversation(
                c["sample_id"],
                turns,
                qa,
                max(t.at for t in turns),
                dropped,
                empty,
                (conv["speaker_a"], conv["speaker_b"]),
            )
        )
    return out


def run_conversation(
    conv: Conversation, embedder: CachedEmbedder, tmp: Path
) -> list[dict[str, Any]]:
    clock = SimClock(conv.turns[0].at)
    mem = Memory.open(
        tmp / f"{conv.sample_id}.db", embedder=embedder, clock=clock, synchronous="NORMAL"
    )
    vectors = embedder.embed([t.text for t in conv.turns])
    embedder.embed([p for t in conv.turns for p in passages(t.text)])  # one batch, cached
    id_of: dict[str, str] = {}
    whole: dict[str, np.ndarray] = {}
    for turn, vector in zip(conv.turns, vectors, strict=True):
        clock.set(turn.at)
        # the engine embeds it as Memory.open's default does (passages="derived")
        result = mem.remember(turn.text, agent="memory", importance=5, speaker=turn.speaker)
        assert result.id is not None
        id_of[result.id] = turn.dia_id
        whole[result.id] = vector
    asked = conv.last + timedelta(days=1)
    clock.set(asked)
    # Baseline inputs: the whole turns' vectors, the store's BM25 and access ages.
    with store_of(mem).snapshot():
        stored = list(store_of(mem).iter_records(mem.space))
    ids = [s.record.id for s in stored]
    matrix = np.stack([whole[i] for i in ids]).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    hours = np.asarray([(asked - s.record.last_accessed_at).total_seconds() / 3600 for s in stored])
    questions = [q["question"] for q in conv.qa]
    qvecs = embedder.embed(questions)
    rows = []
    for q, qv in zip(conv.qa, qvecs, strict=True):
        relevant = set(q["evidence"])
        cosine = matrix @ (qv / np.linalg.norm(qv))
        bm25 = bm25_scores(mem, "memory", q["question"], ids)
        dense_rank = top(ids, cosine, K)
        bm25_rank = top(ids, bm25, K) if bm25.any() else []
        rankings = {
            "cosine": dense_rank,
            "bm25": bm25_rank,
            "rrf(cosine,bm25)": rrf(
                top(ids, cosine, 100), top(ids, bm25, 100) if bm25.any() else []
            )[:K],
            "langchain-time-weighted": top(ids, langchain_time_weighted(cosine, hours), K),
        }
        for name, preset in (
            ("generative-agents formula", "generative-agents"),
            ("chronomem default", "default"),
            ("chronomem current-facts", "current-facts"),
            ("chronomem generative-agents-code", "generative-agents-code"),
            ("chronomem tcmf", "tcmf"),
        ):
            hits = mem.peek(q["question"], agent="memory", k=K, preset=preset, query_embedding=qv)
            rankings[name] = [h.record.id for h in hits]
        for name, config in VARIANTS.items():
            hits = mem.peek(q["question"], agent="memory", k=K, preset=config, query_embedding=qv)
            rankings[name] = [h.record.id for h in hits]
        for system, ranking in rankings.items():
            rows.append(
                {
                    "conversation": conv.sample_id,
                    "category": q["category"],
                    "system": system,
                    **metrics([id_of[r] for r in ranking], relevant),
                }
            )
    mem.close()
    return rows


def summarise(rows: list[dict[str, Any]], which: set[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for system in (*SYSTEMS, *VARIANTS):
        mine = [r for r in rows if r["system"] == system and r["conversation"] in which]

        def strip(rs: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [
                {k: v for k, v in r.items() if k not in ("conversation", "category", "system")}
                for r in rs
            ]

        main = [r for r in mine if r["category"] in (1, 2, 3, 4)]
        out[system] = {
            "1-4": {**mean(strip(main)), "n": len(main)},
            **{
                CATEGORIES[c]: {
                    **mean(strip([r for r in mine if r["category"] == c])),
                    "n": sum(1 for r in mine if r["category"] == c),
                }
                for c in CATEGORIES
            },
        }
    return out


def table(summary: dict[str, Any], title: str) -> list[str]:
    lines = [
        f"### {title}",
        "",
        "| system | R@5 | R@10 | R@20 | hit@10 | MRR | multi-hop R@10 | temporal R@10 | "
        "open-domain R@10 | single-hop R@10 | adversarial R@10 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for system, s in summary.items():
        m = s["1-4"]
        if not m.get("n"):
            continue
        cats = " | ".join(
            f"{s[CATEGORIES[c]].get('recall@10', float('nan')):.3f}" for c in (1, 2, 3, 4, 5)
        )
        lines.append(
            f"| {system} | {m['recall@5']:.3f} | {m['recall@10']:.3f} | "
            f"{m['recall@20']:.3f} | {m['hit@10']:.3f} | {m['mrr']:.3f} | {cats} |"
        )
    return [*lines, ""]


def chart(summaries: dict[str, dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = summaries["all ten"]
    names = list(data)
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.15
    groups = ["1-4", "multi-hop", "temporal", "open-domain", "single-hop"]
    for i, name in enumerate(names):
        values = [data[name][g]["recall@10"] for g in groups]
        ax.bar(
            np.arange(len(groups)) + (i - len(names) / 2) * width * 0.7,
            values,
            width * 0.7,
            label=name,
        )
    ax.set_xticks(np.arange(len(groups)), ["all (1-4)", *groups[1:]])
    ax.set_ylabel("evidence recall@10")
    ax.set_title("LoCoMo evidence recall@10, all ten conversations (MiniLM, same vectors)")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--only", nargs="*", help="conversation ids (default: all ten)")
    parser.add_argument(
        "--variant", action="append", default=[], metavar="NAME=SPEC",
        help="also run a ScoringConfig variant (see _quality.variant), reported as 'variant NAME'",
    )  # fmt: skip
    parser.add_argument(
        "--backend", choices=("torch", "onnx"), default="torch",
        help="the embedding backend (onnx: results in %(prog)s_onnx.{md,json})",
    )  # fmt: skip
    parser.add_argument(
        "--format", choices=FORMATS, default="transcript",
        help="how turns are written: 'Name: words', 'Name said, \"words\"', or the words with the "
        "speaker as the record's field (results in locomo[_onnx]_<format>.{md,json})",
    )  # fmt: skip
    args = parser.parse_args()
    for item in args.variant:
        name, _, spec = item.partition("=")
        VARIANTS[f"variant {name}"] = variant(spec)
    conversations = load(args.data, args.format)
    if args.only:
        conversations = [c for c in conversations if c.sample_id in args.only]
    embedder = CachedEmbedder(backend=args.backend)
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="chronomem-locomo-") as tmp:
        for conv in conversations:
            rows += run_conversation(conv, embedder, Path(tmp))
            print(
                f"  {conv.sample_id}: {len(conv.turns)} turns, {len(conv.qa)} questions "
                f"({time.perf_counter() - started:.0f}s)",
                flush=True,
            )
    embedder.save()
    ids = {c.sample_id for c in conversations}
    summaries = {
        "first five (tuning)": summarise(rows, ids & set(TUNING)),
        "last five (held out)": summarise(rows, ids - set(TUNING)),
        "all ten": summarise(rows, ids),
    }
    lines = ["# LoCoMo evidence retrieval", ""]
    for title, summary in summaries.items():
        lines += table(summary, title)
    print("\n".join(lines))
    if args.only:
        return 0
    info = machine()
    command = " ".join(
        ["python bench/locomo.py", *(f'--variant "{v}"' for v in args.variant)]
        + ([] if args.backend == "torch" else ["--backend onnx"])
        + ([] if args.format == "transcript" else [f"--format {args.format}"])
    )
    notes = {
        "evidence ids dropped (name no turn)": sum(c.dropped_evidence for c in conversations),
        "questions without usable evidence (skipped)": sum(
            c.questions_without_evidence for c in conversations
        ),
    }
    header = [
        f"Command: `{command}` — revision {info['revision']}, {info['date']}, "
        f"{info['cpu_count']} cores. Embeddings: all-MiniLM-L6-v2 "
        f"on {embedder.backend}; the baselines rank the whole "
        f"turns' vectors, chronomem's presets what the engine stored (Memory.open's default "
        f'passages="derived"). Notes: {notes}.',
        "",
    ]
    name = ("locomo" if args.backend == "torch" else "locomo_onnx") + (
        "" if args.format == "transcript" else f"_{args.format}"
    )
    write_results(
        name,
        {
            "command": command,
            "machine": info,
            "notes": notes,
            "summaries": summaries,
        },
        lines[:2] + header + lines[2:],
    )
    chart(summaries, RESULTS / f"{name}.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
