"""A PostgreSQL server stopped and started under a live workload (docs/reliability.md, "A server
that goes away"): the worker's one handle keeps working once the server is back, every error
it saw meanwhile was a typed ``StoreError`` (no raw driver error, no crash), and every write it
acknowledged — before, during and after — is in the store.

Each trial: a new database on a cluster of the suite's own (durable: a commit is acknowledged
only once its WAL is written), a worker running remember / supersede / touching recall /
feedback / purge in a loop, then a stop (``fast``: clients disconnected; ``immediate``: like a
crash, recovered from the WAL) 0.3–1.5 s into the work, 0–2 s down, a start, and the worker must
acknowledge new writes within 20 s."""

from __future__ import annotations

import random
import threading
import time
from typing import Any

from ..postgres_server import Cluster
from ..waiting import within
from .conftest import Plan
from .harness import Acknowledged, lost_writes, reopen, start_worker, violations


def _restart_trial(cluster: Cluster, seed: int) -> tuple[Acknowledged, str]:
    from chronomem.stores.postgres import scratch_database

    rng = random.Random(seed)
    mode = ("fast", "immediate")[seed % 2]
    with scratch_database(cluster.url, prefix="chronomem_restart") as url:
        worker = start_worker(url, "--seed", str(seed), "--tolerate")
        assert worker.stdout is not None
        assert worker.stdout.readline() == "READY\n"
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(iter(worker.stdout.readline, "")))
        reader.start()
        time.sleep(rng.uniform(0.3, 1.5))
        cluster.stop(mode)
        down_at = len(lines)
        time.sleep(rng.uniform(0.0, 2.0))
        cluster.start()
        # the same handle works again
        within(20, lambda: sum(line.startswith("ACK") for line in lines[down_at:]) >= 20)
        worker.terminate()
        out, err = worker.communicate(timeout=60)
        reader.join(timeout=10)
        acked = Acknowledged().read("".join(lines) + out)
        assert "Traceback" not in err, err
        assert sum(line.startswith("ACK") for line in lines[down_at:]) >= 20, (
            f"trial {seed} ({mode}): the handle did not recover: {acked.errors[-3:]}\n{err}"
        )
        raw = [e for e in acked.errors if not e.startswith(("StoreError", "StoreUnavailable"))]
        assert raw == [], f"untyped or unexpected errors: {raw}"
        with reopen(url) as mem:
            assert violations(mem) == []
            missing = lost_writes(mem, acked)
        assert missing == [], f"trial {seed} ({mode}): {missing}"
        return acked, mode


def test_a_live_handle_survives_a_server_restart(
    restartable: Cluster, plan: Plan, figures: dict[str, Any]
) -> None:
    survived = writes = errors = 0
    for trial in range(plan.restart_trials):
        acked, _ = _restart_trial(restartable, seed=trial)
        survived += 1
        writes += acked.writes
        errors += len(acked.errors)
    figures["PostgreSQL restarts (fast / immediate) survived by a live handle"] = (
        f"{survived} of {plan.restart_trials}"
    )
    figures["PostgreSQL restarts: acknowledged writes"] = writes
    figures["PostgreSQL restarts: acknowledged writes lost"] = 0
    figures["PostgreSQL restarts: typed errors while the server was away"] = errors
