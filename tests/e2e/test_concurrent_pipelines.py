"""Two pipelines at once on one catalog (issue 14, item 9): separate lakefresh processes, each
refreshing its own tables, share the control tables of an Iceberg JDBC catalog kept in a real
PostgreSQL server. Neither run may fail because the other committed at the same moment."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lakefresh.lakehouse.jars import postgresql_driver

BATCHES = 6


def pipeline(root: Path, postgres, name: str) -> Path:
    folder = root / name
    for n in range(1, BATCHES + 1):
        path = folder / "in" / f"b{n}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"id,v\n{n},{name}{n}\n{n + 100},x\n", encoding="utf-8")
    yaml = f"""
catalog:
  name: shared
  type: jdbc
  warehouse: {root / "warehouse"}
  properties:
    uri: "{postgres.url}"
    jdbc.user: lakefresh
    jdbc.schema-version: V1
spark:
  master: local[1]
  packages: ["{postgresql_driver()}"]
  conf: {{spark.sql.shuffle.partitions: "1", spark.ui.enabled: "false"}}
defaults:
  namespace: {name}
tables:
  - name: t
    source: {{kind: files, path: {folder / "in"}, format: csv, schema: {{id: int, v: string}}}}
    strategy: {{kind: key, keys: [id]}}
  - name: log
    source: {{kind: files, path: {folder / "in"}, format: csv, schema: {{id: int, v: string}}}}
    strategy: {{kind: append}}
"""
    path = root / f"{name}.yml"
    path.write_text(yaml, encoding="utf-8")
    return path


@pytest.mark.e2e
def test_two_pipelines_sharing_one_catalogs_control_tables_both_finish(tmp_path, postgres, spark):
    files = [pipeline(tmp_path, postgres, name) for name in ("north", "south")]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "lakefresh.cli", "--debug", "run", str(f), "--output", "json"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for f in files
    ]
    deadline = time.monotonic() + 600
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=max(1, deadline - time.monotonic()))
        outputs.append((proc.returncode, out, err))
    for code, out, err in outputs:
        # the lines that say what failed, not only the end of a JVM stack trace
        said = [line for line in err.splitlines() if "Error" in line or "Exception:" in line][:20]
        assert code == 0, f"{out}\n" + "\n".join(said) + f"\n...\n{err[-1500:]}"

    from lakefresh.api import load_pipeline

    expected = [f"b{n}.csv" for n in range(1, BATCHES + 1)]
    for name, f in zip(("north", "south"), files, strict=True):
        p = load_pipeline(f)  # joins the tests' session, adding the JDBC catalog
        for table in ("t", "log"):
            log = sorted((r["batch_id"], r["status"]) for r in p.history(table))
            assert log == [(b, "published") for b in expected], (name, table)
        assert p.table("t").count() == 2 * BATCHES
