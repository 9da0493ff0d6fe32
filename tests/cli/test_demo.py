"""`make demo` end to end: the real model on a real SQLite file."""

from __future__ import annotations

from pathlib import Path

import pytest

from chronomem.cli.host import invocation
from chronomem.cli.main import main

pytestmark = pytest.mark.slow


def test_demo_runs_and_shows_its_sections(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "demo.db"
    assert main(["demo", "--db", str(db), "--fresh"]) == 0
    out = capsys.readouterr().out
    assert "rankings identical: False" in out
    assert "last_accessed_at identical for 18/18 records" in out
    assert "top-10 ids and scores identical: True" in out
    assert "DIFFERENT" in out
    section = out[out.index("4. Instructions that forget") :]
    assert "write gate: a reworded copy -> stored=False" in section
    first_answer = section[section.index("How do I install packages?") :].split("\n")[2]
    assert "Install packages with pnpm" in first_answer
    assert "[pushed down (-1)]" in section
    january = "\n".join(section[section.index("package-lock.json") :].split("\n")[1:3])
    assert "Install packages with npm" in january
    assert "[superseded by" in january
    town = out[out.index("5. A town of 40 citizens") :]
    plain_riot = town[town.index("riot: plain similarity") : town.index("riot: TCMF")]
    tcmf_riot = town[town.index("riot: TCMF") : town.index("plague: plain similarity")]
    assert "tannery" not in plain_riot  # similarity alone misses the causes ...
    assert "tannery" in tcmf_riot  # ... the causal graph lifts them
    assert "granary gates" in tcmf_riot
    assert "—1.00→ Riot in the market square" in tcmf_riot  # the proximate link, with weight
    assert "[Kendrick, Lettice, Matilda]" in plain_riot  # one hit, every holder
    assert f"{invocation()} stats --db {db} --no-embedder" in out  # a command that runs here
    assert db.exists()
    assert main(["demo", "--db", str(db)]) == 1  # refuses to clobber without --fresh
