"""A process that works one store until it is killed or its time is up (the reliability suite's
writer; run as a script with ``src`` on the path, never imported by the tests).

Every operation that returned is acknowledged on stdout, one line each, flushed, *after* the
call returned, so the parent knows exactly what the store promised:

    READY
    ACK remember <id>
    ACK supersede <old id> <new id>
    ACK touch <iso instant> <id> ...        a touching recall returned these ids
    ACK feedback <id>                       a +1 rating
    TRY purge <id>                          about to purge (gone even if never acknowledged)
    ACK purge <id>
    ERR <error class> <message>             a ChronomemError (a server restart: expected)
    SEEN <id> <iso last_accessed_at>         a peek observed this access time

Anything else raised is a bug: the traceback goes to stderr and the exit code is 3.

    python worker.py LOCATION --seed N [--seconds S] [--jumps] [--peeks]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import traceback
from datetime import UTC, datetime, timedelta

import numpy as np

from chronomem import ChronomemError, Memory, SimClock

T0 = datetime(2024, 1, 1, tzinfo=UTC)
DIM = 8


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class Worker:
    def __init__(self, mem: Memory, clock: SimClock, seed: int, *, jumps: bool) -> None:
        self.mem, self.clock, self.jumps = mem, clock, jumps
        self.rng = random.Random(seed)
        self.vectors = np.random.default_rng(seed)
        self.seed = seed
        self.open: list[str] = []  # this worker's open, unpurged records
        self.n = 0

    def vector(self) -> list[float]:
        return [float(x) for x in self.vectors.normal(size=DIM)]

    def text(self) -> str:
        self.n += 1
        words = " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(1, 12)))
        return f"w{self.seed} n{self.n} {words}"

    def tick(self) -> None:
        if self.jumps:  # instants that jump back and forth: touches arrive out of order
            offset = timedelta(minutes=self.rng.randint(0, 900), microseconds=self.seed)
            self.clock.set(T0 + offset)
        else:
            self.clock.advance(seconds=self.rng.randint(1, 600))

    def step(self) -> None:
        self.tick()
        roll = self.rng.random()
        mem = self.mem
        if roll < 0.40 or not self.open:
            rid = mem.remember(self.text(), agent="town", embedding=self.vector()).id
            assert rid is not None
            self.open.append(rid)
            say(f"ACK remember {rid}")
        elif roll < 0.50:
            items = [{"text": self.text(), "embedding": self.vector()} for _ in range(3)]
            ids = [r.id for r in mem.remember_many(items, agent="town")]
            self.open += [i for i in ids if i]
            for rid in ids:
                say(f"ACK remember {rid}")
        elif roll < 0.60:
            old = self.open.pop(self.rng.randrange(len(self.open)))
            new = mem.supersede(old, self.text(), embedding=self.vector()).id
            assert new is not None
            self.open.append(new)
            say(f"ACK supersede {old} {new}")
        elif roll < 0.80:
            hits = mem.recall("town", agent="town", k=3, query_embedding=self.vector())
            ids = " ".join(i for h in hits for i in h.record_ids)
            say(f"ACK touch {self.clock.now().isoformat()} {ids}".rstrip())
        elif roll < 0.90:
            rid = self.rng.choice(self.open)
            mem.feedback(rid, "helpful")
            say(f"ACK feedback {rid}")
        elif roll < 0.95:
            rid = self.open.pop(self.rng.randrange(len(self.open)))
            say(f"TRY purge {rid}")  # once asked for, it may be gone without an ACK
            mem.forget(rid, "reliability", purge=True)
            say(f"ACK purge {rid}")
        else:
            for hit in mem.peek("town", agent="town", k=5, query_embedding=self.vector()):
                say(f"SEEN {hit.record.id} {hit.record.last_accessed_at.isoformat()}")


WORDS = (
    "lamp", "harbour", "fog", "bread", "market", "riot", "drought", "keeper", "ship", "granary",
    "tax", "council", "plague", "wall", "bridge", "river", "mill", "forge", "well", "lantern",
)  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("location")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=3600.0)
    parser.add_argument("--jumps", action="store_true")
    parser.add_argument("--tolerate", action="store_true", help="go on after a ChronomemError")
    args = parser.parse_args()
    clock = SimClock(T0)
    try:
        with Memory.open(args.location, embedder=None, clock=clock) as mem:
            worker = Worker(mem, clock, args.seed, jumps=args.jumps)
            say("READY")
            end = time.monotonic() + args.seconds
            while time.monotonic() < end:
                try:
                    worker.step()
                except ChronomemError as exc:
                    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                    say(f"ERR {type(exc).__name__} {message}")
                    if not args.tolerate:
                        return 1
                    time.sleep(0.05)
    except Exception:
        traceback.print_exc()
        return 3
    say("DONE")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
