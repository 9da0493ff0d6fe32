"""The published test files of the frameworks chronomem plugs into, fetched at test time.

A framework's own tests are run against chronomem's adapter, never copied into this repository:
the source distribution of the installed version is downloaded from the package index
(``pip download --no-binary :all:``) and unpacked into a cache (``CHRONOMEM_SUITES_CACHE``,
default ``~/.cache/chronomem/suites``), once per version.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

__all__ = ["Unavailable", "cache_dir", "sources"]


class Unavailable(Exception):
    """The source distribution cannot be had here (no index reachable, no such release)."""


def cache_dir() -> Path:
    configured = os.environ.get("CHRONOMEM_SUITES_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "chronomem" / "suites"


def sources(distribution: str) -> Path:
    """The unpacked source distribution of the installed version of ``distribution``."""
    try:
        version = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError as exc:
        raise Unavailable(f"{distribution} is not installed") from exc
    target = cache_dir() / f"{distribution}-{version}"
    done = target / ".unpacked"
    if done.exists():
        return Path(done.read_text().strip())
    with tempfile.TemporaryDirectory(prefix="chronomem-suite-") as tmp:
        fetched = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary",
             ":all:", f"{distribution}=={version}", "-d", tmp],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        archives = sorted(Path(tmp).glob("*.tar.gz"))
        if fetched.returncode != 0 or not archives:
            raise Unavailable(
                f"cannot download the source distribution of {distribution}=={version}: "
                f"{fetched.stderr.strip().splitlines()[-1:] or fetched.stdout.strip()}"
            )
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        with tarfile.open(archives[0]) as archive:
            archive.extractall(target, filter="data")
    roots = [p for p in target.iterdir() if p.is_dir() and (p / "tests").is_dir()]
    if len(roots) != 1:
        raise Unavailable(f"{distribution}=={version}'s source distribution has no tests/")
    done.write_text(str(roots[0]))
    return roots[0]
