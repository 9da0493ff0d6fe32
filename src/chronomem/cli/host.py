"""What the CLI knows about the machine it runs on: the account running it (the audit log's
default actor) and how to run this ``chronomem`` again (the hints it prints)."""

from __future__ import annotations

import getpass
import os
import shutil
import sys

__all__ = ["invocation", "os_user"]


def os_user() -> str:
    """The name of the account running the command (the password database, not the
    environment), or ``uid N`` when the account has no name (a container's bare uid)."""
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError):  # no pwd (Windows), or a uid with no entry
        pass
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return f"uid {os.getuid()}" if hasattr(os, "getuid") else "unknown"


def invocation() -> str:
    """How to run this ``chronomem`` again from the current directory: ``chronomem`` when that
    name on ``PATH`` is this installation, else the console script next to this interpreter
    (``.venv/bin/chronomem``), else ``python -m chronomem.cli.main``."""
    here = os.path.dirname(sys.executable)
    script = os.path.join(here, "chronomem")
    found = shutil.which("chronomem")
    if found and os.path.realpath(found) == os.path.realpath(script):
        return "chronomem"
    if os.path.exists(script):
        return _relative(script)
    return f"{_relative(sys.executable)} -m chronomem.cli.main"


def _relative(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return path
    return path if rel.startswith("..") else rel
