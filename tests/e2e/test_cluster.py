"""The example pipeline on a Spark cluster and a shared catalog.

A standalone master and two one-core workers on loopback (tests/cluster.py), Iceberg's JDBC
catalog in a real PostgreSQL server, a warehouse folder every executor reaches. Six of the
example's tables (examples/orders), one for each kind of source and each layout it reads (CSV
files, day folders, a change feed of an Iceberg table, a Synapse Link export, a Delta table and
its change feed), run there on the data of the local run (`example_first_run`), the pipeline
changed in its `catalog:` and `spark:` sections only, as two lakefresh processes at once on
disjoint tables of the one catalog (each closed under its dependencies): one started as
`lakefresh run`, one through `spark-submit`. Both share the control tables and commit to them at
the same moments. The pipeline's own master is one nothing listens on: `lakefresh run` is given
the cluster's by LAKEFRESH_SPARK_MASTER, and spark-submit's `--master` must win over the
pipeline's. Every table must then equal the local run's, row for row. It is also the test of two
pipelines at once on one JDBC catalog. (The strategies' statements are the same on a cluster as
in a local session: the example's other tables, which differ from these in their strategy
alone, run in the local, lake and Spark Connect runs of it.)
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyspark
import pytest

from lakefresh.lakehouse.jars import postgresql_driver
from tests.cluster import EXECUTOR_MEMORY, StandaloneCluster, stop_group, submit_args
from tests.conftest import pipeline_settings_kept
from tests.example_run import EXAMPLE, batch_key, contents, table_names

pytestmark = pytest.mark.e2e

SPARK_SUBMIT = Path(pyspark.__file__).parent / "bin" / "spark-submit"
NOWHERE = "spark://127.0.0.1:1"  # the pipeline's master: nothing listens there

# the example's tables that run on the cluster, in two groups, each closed under `depends_on`
GROUPS = (
    ["customers", "customer_changes", "orders"],
    ["crm_accounts", "stock_levels", "stock_level_changes"],
)


@pytest.fixture(scope="module")
def cluster() -> Iterator[StandaloneCluster]:
    started = StandaloneCluster().start()
    try:
        yield started
    finally:
        started.stop()


def on_the_cluster(cluster: StandaloneCluster, postgres: Any) -> str:
    """The example's pipeline with its `catalog:` and `spark:` sections for the cluster: the JDBC
    catalog, a master nothing listens on (the cluster's is given another way), the driver jar,
    what an application may take of a worker, and the executors' Python from the pipeline (not
    from the environment)."""
    text = (EXAMPLE / "pipeline.yml").read_text(encoding="utf-8")
    sections = f"""\
catalog:
  name: cluster
  type: jdbc
  warehouse: ./warehouse
  properties:
    uri: "{postgres.url}"
    jdbc.user: lakefresh
    jdbc.schema-version: V1

spark:
  master: {NOWHERE}
  packages: ["{postgresql_driver()}"]
  conf:
    spark.sql.shuffle.partitions: "4"
    spark.executor.memory: {EXECUTOR_MEMORY}
    spark.cores.max: "1"
    spark.ui.enabled: "false"
    spark.pyspark.python: {sys.executable}

"""
    return text[: text.index("catalog:")] + sections + text[text.index("defaults:") :]


def start(command: list[str], cwd: Path, log: Path, **more: str) -> subprocess.Popen[bytes]:
    """A lakefresh process (in a session of its own, its stdout and stderr in files: two at once
    must never wait on a full pipe), without the tests' PYSPARK_* environment, with `more`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env["SPARK_HOME"] = str(SPARK_SUBMIT.parent.parent)
    env.update(more)
    with open(f"{log}.out", "wb") as out, open(f"{log}.err", "wb") as err:
        return subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=err, start_new_session=True)


def batch_ids(result: dict[str, Any]) -> dict[str, list[str]]:
    """Each table's batch ids, as two runs of the same batches share them."""
    out = {}
    for table in result["tables"]:
        out[table["table"]] = [batch_key(b["batch_id"]) for b in table["batches"]]
    return out


def test_the_example_on_a_cluster_and_a_jdbc_catalog_equals_the_local_run(
    cluster, postgres, example_first_run, spark, tmp_path
):
    folder = tmp_path / "example"
    shutil.copytree(example_first_run.data, folder / "data")  # the data the local run took
    (folder / "pipeline.yml").write_text(on_the_cluster(cluster, postgres), encoding="utf-8")
    only = [[arg for t in group for arg in ("--table", t)] for group in GROUPS]
    conf_args = submit_args(folder / "pipeline.yml")
    assert conf_args.strip().endswith("__main__.py") and "--conf spark.sql.extensions=" in conf_args
    cli = [sys.executable, "-m", "lakefresh.cli", "run", "pipeline.yml", "--output", "json", *only[0]]
    submit = [
        str(SPARK_SUBMIT),
        "--master",
        cluster.url,
        *shlex.split(conf_args),
        "run",
        "pipeline.yml",
        "--output",
        "json",
        *only[1],
    ]
    began = time.monotonic()
    logs = [tmp_path / "run", tmp_path / "submit"]
    run = start(cli, folder, logs[0], LAKEFRESH_SPARK_MASTER=cluster.url)  # the pipeline's is nowhere
    processes = [run, start(submit, folder, logs[1])]
    try:
        for process in processes:
            process.wait(timeout=900)
    finally:
        for process in processes:
            stop_group(process)  # a driver left running by a failure, and its JVM
    seconds = time.monotonic() - began
    tables: dict[str, list[str]] = {}
    for process, log in zip(processes, logs, strict=True):
        out, err = Path(f"{log}.out").read_text(), Path(f"{log}.err").read_text()
        said = [line for line in err.splitlines() if "Error" in line or "Exception:" in line][:20]
        assert process.returncode == 0, f"{out}\n" + "\n".join(said) + f"\n...\n{err[-1500:]}"
        result = json.loads(out[out.index("{") :])
        assert result["ok"], result
        tables |= batch_ids(result)
    ran = {t for group in GROUPS for t in group}
    local = batch_ids(example_first_run.result)
    assert tables == {t: ids for t, ids in local.items() if t.removesuffix("_history") in ran}
    assert {t.removesuffix("_history") for t in tables} == ran

    # both applications ran on the cluster's workers
    apps = cluster.finished_applications(2)
    assert len(apps) == 2, [(a.get("id"), a.get("state")) for a in cluster.applications()]

    from lakefresh.api import load_pipeline

    with pipeline_settings_kept(spark, folder / "pipeline.yml"):  # joining the session sets them
        pipeline = load_pipeline(folder / "pipeline.yml")  # and adds the JDBC catalog to it
        names = [n for n in table_names(pipeline) if n in tables]  # the customers' history too
        assert sorted(names) == sorted(tables)
        for name in names:
            assert contents(pipeline.table(name)) == example_first_run.tables[name], name
    print(f"the example on the cluster: {seconds:.0f} s (two processes at once)")
