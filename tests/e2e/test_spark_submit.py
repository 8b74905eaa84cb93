"""lakefresh as an application submitted with `spark-submit`, the way cluster
schedulers launch Spark jobs: `lakefresh submit-args` gives the pipeline's settings and the entry
point, spark-submit starts the driver on the master it is given (not the pipeline's), and the
run's JSON says what it applied."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cluster import submit_args

pytestmark = pytest.mark.e2e

PIPELINE = """\
catalog: {warehouse: ./warehouse}
spark: {master: "spark://127.0.0.1:1"}  # nothing listens there: spark-submit's --master must win
defaults: {namespace: shop}
tables:
  - name: customers
    source: {kind: files, path: in, format: csv, schema: {id: int, name: string}}
    strategy: {kind: key, keys: [id]}
"""


def test_a_pipeline_runs_under_spark_submit(tmp_path):
    import pyspark

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "b1.csv").write_text("id,name\n1,ann\n2,bob\n", encoding="utf-8")
    (tmp_path / "pipeline.yml").write_text(PIPELINE, encoding="utf-8")
    args = submit_args(tmp_path / "pipeline.yml")
    assert args.strip().endswith("__main__.py") and "--conf spark.sql.extensions=" in args
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    command = [
        str(submit),
        "--master",
        "local[1]",
        *shlex.split(args),
        "run",
        "pipeline.yml",
        "--output",
        "json",
    ]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    env["SPARK_HOME"] = str(submit.parent.parent)
    proc = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout[proc.stdout.index("{") :])
    assert result["ok"], result
    [table] = result["tables"]
    assert [b["counts"] for b in table["batches"]] == [{"N": 2}]
