"""The example pipeline (examples/orders) through Spark Connect equals its classic run: the same
batches taken per table, and every table equal row for row: the Iceberg ones (histories and change
feeds included), the Delta target `stock_levels` and the change feed read from it
(`delta_changes`, through Delta's log read on the client's side: lakehouse/delta/sql.py). Both runs
are `lakefresh run` in processes of their own, on copies of the same generated data; the classic
one starts its own local Spark, the other is a Connect client of the tests' server; the tables are
read back by path through the server. Under `make test` the classic run is the example's first run
that the main run kept (tests/example_run.py, `kept_run`): its data, its JSON and its tables."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.example_run import EXAMPLE, ExampleRun, batch_key, contents, kept_run


def run_example(folder: Path, data: Path, remote: str | None) -> dict:
    folder.mkdir()
    shutil.copytree(data, folder / "data")  # copy2: the files keep their times
    shutil.copy(EXAMPLE / "pipeline.yml", folder)
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED")}
    if remote:
        env["SPARK_REMOTE"] = remote
    command = [sys.executable, "-m", "lakefresh", "run", "pipeline.yml", "--output", "json"]
    run = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return json.loads(run.stdout)


def taken(result: dict) -> dict[str, list[str]]:
    return {t["table"]: [batch_key(b["batch_id"]) for b in t["batches"]] for t in result["tables"]}


def read_back(spark, folder: Path) -> list[tuple]:
    """A table's `contents`, read by path through the server: a Delta table's by its log, an
    Iceberg table's by its metadata."""
    reader = spark.read.format("delta" if (folder / "_delta_log").is_dir() else "iceberg")
    return contents(reader.load(str(folder)))


def classic_run(tmp_path: Path, spark) -> ExampleRun:
    """The example's classic run: the one the main run kept, or else one made here in a process of
    its own on newly generated data, its tables read back by path through the server."""
    kept = kept_run()
    if kept is not None:
        return kept
    subprocess.run([sys.executable, str(EXAMPLE / "generate.py"), str(tmp_path / "data")], check=True)
    result = run_example(tmp_path / "classic", tmp_path / "data", None)
    shop = tmp_path / "classic" / "warehouse" / "shop"
    tables = {table: read_back(spark, shop / table) for table in taken(result)}
    return ExampleRun(tmp_path / "classic", tmp_path / "data", result, tables)


def test_the_example_through_spark_connect_equals_its_classic_run(spark, connect, tmp_path):
    classic = classic_run(tmp_path, spark)
    remote = run_example(tmp_path / "connect", classic.data, connect.url)
    assert remote["ok"] and classic.result["ok"]
    assert taken(remote) == taken(classic.result)
    assert len(taken(remote)) >= 10 and {"stock_levels", "stock_level_changes"} <= set(taken(remote))

    shop = tmp_path / "connect" / "warehouse" / "shop"
    differ = [table for table in taken(remote) if read_back(spark, shop / table) != classic.tables[table]]
    assert differ == []
