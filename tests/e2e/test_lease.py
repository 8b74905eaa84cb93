"""The run lease with real processes: a second `lakefresh run` of a pipeline whose tables another
run holds exits 75 with one line naming the table, the host and the pid of the holder, before it
reads or writes anything; `run --wait` goes on once the holder ends; a run killed with SIGKILL
keeps its lease until it expires, and then a waiting run takes it over and applies what the
killed one had staged, once.

One sequence of four runs: A holds the table, paused in a batch; B exits 75; C waits; A ends; C
takes the lease and is killed holding it; E takes it over. A and C, which are paused and killed,
are processes of their own (each start costs a JVM); B and E, whose exit code and output are
what is checked, run the CLI in the test's process, on the shared session."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import cli_in_process, pipeline_settings_kept
from tests.e2e.test_signals import wait_for, wait_until

pytestmark = pytest.mark.e2e

# seconds: C renews its lease every quarter of it, so the killed run's lease is still live for at
# least three quarters of it after the kill (read right after), and E then waits out the rest
TTL = 16
PIPELINE = f"""
catalog: {{name: lease_e2e, warehouse: ./warehouse}}
spark: {{master: "local[1]", conf: {{spark.sql.shuffle.partitions: "1"}}}}
defaults: {{namespace: shop, backlog: {{max_batches: 1}}}}
run: {{lease_ttl: {TTL}s}}
tables:
  - name: a
    source: {{kind: files, path: a, format: csv, schema: {{id: int}}}}
    strategy: {{kind: append}}
"""


def start(root: Path, name: str, *args: str, fault: str) -> subprocess.Popen[bytes]:
    """`lakefresh run pipeline.yml *args` in a process of its own, its output (stdout and
    stderr) in `<name>.log`, the test reading it while the process runs."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "LAKEFRESH_FAULTS": fault}
    with open(root / f"{name}.log", "wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "lakefresh.cli", "run", "pipeline.yml", *args],
            cwd=root,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own process group: SIGKILL reaches its JVM too
        )


def said(root: Path, name: str) -> str:
    return (root / f"{name}.log").read_text(encoding="utf-8", errors="replace")


def wait_to_say(root: Path, name: str, text: str, proc: subprocess.Popen[bytes]) -> None:
    wait_until(lambda: text in said(root, name), proc, f"said {text!r}", lambda: said(root, name))


def run_here(root: Path, spark, *args: str) -> tuple[int, str, str]:
    """`lakefresh run pipeline.yml *args` in this process, on the shared session (whose settings
    the pipeline's are kept from)."""
    with pipeline_settings_kept(spark, root / "pipeline.yml"):
        done = cli_in_process("run", "pipeline.yml", *args, cwd=root)
    return done.returncode, done.stdout, done.stderr


def ids(spark, root: Path) -> list[int]:
    location = root / "warehouse" / "shop" / "a"
    if not location.exists():
        return []
    return sorted(r.id for r in spark.read.format("iceberg").load(str(location)).collect())


def leases(spark, root: Path) -> list[tuple[str, int]]:
    rows = spark.read.format("iceberg").load(str(root / "warehouse" / "lakefresh" / "leases")).collect()
    return sorted((r.table_name, r.pid) for r in rows)


def test_a_second_run_stops_or_waits_and_a_killed_run_s_lease_expires(tmp_path, spark):
    (tmp_path / "pipeline.yml").write_text(PIPELINE, encoding="utf-8")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "a1.csv").write_text("id\n1\n", encoding="utf-8")
    go_a, go_c = tmp_path / "go-a", tmp_path / "go-c"
    a = start(tmp_path, "a", fault=f"after_stage@a1.csv:pause={go_a}")
    # A holds the lease, its batch staged, not published
    wait_for(Path(f"{go_a}.paused"), a, lambda: said(tmp_path, "a"))
    (tmp_path / "a" / "a2.csv").write_text("id\n2\n", encoding="utf-8")  # after A listed a1 alone

    c = start(tmp_path, "c", "--wait", "5m", fault=f"after_stage@a2.csv:pause={go_c}")
    code, out, err = run_here(tmp_path, spark)  # B
    assert code == 75, (out, err)
    lines = [line for line in err.splitlines() if line.startswith("Error")]
    assert len(lines) == 1 and "Traceback" not in err, err  # one line, no trace
    assert lines[0].startswith("Error: another run holds shop.a since "), err
    assert f"started by {socket.gethostname()}/pid {a.pid} (" in lines[0] and "pipeline.yml" in lines[0]
    assert "wait for it with --wait" in lines[0]
    assert out.strip() == ""  # no table was started
    assert ids(spark, tmp_path) == []  # B changed nothing; A has not published yet

    wait_to_say(tmp_path, "c", "waiting for the lease: another run holds shop.a since ", c)
    go_a.touch()
    assert a.wait(timeout=300) == 0, said(tmp_path, "a")
    # C waited, then took the lease: it holds it, mid-batch
    wait_for(Path(f"{go_c}.paused"), c, lambda: said(tmp_path, "c"))
    assert ids(spark, tmp_path) == [1]
    assert leases(spark, tmp_path) == [("shop.a", c.pid)]
    os.killpg(c.pid, signal.SIGKILL)
    c.wait(timeout=60)
    assert leases(spark, tmp_path) == [("shop.a", c.pid)]  # the killed run's lease stays, until it expires

    code, out, err = run_here(tmp_path, spark, "--wait", "5m")  # E
    assert code == 0, (out, err)
    assert "a: 1 batch(es) applied, ok" in out, out  # a2, which C staged and never published
    assert ids(spark, tmp_path) == [1, 2]
    assert leases(spark, tmp_path) == []  # released at its end
    log = spark.read.format("iceberg").load(str(tmp_path / "warehouse" / "lakefresh" / "batches"))
    published = sorted(r.batch_id for r in log.where("status = 'published'").collect())
    assert published == ["a1.csv", "a2.csv"]
