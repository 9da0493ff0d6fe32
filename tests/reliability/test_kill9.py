"""kill -9 of a writer at a random moment, on every store: every write it acknowledged survives
and the store passes its integrity checks (docs/reliability.md, "Durability").

The writer mixes remember, remember_many, supersede, touching recall, feedback and purge (a purge
rewrites the SQLite file, so some kills land inside a VACUUM). The kill comes 0.05–1.5 s after
the writer opened the store; the trials' seeds are fixed, so a failure replays."""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path
from typing import Any

from .conftest import Plan, Stores
from .harness import Acknowledged, lost_writes, reopen, start_worker, violations


def _kill_trial(location: str | Path, seed: int) -> Acknowledged:
    rng = random.Random(seed)
    worker = start_worker(location, "--seed", str(seed))
    assert worker.stdout is not None
    ready = worker.stdout.readline()
    assert ready == "READY\n", (ready, worker.stderr.read() if worker.stderr else "")
    time.sleep(rng.uniform(0.05, 1.5))
    os.kill(worker.pid, signal.SIGKILL)
    out, err = worker.communicate(timeout=60)
    assert worker.returncode == -signal.SIGKILL, err  # it was working, not crashed
    return Acknowledged().read(out)


def test_no_acknowledged_write_is_lost_to_kill_9(
    stores: Stores, plan: Plan, figures: dict[str, Any]
) -> None:
    writes = lost = 0
    for trial in range(plan.kill_trials):
        with stores.new() as location:
            acked = _kill_trial(location, seed=1000 * trial + 7)
            with reopen(location) as mem:
                problems = violations(mem)
                missing = lost_writes(mem, acked)
        assert problems == [], f"trial {trial}: {problems}"
        assert missing == [], f"trial {trial}: {missing}"
        writes += acked.writes
        lost += len(missing)
    figures[f"kill -9 of a writer ({stores.name}): trials"] = plan.kill_trials
    figures[f"kill -9 of a writer ({stores.name}): acknowledged writes"] = writes
    figures[f"kill -9 of a writer ({stores.name}): acknowledged writes lost"] = lost
