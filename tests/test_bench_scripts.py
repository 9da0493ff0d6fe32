"""Every benchmark script under ``bench/`` still imports: its module-level code runs against
today's package (``bench/lexical.py`` imported ``chronomem.text.query_terms`` for six days after
it moved, e1381bf, and nothing noticed until someone ran it). Their ``main`` is not run here: the
figures they print are the benchmarks' business (``docs/benchmarks.md``)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
SCRIPTS = sorted(p for p in BENCH.glob("*.py") if not p.name.startswith("_"))


def test_there_are_scripts_to_check() -> None:
    assert len(SCRIPTS) > 20


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_a_bench_script_imports(script: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCH))
    spec = importlib.util.spec_from_file_location(f"bench_{script.stem}", script)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    assert callable(getattr(module, "main", None)), f"{script.name} has no main()"


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_a_bench_script_parses_its_arguments(script: Path) -> None:
    """So ``--help`` describes a run instead of starting one (and overwriting its results)."""
    assert ".parse_args(" in script.read_text("utf-8"), f"{script.name} reads no arguments"
