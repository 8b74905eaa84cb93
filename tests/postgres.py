"""A throwaway PostgreSQL server for the tests of the `jdbc` source: Debian's `postgresql`
binaries, a cluster in a temporary folder on a free loopback port, trust authentication."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

USER = "lakefresh"


class Postgres:
    def __init__(self) -> None:
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
        if not found:
            raise FileNotFoundError("PostgreSQL server binaries (Debian package postgresql)")
        self.bin = Path(found[-1]).parent
        self.root = Path(tempfile.mkdtemp(prefix="lf-pg-"))
        self.data = self.root / "data"
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        # the server refuses to run as root: then it runs as Debian's postgres user
        self.as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self.as_user:
            shutil.chown(self.root, "postgres")

    @property
    def url(self) -> str:
        return f"jdbc:postgresql://127.0.0.1:{self.port}/postgres"

    def start(self) -> Postgres:
        self._run(self._server("initdb", "-D", str(self.data), "-U", USER, "--auth=trust", "-E", "UTF8"))
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        log = str(self.root / "server.log")
        self._run(self._server("pg_ctl", "-D", str(self.data), "-o", options, "-l", log, "-w", "start"))
        return self

    def stop(self) -> None:
        command = self._server("pg_ctl", "-D", str(self.data), "-m", "immediate", "stop")
        subprocess.run(command, capture_output=True, check=False)
        shutil.rmtree(self.root, ignore_errors=True)

    def _server(self, program: str, *args: str) -> list[str]:
        return [*self.as_user, str(self.bin / program), *args]

    def sql(self, text: str) -> str:
        """Run SQL with psql; returns its unaligned output."""
        psql = shutil.which("psql") or str(self.bin / "psql")
        command = [
            psql,
            "-h",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-U",
            USER,
            "-d",
            "postgres",
            "-v",
            "ON_ERROR_STOP=1",
            "-At",
            "-c",
            text,
        ]
        return self._run(command)

    @staticmethod
    def _run(command: list[str]) -> str:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(
                f"{' '.join(command[:3])}... failed: {done.stderr.strip() or done.stdout.strip()}"
            )
        return done.stdout
