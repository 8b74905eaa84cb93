"""A throwaway Spark standalone cluster on loopback for the cluster test: a master and
two workers of one core each, started with the `spark-class` that pyspark ships, with their work
and log folders in a temporary folder. Stopped by the process ids it started (each in a process
group of its own, so the executors a worker launched stop with it)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

WORKERS = 2
WORKER_MEMORY = "1g"
# what an application may ask of it: an executor must fit a worker's memory, or the application
# waits for resources for ever (Spark says so only at INFO level)
EXECUTOR_MEMORY = "768m"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class StandaloneCluster:
    def __init__(self) -> None:
        import pyspark

        self.home = Path(pyspark.__file__).parent
        self.root = Path(tempfile.mkdtemp(prefix="lf-spark-cluster-"))
        self.port, self.ui_port = free_port(), free_port()
        self.processes: list[subprocess.Popen[bytes]] = []

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def start(self, timeout: float = 120) -> StandaloneCluster:
        try:
            self._start(timeout)
        except BaseException:  # whatever stopped it (Ctrl-C included): nothing stays running
            self.stop()
            raise
        return self

    def _start(self, timeout: float) -> None:
        env = {
            **os.environ,
            "SPARK_HOME": str(self.home),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOG_DIR": str(self.root / "logs"),
            "SPARK_WORKER_DIR": str(self.root / "work"),  # else inside pyspark's package folder
        }
        master = ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1"]
        self._spawn("master", [*master, "--port", str(self.port), "--webui-port", str(self.ui_port)], env)
        for n in range(WORKERS):
            worker = ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "1"]
            work = ["--memory", WORKER_MEMORY, "--work-dir", str(self.root / f"work{n}")]
            self._spawn(f"worker{n}", [*worker, *work, "--webui-port", str(free_port()), self.url], env)
        deadline = time.monotonic() + timeout
        while self.alive_workers() < WORKERS:
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.processes):
                raise RuntimeError(f"the standalone cluster did not start: see {self.root}/*.log")
            time.sleep(0.5)

    def _spawn(self, name: str, args: list[str], env: dict[str, str]) -> None:
        with open(self.root / f"{name}.log", "wb") as log:
            command = [str(self.home / "bin" / "spark-class"), *args]
            started = subprocess.Popen(
                command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.processes.append(started)

    def alive_workers(self) -> int:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=2) as answer:
                return int(json.load(answer).get("aliveworkers", 0))
        except (OSError, ValueError):  # not listening yet, or a half-written answer
            return 0

    def applications(self) -> list[dict[str, object]]:
        """The applications the master ran (finished ones included)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=2) as answer:
            state = json.load(answer)
        return [*state.get("activeapps", []), *state.get("completedapps", [])]

    def finished_applications(self, count: int, timeout: float = 60) -> list[dict[str, object]]:
        """The applications the master lists as FINISHED, waiting up to `timeout` seconds for
        `count` of them: the master learns that a driver has gone by a message of its own, so an
        application whose driver has just exited may still be listed as running for a moment."""
        deadline = time.monotonic() + timeout
        while True:
            finished = [a for a in self.applications() if a.get("state") == "FINISHED"]
            if len(finished) >= count or time.monotonic() > deadline:
                return finished
            time.sleep(0.5)

    def stop(self) -> None:
        for process in reversed(self.processes):  # workers (and their executors) first
            stop_group(process)
        shutil.rmtree(self.root, ignore_errors=True)


def stop_group(process: subprocess.Popen[Any]) -> None:
    """Stop a process started in a session of its own and whatever it started in it (a worker's
    executors, a driver's JVM): SIGTERM, up to 30 s for the process, then SIGKILL for the rest."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=30)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def submit_args(pipeline: Path) -> str:
    """What `lakefresh submit-args` prints for a pipeline: its settings as spark-submit's --conf
    and lakefresh's entry point."""
    return subprocess.run(
        [sys.executable, "-m", "lakefresh.cli", "submit-args", pipeline.name],
        cwd=pipeline.parent,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
