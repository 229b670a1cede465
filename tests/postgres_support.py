"""A real PostgreSQL server for the tests: the system's package, started in a temporary folder.

``PostgresServer.start()`` runs ``initdb`` and ``pg_ctl start`` (as the ``postgres`` user via
``runuser`` when the tests run as root, which PostgreSQL refuses to run as) on a free loopback
port, with fsync off (the tests kill the service, never PostgreSQL). The run's pytest-xdist
workers share one server (``shared_server``: 400 connections, for both); each test gets a database
of its own (``new_database``), dropped afterwards. Without the package the PostgreSQL variants skip,
naming what to install, except under CI (``CI=true``), where they fail: CI must run them
(``.ci/run`` installs the package).
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from oppmodel.modeling.games.acpc.solved import cache_lock
from oppmodel.server.app import free_ports

MISSING = (
    "PostgreSQL is not installed (apt-get install postgresql; .ci/run installs it), so the "
    "PostgreSQL store is not tested here"
)


def find_bin() -> Path | None:
    """The folder of the installed PostgreSQL's server programs (``initdb``, ``pg_ctl``), or None.

    Debian keeps them off the PATH; its ``pg_config`` (from postgresql-common) names the newest
    installed version's folder."""
    pg_config = shutil.which("pg_config")
    if pg_config is not None:
        found = subprocess.run(
            [pg_config, "--bindir"], capture_output=True, text=True, check=False, timeout=30
        )
        folder = Path(found.stdout.strip())
        if found.returncode == 0 and (folder / "initdb").exists():
            return folder
    initdb = shutil.which("initdb")
    return None if initdb is None else Path(initdb).resolve().parent


class PostgresServer:
    """One PostgreSQL server in a temporary folder on 127.0.0.1; ``url(db)`` names a database."""

    def __init__(self, bin_dir: Path, folder: Path | None = None, port: int | None = None) -> None:
        """A new server's settings (``start`` it), or those of one already running in
        ``folder`` on ``port``."""
        self.bin = bin_dir
        self.folder = Path(tempfile.mkdtemp(prefix="oppmodel-pg-")) if folder is None else folder
        self.port = free_ports(1)[0] if port is None else port
        self._as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        # databases are named by process too: a shared server's processes make them side by side
        self._names = (f"t_{os.getpid()}_{n}" for n in itertools.count(1))

    def _run(self, *command: str) -> None:
        subprocess.run(
            [*self._as_postgres, *command], check=True, capture_output=True, text=True, timeout=60
        )

    def start(self) -> None:
        """initdb and start; raises CalledProcessError with PostgreSQL's own output."""
        if self._as_postgres:
            self.folder.chmod(0o755)
            shutil.chown(self.folder, "postgres", "postgres")
        self._run(
            str(self.bin / "initdb"), "-D", str(self.folder / "data"), "-U", "postgres",
            "--auth=trust", "--no-sync", "-E", "UTF8",
        )  # fmt: skip
        self.resume()

    def resume(self) -> None:
        """Start the initialised server (again, after ``pause``) and wait until it answers."""
        options = (
            f"-h 127.0.0.1 -p {self.port} -k {self.folder} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=400"
        )
        self._run(
            str(self.bin / "pg_ctl"), "-D", str(self.folder / "data"),
            "-l", str(self.folder / "log"), "-w", "-o", options, "start",
        )  # fmt: skip

    def pause(self) -> None:
        """Stop the server, keeping its data: its databases are unreachable until ``resume``."""
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.folder / "data"), "-m", "fast", "stop")

    def password_database(self, role: str, password: str) -> str:
        """A new database owned by a new role that logs in with ``password`` only (over TCP,
        scram-sha-256); returns its URL without the password."""
        import psycopg

        hba = self.folder / "data" / "pg_hba.conf"
        hba.write_text(f"host all {role} 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
        with psycopg.connect(self.url(), autocommit=True) as admin:
            admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
            admin.execute(f"CREATE DATABASE {role} OWNER {role}")
            admin.execute("SELECT pg_reload_conf()")
        return f"postgresql://{role}@127.0.0.1:{self.port}/{role}"

    def url(self, database: str = "postgres") -> str:
        """The URL of one of the server's databases."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """Create an empty database; returns its URL."""
        import psycopg

        name = next(self._names)
        with psycopg.connect(self.url(), autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def drop_database(self, url: str) -> None:
        """Drop a database made by ``new_database`` (connections still open are ended)."""
        import psycopg

        name = url.rsplit("/", 1)[1]
        with psycopg.connect(self.url(), autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def stop(self) -> None:
        """Stop the server and remove its folder."""
        try:
            data = str(self.folder / "data")
            self._run(str(self.bin / "pg_ctl"), "-D", data, "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


def shared_server(bin_dir: Path, run_folder: Path) -> PostgresServer:
    """The run's one server, whichever of its processes (pytest-xdist workers) asks first starts
    it, under a lock in ``run_folder``, the folder all of them share, where it notes the server
    for the others; ``stop_shared_server`` ends it when the run does."""
    record = run_folder / "postgres.json"
    with cache_lock(record):
        if record.exists():
            noted = json.loads(record.read_text())
            return PostgresServer(Path(noted["bin"]), Path(noted["folder"]), noted["port"])
        server = PostgresServer(bin_dir)
        server.start()
        noted = {"bin": str(server.bin), "folder": str(server.folder), "port": server.port}
        record.write_text(json.dumps(noted))
        return server


def stop_shared_server(run_folder: Path) -> None:
    """Stop the server ``shared_server`` started in ``run_folder``'s run, if one was."""
    record = run_folder / "postgres.json"
    if record.exists():
        noted = json.loads(record.read_text())
        PostgresServer(Path(noted["bin"]), Path(noted["folder"]), noted["port"]).stop()
