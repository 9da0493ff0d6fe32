"""``chronomem demo``: a Generative-Agents style persona over three simulated days, on a real
SQLite file with the real embedding model.

1. The paper's scoring and the reference code's scoring rank the same memories differently.
2. Close and reopen: access times and rankings are identical.
3. A batch of questions scored on one snapshot vs touched one after another.
4. Instructions that forget: supersede, push down, close, decay — without losing history.
5. A town of 40 citizens and two causal chains: plain-similarity context vs TCMF context.
6. Reflection with cited evidence — when an LLM endpoint is configured.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from chronomem.cli.civilization import run_civilization
from chronomem.cli.host import invocation
from chronomem.cli.render import format_hit, unique_prefixes
from chronomem.clock import SimClock
from chronomem.engine import Memory
from chronomem.errors import ChronomemError, ConfigError
from chronomem.llm.base import LLMClient
from chronomem.model.record import Hit, Record, WriteResult

__all__ = ["run_demo"]

AGENT = "isabella"
START = datetime(2023, 2, 13, 7, 0, tzinfo=UTC)

# (day, hour, kind, importance, text) — a day in Smallville, after Park et al. (2023).
MEMORIES: Sequence[tuple[int, int, str, int, str]] = (
    (0, 7, "observation", 1, "Isabella Rodriguez is waking up and getting ready for the day"),
    (0, 8, "observation", 3, "Isabella Rodriguez is opening Hobbs Cafe for the morning"),
    (
        0,
        9,
        "observation",
        2,
        "Klaus Mueller is drinking coffee at Hobbs Cafe while reading about gentrification",
    ),
    (
        0,
        10,
        "plan",
        8,
        "Isabella is planning a Valentine's Day party at Hobbs Cafe "
        "on February 14th from 5pm to 7pm",
    ),
    (0, 11, "observation", 1, "the espresso machine at Hobbs Cafe is idle"),
    (
        0,
        12,
        "chat",
        6,
        "Isabella asked Maria Lopez to help decorate the cafe for the Valentine's Day party",
    ),
    (0, 14, "observation", 5, "Maria Lopez agreed to help decorate Hobbs Cafe for the party"),
    (0, 16, "observation", 4, "Isabella is buying red and pink balloons for the cafe"),
    (1, 8, "observation", 5, "Isabella is baking heart-shaped cookies for the party"),
    (
        1,
        9,
        "observation",
        4,
        "Ayesha Khan asked whether there will be vegetarian food at the party",
    ),
    (
        1,
        11,
        "thought",
        7,
        "Isabella feels Hobbs Cafe is becoming the place where the neighbourhood gathers",
    ),
    (1, 13, "observation", 3, "Tom Moreno complained that the cafe's prices have gone up"),
    (1, 17, "observation", 7, "Guests are arriving at the Valentine's Day party at Hobbs Cafe"),
    (1, 19, "observation", 2, "Isabella is cleaning up the cafe after the party"),
    (2, 8, "observation", 4, "Isabella is reviewing the cafe's accounts for February"),
    (2, 10, "observation", 6, "Sam Moore announced he is running for mayor of Smallville"),
    (2, 12, "observation", 2, "Isabella is ordering more coffee beans from the supplier"),
    (2, 15, "thought", 6, "Isabella wants to host a community event at the cafe every month"),
)

# Retrievals the agent makes while living its days: they touch what they return, so access times
# become irregular — the situation where elapsed-time and ordinal recency disagree.
DAYTIME_RECALLS: Sequence[tuple[int, int, str]] = (
    (0, 18, "Who is helping with the party?"),
    (1, 7, "What do I still need for the party?"),
    (1, 20, "How did the party go?"),
    (2, 9, "How is the cafe doing financially?"),
)

QUESTION = "What does Isabella know about the Valentine's Day party?"
BATCH = ("the Valentine's Day party", "life at Hobbs Cafe", "the people of Smallville")


def _at(day: int, hour: int) -> datetime:
    return START.replace(hour=0) + timedelta(days=day, hours=hour)


def _title(text: str) -> None:
    print(f"\n{'=' * 100}\n{text}\n{'=' * 100}")


def _show(hits: list[Hit]) -> None:
    for i, hit in enumerate(hits, start=1):
        print(format_hit(i, hit))


def _open(db: Path, clock: SimClock, embedder: object) -> Memory:
    return Memory.open(db, embedder=embedder, clock=clock, preset="generative-agents")  # type: ignore[arg-type]


def run_demo(*, db: str, fresh: bool, threads: int | None, llm: LLMClient | None = None) -> int:
    from chronomem.embedders.default import default_embedder

    path = Path(db)
    if path.exists():
        if not fresh:
            raise ConfigError(f"{path} exists; pass --fresh to delete and rebuild the demo store")
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)

    embedder = default_embedder(num_threads=threads)  # ONNX Runtime with the onnx extra
    clock = SimClock(START)
    print(f"chronomem demo: store {path.resolve()}  (SQLite, WAL)  embedder {embedder.model_id}")

    _title("Three days of Isabella Rodriguez, owner of Hobbs Cafe (simulated clock)")
    with _open(path, clock, embedder) as mem:
        writes = {_at(d, h): (kind, imp, text) for d, h, kind, imp, text in MEMORIES}
        reads = {_at(d, h): question for d, h, question in DAYTIME_RECALLS}
        for when in sorted({*writes, *reads}):
            clock.set(when)
            if when in writes:
                kind, imp, text = writes[when]
                mem.remember(text, agent=AGENT, kind=kind, importance=imp)
                print(f"  {when:%a %H:%M}  remember  [{kind}, importance {imp}] {text}")
            if when in reads:
                hits = mem.recall(reads[when], agent=AGENT, k=3)
                print(f"  {when:%a %H:%M}  recall    {reads[when]!r} -> touched {len(hits)}")

        clock.set(_at(2, 18))
        _title(
            f"1. Same memories, two scorings — {clock.now():%a %H:%M}, question:\n   {QUESTION!r}"
        )
        print(
            "\n-- preset 'generative-agents' (the paper: recency = 0.995 ** hours since last "
            "access, min-max, weights 1/1/1)"
        )
        paper = mem.peek(QUESTION, agent=AGENT, k=5, explain=True)
        _show(paper)
        print(
            "\n-- preset 'generative-agents-code' (the authors' code: recency = 0.99 ** position "
            "in last-access order, ascending — the OLDEST access scores highest; weights "
            "0.5/3/2; 'idle' memories and chats skipped)"
        )
        code = mem.peek(QUESTION, agent=AGENT, k=5, explain=True, preset="generative-agents-code")
        _show(code)
        same = [h.record.id for h in paper] == [h.record.id for h in code]
        print(f"\n  rankings identical: {same}  (both reads were peeks: nothing was touched)")

        before_access = {r.id: r.last_accessed_at for r in _all_records(mem)}
        before_hits = [(h.record.id, h.score) for h in mem.peek(QUESTION, agent=AGENT, k=10)]

    _title("2. Close and reopen the store")
    with _open(path, clock, embedder) as mem:
        after_access = {r.id: r.last_accessed_at for r in _all_records(mem)}
        after_hits = [(h.record.id, h.score) for h in mem.peek(QUESTION, agent=AGENT, k=10)]
        touched = sum(1 for r in _all_records(mem) if r.last_accessed_at != r.recorded_at)
    same_access = sum(1 for k, v in before_access.items() if after_access.get(k) == v)
    print(
        f"  last_accessed_at identical for {same_access}/{len(before_access)} records "
        f"({touched} of them were accessed after creation)"
    )
    print(f"  top-10 ids and scores identical: {before_hits == after_hits}")
    print("  (the reference code never saved last_accessed: after a reload every access time")
    print("   silently reset to the creation time)")

    _title("3. A batch of focal questions: one snapshot vs one after another (code preset)")
    with tempfile.TemporaryDirectory(prefix="chronomem-demo-") as tmp:
        archive = Path(tmp) / "isabella.jsonl"
        with _open(path, clock, embedder) as mem:
            mem.export(archive)
        results = {}
        for mode in ("snapshot", "sequential"):
            with _open(Path(tmp) / f"{mode}.db", clock, embedder) as copy:
                copy.import_(archive)
                results[mode] = copy.recall_many(
                    BATCH,
                    agent=AGENT,
                    k=3,
                    preset="generative-agents-code",
                    sequential=(mode == "sequential"),
                )
    for i, question in enumerate(BATCH):
        snap = [h.record.text for h in results["snapshot"][i]]
        seq = [h.record.text for h in results["sequential"][i]]
        flag = "same" if snap == seq else "DIFFERENT"
        print(f"\n  focal point {i + 1}: {question!r}  ->  {flag}")
        for a, b in zip(snap, seq, strict=True):
            print(f"    snapshot   {a}")
            print(f"    sequential {b}" if a != b else "    sequential (same)")
    print(
        "\n  snapshot: every question sees the same access state; sequential: each question's "
        "touches\n  change the next one's recency, as in the reference code."
    )
    _instructions_that_forget(path, embedder)
    run_civilization(path, embedder, _title)
    _reflection(path, clock, embedder, llm)
    run = invocation()
    print(f"\nDone. Inspect the store with:  {run} stats --db {path} --no-embedder")
    print(f"                                 {run} audit --db {path} --no-embedder")
    return 0


DEV = "dev-assistant"
Y = 2025


def _when(month: int, day: int) -> datetime:
    return datetime(Y, month, day, 9, tzinfo=UTC)


def _ask(
    mem: Memory, question: str, *, valid_at: datetime | None = None, as_of: datetime | None = None
) -> None:
    when = {"valid_at": valid_at, "as_of": as_of}
    shown = {name: value for name, value in when.items() if value is not None}
    print(f"\n  Q: {question!r}" + (f"  {shown}" if shown else ""))
    hits = mem.peek(question, agent=DEV, k=3, explain=True, valid_at=valid_at, as_of=as_of)
    for i, hit in enumerate(hits, start=1):
        print("  " + format_hit(i, hit).replace("\n", "\n  "))


def _stored(result: WriteResult) -> str:
    if result.id is None:
        raise ConfigError(f"demo write unexpectedly not stored: {result.reason}")
    return result.id


def _instructions_that_forget(path: Path, embedder: object) -> None:
    _title(
        "4. Instructions that forget (a coding assistant's memory over 2025): supersede, "
        "push down,\n   close and decay — without deleting anything"
    )
    clock = SimClock(_when(1, 10))
    with Memory.open(path, embedder=embedder, clock=clock, space="dev") as mem:  # type: ignore[arg-type]
        npm = _stored(mem.remember("Install packages with npm", agent=DEV, kind="instruction"))
        make_test = _stored(
            mem.remember("Run the tests with make test", agent=DEV, kind="instruction")
        )
        retry = _stored(
            mem.remember(
                "Retry failing integration tests until they pass", agent=DEV, kind="instruction"
            )
        )
        pin = _stored(
            mem.remember(
                "Pin libfoo below 2.1 to work around its date-parsing bug", agent=DEV, kind="fact"
            )
        )
        mem.remember("Tag releases with the date, like v2025.01.10", agent=DEV, kind="instruction")
        print("  Jan 10  wrote 5 instructions and facts (npm, make test, retry, libfoo pin, tags)")

        clock.set(_when(3, 4))
        mem.feedback(retry, "harmful", "a retried test hid a real regression", actor="ana")
        mem.remember(
            "Investigate a failing integration test before re-running it",
            agent=DEV,
            kind="instruction",
        )
        print("  Mar 04  feedback(retry, 'harmful'); wrote the investigate-first instruction")

        clock.set(_when(4, 22))
        mem.close_record(pin, "libfoo 2.2 fixed the date-parsing bug", actor="ana")
        print("  Apr 22  close(libfoo pin, 'libfoo 2.2 fixed the bug')")

        clock.set(_when(6, 2))
        pnpm = mem.supersede(npm, "Install packages with pnpm, not npm", reason="monorepo")
        print(f"  Jun 02  supersede(npm -> pnpm)  stored={pnpm.stored}")
        again = mem.remember("install packages with pnpm, not npm.", agent=DEV, kind="instruction")
        print(f"  Jun 02  write gate: a reworded copy -> stored={again.stored}  ({again.reason})")

        clock.set(_when(10, 1))
        mem.verify(make_test, actor="ana")
        print("  Oct 01  verify('Run the tests with make test')  — its staleness resets")

        clock.set(_when(11, 20))
        print("\n  -- today, Nov 20 (default preset; reads are peeks; 'x decay' is the staleness")
        print("     factor of instructions unused and unverified for months, floor 0.25)")
        _ask(mem, "How do I install packages?")
        _ask(mem, "What should I do when integration tests fail?")
        _ask(mem, "How do I run the tests?")
        _ask(mem, "How should I name a release tag?")
        print("\n  -- history stays answerable")
        _ask(mem, "Why did we need package-lock.json?", valid_at=_when(1, 20))
        _ask(mem, "Is there a workaround for libfoo?", as_of=_when(2, 1))
        entries = mem.audit()
        short = unique_prefixes([npm, *(e.record_id for e in entries)])
        print(f"\n  history({short[npm]}…):")
        for record in mem.history(npm):
            print(f"    {record.recorded_at:%b %d}  {record.status.value:<10}  {record.text}")
        print("\n  audit log (ids shortened to unique prefixes):")
        for entry in entries:
            why = f" ({entry.reason})" if entry.reason else ""
            print(f"    {entry.at:%b %d}  {entry.action:<9} {short[entry.record_id]}…{why}")


def _all_records(mem: Memory) -> list[Record]:
    return mem.records(include_history=True, limit=100_000)


def _reflection(path: Path, clock: SimClock, embedder: object, llm: LLMClient | None) -> None:
    _title("6. Reflection: insights that cite their evidence, validated before they are stored")
    if llm is None:
        print(
            "  No LLM endpoint is configured, so this section is skipped. Any OpenAI-compatible\n"
            "  endpoint works (OpenAI, Ollama, vLLM, llama.cpp server), e.g. with Ollama:\n"
            "    CHRONOMEM_LLM_URL=http://localhost:11434/v1 CHRONOMEM_LLM_MODEL=llama3.1 \\\n"
            "      make demo\n"
            "  (CHRONOMEM_LLM_API_KEY for hosted APIs)."
        )
        return
    with _open(path, clock, embedder) as mem:
        print(f"  {AGENT} accumulated importance: {mem.accumulated_importance(AGENT):g}")
        try:
            result = mem.reflect(AGENT, llm=llm)
        except ChronomemError as exc:
            print(f"  reflection failed, nothing stored: {exc}")
            return
        for question in result.questions:
            print(f"  Q: {question}")
        for record in result.records:
            cited = "; ".join(mem.get(i).text for i in record.evidence)
            print(f"  - {record.text}\n      because: {cited}")
