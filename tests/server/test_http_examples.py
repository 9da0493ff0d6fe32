"""docs/http.md's shell session runs as pasted, against a real ``chronomem serve`` process (a key
created by the CLI on the same file while the service runs, curl for every call)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .service import serving_process

DOC = Path(__file__).resolve().parents[2] / "docs" / "http.md"


def _session() -> str:
    text = DOC.read_text()
    section = text[text.index("### Examples") :]
    return re.search(r"```sh\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_the_documented_session_runs_as_pasted(tmp_path: Path) -> None:
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    with serving_process("town.db", "--no-embedder", cwd=tmp_path, env=env) as url:
        script = _session().replace("http://127.0.0.1:8420", url)
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, env=env,
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert done.returncode == 0, f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    assert "the party moved to 6pm" in done.stdout
    assert (tmp_path / "town.jsonl").stat().st_size > 0
