"""The Python examples of the README and of docs/ run as written (in a scratch directory)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from chronomem.telemetry import uninstrument

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def _params() -> list[object]:
    out: list[object] = []
    for page in PAGES:
        blocks = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
        name = "README" if page == README else page.relative_to(ROOT).as_posix()
        for i, block in enumerate(blocks):
            needs_model = "Memory.open(" in block and "embedder=None" not in block
            marks = [pytest.mark.slow] if needs_model else []
            out.append(pytest.param(block, id=f"{name}:{i}", marks=marks))
    return out


def test_readme_has_examples() -> None:
    assert len(BLOCKS) >= 3


@pytest.mark.parametrize("block", _params())
def test_documented_example_runs(
    block: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every block runs, except those whose first line says they are an illustration: those
    must still compile."""
    code = compile(block, "a documented example", "exec")
    if block.startswith("# illustration"):
        return
    monkeypatch.chdir(tmp_path)
    if "Memory.open(" in block and "embedder=None" not in block:
        os.environ.setdefault("CHRONOMEM_TORCH_THREADS", "1")
    try:
        exec(code, {})
    finally:
        uninstrument()  # an example that turns tracing on does not leave it on for other tests


def test_the_screenshot_scene_builds(tmp_path: Path) -> None:
    """``make screenshots`` photographs this scene: it must keep building as the API moves."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("screenshots", ROOT / "docs" / "screenshots.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ids = module.populate(tmp_path / "ui.db")
    assert set(ids) == {"pnpm", "riot", "now"}
