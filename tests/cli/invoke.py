"""Running the ``chronomem`` command in process, as the CLI tests do."""

from __future__ import annotations

import pytest

from chronomem.cli.main import main


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run ``chronomem ARGS``; its exit code, stdout and stderr."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err
