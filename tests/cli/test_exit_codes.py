"""One exit-code table (0 done, 1 refused or failed, 2 usage), documented where users read it;
the audit's actor when nobody names one; the hint commands the CLI prints."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from chronomem.cli.host import invocation, os_user
from chronomem.cli.main import EXIT_CODES, main

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "chronomem.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def _exit_code_rows(page: Path) -> dict[int, str]:
    rows = re.findall(r"^\| `?(\d+)`? \| (.+?) \|$", page.read_text(), re.M)
    return {int(code): text for code, text in rows}


@pytest.mark.parametrize("page", ["README.md", "docs/cli.md"])
def test_the_exit_code_table_is_documented(page: str) -> None:
    rows = _exit_code_rows(ROOT / page)
    assert set(rows) == set(EXIT_CODES), f"{page} documents {sorted(rows)}"


def test_each_exit_code_happens_as_documented(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["--db", str(tmp_path / "x.db"), "--no-embedder"]
    assert main(["remember", "use pnpm", "--kind", "instruction", *common]) == 0
    capsys.readouterr()
    # 1: refused (the write gate) ...
    assert main(["remember", "Use  PNPM", "--kind", "instruction", *common]) == 1
    assert capsys.readouterr().out.startswith("not stored: near-duplicate")
    # ... or failed (a ChronomemError, one line)
    assert main(["show", "01ABCDEFGHJKMNPQRSTVWXYZ00", *common]) == 1
    assert capsys.readouterr().err.count("\n") == 1
    # 2: usage
    for argv in (["remember"], ["remember", "x", "--no-such-flag"], ["frobnicate"]):
        with pytest.raises(SystemExit) as exc:
            main([*argv, *common])
        assert exc.value.code == 2
        assert "usage: chronomem" in capsys.readouterr().err


def test_a_bad_environment_value_is_a_one_line_error(tmp_path: Path) -> None:
    env = {**os.environ, "CHRONOMEM_TORCH_THREADS": "many"}
    done = _cli("stats", "--db", str(tmp_path / "none.db"), "--no-embedder", env=env)
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("chronomem: error: ")
    assert "CHRONOMEM_TORCH_THREADS" in done.stderr


def test_the_audit_names_the_os_user_when_no_actor_is_set(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in {"USER", "CHRONOMEM_ACTOR", "LOGNAME"}}
    db = str(tmp_path / "a.db")
    made = _cli("remember", "the lamp is broken", "--db", db, "--no-embedder", "--json", env=env)
    assert made.returncode == 0, made.stderr
    rid = json.loads(made.stdout)["id"]
    assert _cli("verify", rid, "--db", db, "--no-embedder", env=env).returncode == 0
    audit = _cli("audit", "--db", db, "--no-embedder", "--json", env=env)
    actor = json.loads(audit.stdout)[-1]["actor"]
    assert actor == os_user()
    assert actor not in {None, "", "None"}
    text = _cli("audit", "--db", db, "--no-embedder", env=env).stdout
    assert "by None" not in text
    assert f"by {actor}" in text


def test_the_hint_command_runs_this_chronomem() -> None:
    command = invocation()
    done = subprocess.run(
        [*command.split(), "--version"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("chronomem ")
