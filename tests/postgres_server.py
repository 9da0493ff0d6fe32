"""A throwaway PostgreSQL cluster for the test run (issue: PostgreSQL store).

``CHRONOMEM_TEST_POSTGRES`` may name a server to use instead (a URL whose user may create
databases). Otherwise the PostgreSQL server binaries (``initdb``, ``pg_ctl``) found on ``PATH``,
through ``pg_config``, or under ``/usr/lib/postgresql/*/bin`` start a private cluster on
127.0.0.1, in a temporary directory, on a free port, with durability switched off (it is thrown
away); as root the cluster runs as the ``postgres`` user. Each test gets its own database
(``chronomem.stores.postgres.scratch_database``).
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from glob import glob
from pathlib import Path

__all__ = ["Unavailable", "server"]


class Unavailable(Exception):
    """No PostgreSQL server can be started or reached here."""


def _bindir() -> Path:
    for candidate in (shutil.which("initdb"), shutil.which("pg_ctl")):
        if candidate:
            return Path(candidate).parent
    with suppress(OSError, subprocess.CalledProcessError):
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=True)
        if (Path(out.stdout.strip()) / "initdb").exists():
            return Path(out.stdout.strip())
    found = sorted(glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True)
    if found:
        return Path(found[0]).parent
    raise Unavailable("no initdb found (install the PostgreSQL server binaries)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _cluster() -> Iterator[str]:
    bindir = _bindir()
    run_as: list[str] = []
    directory = Path(tempfile.mkdtemp(prefix="chronomem-pg-"))
    if os.geteuid() == 0:
        try:
            user = pwd.getpwnam("postgres")
        except KeyError as exc:
            raise Unavailable("running as root and there is no 'postgres' user") from exc
        os.chown(directory, user.pw_uid, user.pw_gid)
        run_as = ["runuser", "-u", "postgres", "--"]
    data, log, port = directory / "data", directory / "server.log", _free_port()

    def run(*args: str) -> None:
        done = subprocess.run([*run_as, *args], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise Unavailable(f"{' '.join(args[:2])} failed: {done.stderr.strip()}")

    try:
        run(str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust",
            "-E", "UTF8", "--no-sync")  # fmt: skip
        options = (
            f"-p {port} -k {directory} -c listen_addresses=127.0.0.1 -c fsync=off"
            " -c synchronous_commit=off -c full_page_writes=off -c max_connections=100"
        )
        run(str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(log), "-w",
            "-t", "60", "start")  # fmt: skip
        try:
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            with suppress(Unavailable, subprocess.TimeoutExpired):
                run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@contextmanager
def server() -> Iterator[str]:
    """The URL of a server's maintenance database, for the whole test session."""
    try:
        import psycopg  # noqa: F401
    except ImportError as exc:
        raise Unavailable("psycopg is not installed (pip install 'chronomem[postgres]')") from exc
    configured = os.environ.get("CHRONOMEM_TEST_POSTGRES")
    if configured:
        yield configured
        return
    with _cluster() as url:
        yield url
