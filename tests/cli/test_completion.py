"""``chronomem completion``: the generated script completes commands, flags and choices in a
real bash; ``--version``."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from chronomem import __version__
from chronomem.cli.main import main


def _complete(script: Path, line: str, shell: str = "bash") -> list[str]:
    words = line.split(" ")
    array = " ".join(f"'{w}'" for w in words)
    # zsh's bashcompinit calls the function in sh emulation (0-based arrays), as here
    emulate = "emulate -L sh; setopt kshglob noshglob braceexpand; " if shell == "zsh" else ""
    program = (
        f"source {script}\n"
        f"complete_line() {{ {emulate}COMP_WORDS=({array}); COMP_CWORD={len(words) - 1}; "
        "_chronomem; printf '%s\\n' \"${COMPREPLY[@]}\"; }\ncomplete_line\n"
    )
    argv = ["bash", "-c", program] if shell == "bash" else ["zsh", "-f", "-c", program]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True)
    # zsh's compgen leaves matching the typed prefix to zsh's completion system (compadd)
    return [w for w in done.stdout.split("\n") if w and w.startswith(words[-1])]


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_the_script_completes_commands_flags_and_choices(
    shell: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"no {shell} on this machine")
    assert main(["completion", shell]) == 0
    script = tmp_path / f"chronomem.{shell}"
    script.write_text(capsys.readouterr().out)
    assert _complete(script, "chronomem rem", shell) == ["remember", "remember-messages"]
    assert _complete(script, "chronomem remember-", shell) == ["remember-messages"]
    assert {"list", "links"} <= set(_complete(script, "chronomem li", shell))
    assert "--valid-from" in _complete(script, "chronomem remember x --val", shell)
    assert _complete(script, "chronomem list --state su", shell) == ["superseded"]
    assert _complete(script, "chronomem core ap", shell) == ["append"]
    assert sorted(_complete(script, "chronomem completion ", shell)) == ["bash", "zsh"]


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"chronomem {__version__}"
