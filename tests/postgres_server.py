"""A throwaway PostgreSQL cluster for the test run (issue: PostgreSQL store).

``CHRONOMEM_TEST_POSTGRES`` may name a server to use instead (a URL whose user may create
databases). Otherwise the PostgreSQL server binaries (``initdb``, ``pg_ctl``) found on ``PATH``,
through ``pg_config``, or under ``/usr/lib/postgresql/*/bin`` start a private cluster on
127.0.0.1, in a temporary directory, on a free port, with durability switched off (it is thrown
away); as root the cluster runs as the ``postgres`` user. Each test gets its own database
(``chronomem.stores.postgres.scratch_database``).

Debian's PostgreSQL has no pgvector, so the pre-selection tests start a second cluster from the
binaries the ``pgserver`` wheel bundles (PostgreSQL 16 with pgvector; a dev dependency), copied
to a directory the ``postgres`` user can read. ``CHRONOMEM_TEST_PGVECTOR`` may name a server with
the extension instead.
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
from importlib.util import find_spec
from pathlib import Path

__all__ = ["Cluster", "Unavailable", "cluster", "server"]


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


def _pgserver_binaries(directory: Path) -> Path:
    """pgserver's PostgreSQL (with pgvector) copied under ``directory``; its binaries find their
    libraries at ``../../../pgserver.libs``, so the layout is kept."""
    spec = find_spec("pgserver")  # located, not imported: importing it has side effects
    if spec is None or not spec.submodule_search_locations:
        raise Unavailable("pgserver is not installed (pip install pgserver)")
    package = Path(next(iter(spec.submodule_search_locations)))
    target = directory / "site"
    shutil.copytree(package / "pginstall", target / "pgserver" / "pginstall", symlinks=True)
    libs = package.parent / "pgserver.libs"
    if libs.is_dir():
        shutil.copytree(libs, target / "pgserver.libs", symlinks=True)
    bindir = target / "pgserver" / "pginstall" / "bin"
    if not (bindir / "initdb").exists():
        raise Unavailable(f"pgserver has no initdb under {package}")
    return bindir


class Cluster:
    """A private PostgreSQL cluster this process started: its URL, and ``stop`` / ``start`` for
    the tests that take the server away under a live workload."""

    def __init__(
        self, bindir: Path, directory: Path, run_as: list[str], *, durable: bool,
        port: int | None = None,
    ) -> None:  # fmt: skip
        self.bindir, self.data, self.run_as = bindir, directory / "data", run_as
        self.log, self.port = directory / "server.log", port or _free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        # Thrown away afterwards, so nothing needs to reach the disk; a durable cluster still
        # acknowledges a commit only once its WAL is written (a stop -m immediate, like a
        # crash, must not lose it), but skips fsync (the machine does not crash in a test).
        commit = "" if durable else " -c synchronous_commit=off"
        self.options = (
            f"-p {self.port} -k {directory} -c listen_addresses=127.0.0.1 -c fsync=off"
            f"{commit} -c full_page_writes=off -c max_connections=100"
        )

    def _run(self, *args: str) -> None:
        done = subprocess.run([*self.run_as, *args], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise Unavailable(f"{' '.join(args[:2])} failed: {done.stderr.strip()}")

    def init(self) -> None:
        self._run(str(self.bindir / "initdb"), "-D", str(self.data), "-U", "postgres",
                  "-A", "trust", "-E", "UTF8", "--no-sync")  # fmt: skip

    def start(self) -> None:
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-o", self.options,
                  "-l", str(self.log), "-w", "-t", "60", "start")  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        """``fast`` (clients disconnected, clean shutdown) or ``immediate`` (like a crash:
        recovery from the WAL on the next start)."""
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")


@contextmanager
def cluster(
    *, pgvector: bool = False, durable: bool = False, port: int | None = None
) -> Iterator[Cluster]:
    """A new cluster on 127.0.0.1 (on ``port``, default a free one), stopped and deleted
    afterwards."""
    run_as: list[str] = []
    directory = Path(tempfile.mkdtemp(prefix="chronomem-pg-"))
    try:
        bindir = _pgserver_binaries(directory) if pgvector else _bindir()
        if os.geteuid() == 0:
            try:
                user = pwd.getpwnam("postgres")
            except KeyError as exc:
                raise Unavailable("running as root and there is no 'postgres' user") from exc
            for path in (directory, *directory.rglob("*")):
                os.chown(path, user.pw_uid, user.pw_gid, follow_symlinks=False)
            run_as = ["runuser", "-u", "postgres", "--"]
        made = Cluster(bindir, directory, run_as, durable=durable, port=port)
        made.init()
        made.start()
        try:
            yield made
        finally:
            with suppress(Unavailable, subprocess.TimeoutExpired):
                made.stop("immediate")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@contextmanager
def server(*, pgvector: bool = False) -> Iterator[str]:
    """The URL of a server's maintenance database, for the whole test session; with
    ``pgvector``, of a server that has the pgvector extension."""
    try:
        import psycopg  # noqa: F401
    except ImportError as exc:
        raise Unavailable("psycopg is not installed (pip install 'chronomem[postgres]')") from exc
    configured = os.environ.get(
        "CHRONOMEM_TEST_PGVECTOR" if pgvector else "CHRONOMEM_TEST_POSTGRES"
    )
    if configured:
        yield configured
        return
    with cluster(pgvector=pgvector) as made:
        yield made.url
