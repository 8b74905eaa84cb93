"""`lakefresh run --continuous`: new batches are picked up every interval, a cycle with nothing
new applies nothing; SIGTERM stops the loop after the commit in progress, with exit code 0. Two
processes run the one pipeline at once, so that their cycles overlap again and again."""

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


def stopped(proc: subprocess.Popen[str]) -> int | None:
    """Its exit code once SIGTERM stopped it; when it does not stop within 120 s, Python's
    faulthandler dumps where each of its threads stands (SIGABRT) into its output, then None."""
    try:
        return proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        return None


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
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"}
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
        codes = [stopped(proc) for proc in procs]
        for reader in readers:
            reader.join(timeout=10)
    for out, code in zip(printed, codes, strict=True):
        said = "".join(line for _, line in out)
        assert code == 0, said[-6000:]
        assert "SIGTERM: stopping after the commit in progress" in said, said[-6000:]
        assert "t: 0 batch(es) applied, ok" in said, said[-6000:]  # a cycle with nothing new
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
