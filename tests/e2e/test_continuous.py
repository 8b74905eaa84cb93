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


# Iceberg's JDBC catalog in the tests' PostgreSQL, whose commit is a compare-and-swap in the
# database. The `hadoop` catalog cannot be shared by two processes: its commit checks that the
# next metadata file is absent, then renames onto it, and a local file system's rename replaces a
# file another process renamed there in between.
TWO_RUNS = """
catalog:
  name: two_runs
  type: jdbc
  warehouse: ./warehouse
  properties: {{uri: "{url}", jdbc.user: lakefresh, jdbc.schema-version: V1}}
spark:
  master: "local[1]"
  packages: ["{driver}"]
  conf: {{spark.sql.shuffle.partitions: "1"}}
defaults: {{namespace: shop}}
run: {{lease: false}}
tables:
  - name: t
    source: {{kind: files, path: in, format: csv, schema: {{id: int, city: string}}}}
    strategy: {{kind: append}}
"""


def test_two_processes_running_one_pipeline_at_once_apply_each_batch_once(tmp_path: Path, spark, postgres):
    """Two real processes run one pipeline continuously, started together, so that their cycles
    overlap again and again (a scheduler's overlap, many times): batches arrive one at a time and
    in bursts. An append target holds each batch's rows once, its lineage names each batch once,
    and the log holds each batch once as `published`, whatever the other run did meanwhile.
    The pipeline takes no lease (`run: {lease: false}`), which would keep the second process out
    (tests/e2e/test_lease.py): this is the guarantee without it, on a catalog whose commits are
    atomic between processes."""
    from lakefresh.lakehouse.jars import postgresql_driver

    pipeline = TWO_RUNS.format(url=postgres.url, driver=postgresql_driver())
    (tmp_path / "pipeline.yml").write_text(pipeline, encoding="utf-8")
    (tmp_path / "in").mkdir()
    command = [
        sys.executable,
        "-m",
        "lakefresh.cli",
        "run",
        "pipeline.yml",
        "--continuous",
        "--interval",
        "200ms",
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    procs = [
        subprocess.Popen(
            command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
        )
        for _ in range(2)
    ]
    printed: list[list[tuple[float, str]]] = [[], []]
    readers = [
        threading.Thread(
            target=lambda o=out, p=proc: o.extend((time.monotonic(), line) for line in p.stdout), daemon=True
        )  # type: ignore[union-attr]
        for out, proc in zip(printed, procs, strict=True)
    ]
    for reader in readers:
        reader.start()

    def cycled_since(moment: float, cycles: int = 1) -> bool:
        """Each process ended `cycles` cycles after `moment`. The first of them may have listed
        the source before `moment`; the second began after the first ended, so it listed after."""
        ended = [sum(t > moment and "batch(es) applied" in line for t, line in out) for out in printed]
        return min(ended) >= cycles

    batches = 12
    try:
        deadline = time.monotonic() + 240
        while not cycled_since(0) and time.monotonic() < deadline:
            time.sleep(0.1)
        for n in range(1, batches + 1):
            (tmp_path / "in" / f"b{n:02}.csv").write_text(f"id,city\n{n},c{n}\n", encoding="utf-8")
            if n % 3:  # one at a time, then in bursts of two
                time.sleep(0.6)
        last = time.monotonic()
        while not cycled_since(last, cycles=2) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert cycled_since(last, cycles=2), "".join(line for out in printed for _, line in out)[-6000:]
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
    from lakefresh.config.loader import validate_pipeline
    from lakefresh.lakehouse.iceberg.log import batch_ids
    from lakefresh.lakehouse.session import spark_settings

    config = validate_pipeline(tmp_path / "pipeline.yml")  # its catalog, on the tests' session
    catalog = "spark.sql.catalog.two_runs"
    for key, value in spark_settings(config.catalog, config.spark, tmp_path).items():
        if key == catalog or key.startswith(f"{catalog}."):
            spark.conf.set(key, value)
    target = spark.table("two_runs.shop.t")
    assert sorted(r.id for r in target.collect()) == list(range(1, batches + 1))
    ancestors = {
        r.snapshot_id for r in spark.table("two_runs.shop.t.history").collect() if r.is_current_ancestor
    }
    snapshots = sorted(spark.table("two_runs.shop.t.snapshots").collect(), key=lambda r: r.committed_at)
    lineage = [b for r in snapshots if r.snapshot_id in ancestors for b in batch_ids(r.summary)]
    assert sorted(lineage) == [f"b{n:02}.csv" for n in range(1, batches + 1)]
    log = spark.table("two_runs.lakefresh.batches")
    published = sorted(r.batch_id for r in log.where("status = 'published'").collect())
    assert published == [f"b{n:02}.csv" for n in range(1, batches + 1)]
