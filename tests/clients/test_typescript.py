"""The TypeScript client (``clients/typescript``) against real ``chronomem serve`` processes:
installs its two dev dependencies (cached in its ``node_modules``), compiles it with ``tsc``,
starts an open service and one whose store has keys, and runs its ``node --test`` suite, which
exercises every verb, checks the client against the service's ``/openapi.json`` and its error
classes against :mod:`chronomem.errors`."""

from __future__ import annotations

import inspect
import json
import os
import shutil
import signal
import subprocess
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path

import pytest

from chronomem import errors
from chronomem.client.decode import AnswerError
from chronomem.server.keys import create_key
from chronomem.stores import open_store

from ..server.service import serving_process

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "clients" / "typescript"
NODE, NPM = shutil.which("node"), shutil.which("npm")

pytestmark = pytest.mark.skipif(
    NODE is None or NPM is None, reason="node and npm are needed for the TypeScript client"
)


def _run(command: list[str], *, timeout: float, env: dict[str, str] | None = None) -> str:
    """Run ``command`` in the package; on a timeout, end it with every process it started (node's
    test runner runs each file in a child, which would stay, holding its connections)."""
    proc = subprocess.Popen(
        command, cwd=PACKAGE, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        raise AssertionError(
            f"$ {' '.join(command)}: no end within {timeout} s\n{stdout}\n{stderr}"
        ) from None
    output = f"$ {' '.join(command)}\n{stdout}\n{stderr}"
    assert proc.returncode == 0, output
    return output


def _installed() -> bool:
    """Whether ``node_modules`` holds exactly the locked dev dependencies (then no install)."""
    lock = json.loads((PACKAGE / "package-lock.json").read_text())["packages"]
    for where, entry in lock.items():
        if not where:
            continue
        manifest = PACKAGE / where / "package.json"
        if (
            not manifest.is_file()
            or json.loads(manifest.read_text())["version"] != entry["version"]
        ):
            return False
    return True


def _error_tree() -> dict[str, str | None]:
    """chronomem's error classes as ``{name: parent}`` (the root's parent ``None``)."""
    classes = [c for _, c in inspect.getmembers(errors, inspect.isclass)]
    tree: dict[str, str | None] = {}
    for cls in [*classes, AnswerError]:
        if not issubclass(cls, errors.ChronomemError):
            continue
        parents = [b for b in cls.__bases__ if issubclass(b, errors.ChronomemError)]
        tree[cls.__name__] = parents[0].__name__ if parents else None
    return tree


def _keys(db: Path) -> dict[str, str]:
    """A store with keys (so its service is closed): a read key of "town", an admin key of
    every space, a write key of "elsewhere"."""
    store = open_store(db)
    now = datetime.now(UTC)
    try:
        return {
            name: create_key(store, space=space, scope=scope, label=None, now=now)[1]
            for name, space, scope in (
                ("CHRONOMEM_READ_KEY", "town", "read"),
                ("CHRONOMEM_ADMIN_KEY", None, "admin"),
                ("CHRONOMEM_OTHER_KEY", "elsewhere", "write"),
            )
        }
    finally:
        store.close()


def _serve_env() -> dict[str, str]:
    """The environment of the ``serve`` processes: this checkout's ``src`` first on the path, so
    a worktree's services run its own code whichever checkout the environment installed."""
    path = [str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path)}


def test_the_typescript_client_against_the_service(tmp_path: Path) -> None:
    if not _installed():
        _run([str(NPM), "ci", "--no-audit", "--no-fund"], timeout=600)
    keyed = tmp_path / "keyed.db"
    keys = _keys(keyed)
    with ExitStack() as stack, ThreadPoolExecutor(2) as pool:
        # the two services start while tsc compiles
        starting = [
            pool.submit(stack.enter_context, serving_process(db, "--no-embedder", env=_serve_env()))
            for db in (tmp_path / "open.db", keyed)
        ]
        shutil.rmtree(PACKAGE / "dist", ignore_errors=True)  # no test left over from an old build
        _run([str(NODE), "node_modules/typescript/bin/tsc", "-p", "."], timeout=300)
        url, keyed_url = (future.result() for future in starting)
        env = {
            **os.environ,
            "CHRONOMEM_URL": url,
            "CHRONOMEM_KEYED_URL": keyed_url,
            "CHRONOMEM_ERROR_TREE": json.dumps(_error_tree()),
            **keys,
        }
        tests = sorted(
            str(p.relative_to(PACKAGE)) for p in (PACKAGE / "dist" / "test").glob("*.test.js")
        )
        assert len(tests) >= 4, tests
        # each test on its own clock: one that waits forever fails by its name
        node_test = [str(NODE), "--test", "--test-timeout=60000", "--test-reporter=spec"]
        _run([*node_test, *tests], timeout=300, env=env)
