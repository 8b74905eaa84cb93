"""`lakefresh run --continuous`: new batches are picked up every interval; SIGTERM stops the
loop after the commit in progress, with exit code 0."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

PIPELINE = """
catalog: {name: cont, warehouse: ./warehouse}
spark: {master: "local[2]", conf: {spark.sql.shuffle.partitions: "2"}}
tables:
  - name: t
    source: {kind: files, path: in, format: csv, schema: {id: int, city: string}}
    strategy: {kind: key, keys: [id]}
"""


def wait_for(
    proc: subprocess.Popen[str], text: str, seen: list[str], errors: list[str], timeout: float = 240
) -> None:
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            raise AssertionError(f"exited {proc.returncode}: {''.join(seen)}{''.join(errors)}")
        seen.append(line)
        if text in line:
            return
    raise AssertionError(f"no {text!r} in {''.join(seen)}{''.join(errors)}")


def test_new_batches_are_taken_each_interval_and_sigterm_stops_cleanly(tmp_path: Path):
    """The process's stderr is read as it comes (a full pipe would block the process, and its
    JVM, which shares it); if it does not stop, Python's faulthandler dumps where each of its
    threads stands (SIGABRT), and the failure shows it."""
    (tmp_path / "pipeline.yml").write_text(PIPELINE, encoding="utf-8")
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "b1.csv").write_text("id,city\n1,Oslo\n", encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "lakefresh.cli", "run", "pipeline.yml", "--continuous", "--interval", "1s"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"},
    )
    errors: list[str] = []
    reader = threading.Thread(target=lambda: errors.extend(proc.stderr), daemon=True)  # type: ignore[arg-type]
    reader.start()
    seen: list[str] = []
    try:
        wait_for(proc, "t: 1 batch(es) applied, ok", seen, errors)
        wait_for(proc, "t: 0 batch(es) applied, ok", seen, errors)  # the next cycle: nothing new
        (tmp_path / "in" / "b2.csv").write_text("id,city\n2,Rome\n", encoding="utf-8")
        wait_for(proc, "t: 1 batch(es) applied, ok", seen, errors)
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)  # faulthandler: every thread's stack to stderr
            proc.wait(timeout=30)
            reader.join(timeout=10)
            raise AssertionError(f"no exit 120 s after SIGTERM: {''.join(errors)[-6000:]}") from None
        assert code == 0, "".join(errors)[-6000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join(timeout=10)
    assert "SIGTERM: stopping after the commit in progress" in "".join(errors)
