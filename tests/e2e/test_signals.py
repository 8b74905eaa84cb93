"""Ctrl-C (SIGINT) and SIGTERM during `lakefresh run`, sent to a real process at several
moments: the batch in progress is committed (never reported as failed), no further batch or
table starts, one line says what was done and what was left, and the exit code is 128 + the
signal's number (130, 143). The next run goes on from there (in this process, on the shared
session: what it checks is the state the signalled process left)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import cli_in_process, pipeline_settings_kept

pytestmark = pytest.mark.e2e

PIPELINE = """
catalog: {name: CATALOG, warehouse: ./warehouse}
spark: {master: "local[1]", conf: {spark.sql.shuffle.partitions: "1"}}
defaults: {namespace: shop, backlog: {max_batches: 1}}
tables:
  - name: a
    source: {kind: files, path: a, format: csv, schema: {id: int}}
    strategy: {kind: append}
  - name: b
    source: {kind: files, path: b, format: csv, schema: {id: int}}
    strategy: {kind: append}
"""


def start(root: Path, catalog: str, fault: str | None = None) -> subprocess.Popen[str]:
    """The run, in a process of its own; its catalog named `catalog` (the next run joins the
    shared session, where each warehouse needs a catalog name of its own)."""
    (root / "pipeline.yml").write_text(PIPELINE.replace("CATALOG", catalog), encoding="utf-8")
    for table in ("a", "b"):
        (root / table).mkdir(exist_ok=True)
        for n in (1, 2):
            (root / table / f"{table}{n}.csv").write_text(f"id\n{n}\n", encoding="utf-8")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if fault:
        env["LAKEFRESH_FAULTS"] = fault
    return subprocess.Popen(
        [sys.executable, "-m", "lakefresh.cli", "run", "pipeline.yml"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,  # a terminal's Ctrl-C reaches the process group: here only lakefresh
    )


def wait_until(
    done: Callable[[], bool], proc: subprocess.Popen[Any], what: str, output: Callable[[], Any] | None = None
) -> None:
    """Until `done()`; fails when `proc` ends first (saying its `output`, by default what
    `communicate` gives) or after 240 s, saying it never did `what`."""
    deadline = time.monotonic() + 240
    while not done():
        assert proc.poll() is None, (output or proc.communicate)()
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.05)


def wait_for(path: Path, proc: subprocess.Popen[Any], output: Callable[[], Any] | None = None) -> None:
    """Until the fault point's pause file `path` appears (`wait_until`)."""
    wait_until(path.exists, proc, f"reached {path.name}", output)


def ids(spark, root: Path, table: str) -> list[int]:
    location = root / "warehouse" / "shop" / table
    if not location.exists():
        return []
    return sorted(r.id for r in spark.read.format("iceberg").load(str(location)).collect())


# Both signals have one handler (cli: `Stopping`): Ctrl-C at one moment and a scheduler's SIGTERM at
# the other check the handler's work and each signal's exit code.
@pytest.mark.parametrize(
    ("point", "signum", "a_after"),
    [
        ("after_stage@a1.csv", signal.SIGINT, [1]),  # during a batch: it is committed, a2 waits
        ("after_record@a2.csv", signal.SIGTERM, [1, 2]),  # between tables: b never starts
    ],
    ids=["sigint-during-a-batch", "sigterm-between-tables"],
)
def test_a_signal_stops_the_run_after_the_commit_in_progress(tmp_path, spark, point, signum, a_after):
    go = tmp_path / "go"
    proc = start(tmp_path, f"sig_{int(signum)}", f"{point}:pause={go}")
    wait_for(Path(f"{go}.paused"), proc)
    proc.send_signal(signum)
    time.sleep(0.5)
    go.touch()
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 128 + signum, out + err
    assert "FAILED" not in out and "Traceback" not in err, out + err
    name = signal.Signals(signum).name
    assert f"stopped by {name}: {len(a_after)} batch(es) applied; not started: b" in err, err
    assert (ids(spark, tmp_path, "a"), ids(spark, tmp_path, "b")) == (a_after, [])

    with pipeline_settings_kept(spark, tmp_path / "pipeline.yml"):  # a lease left would stop it
        again = cli_in_process("run", "pipeline.yml", cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert (ids(spark, tmp_path, "a"), ids(spark, tmp_path, "b")) == ([1, 2], [1, 2])
