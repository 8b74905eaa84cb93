"""Benchmark: lakefresh against what dbt-spark users write, on the same batches in one session.

The data of `bench_key.py` (a ROWS-key initial load, then batches of 1 % and 10 %: half changes of
existing keys with a newer date, half new keys). dbt runs in this process through its Python API
with dbt-spark's `session` method, so every path uses the same SparkSession, catalog and settings
(bench/peers/dbt holds the dbt project):

- `key`: lakefresh's `key` strategy against dbt's incremental model with `incremental_strategy:
  merge` and `unique_key: id` on an Iceberg table (models/target.sql), each batch one `dbt run`;
- `scd2`: lakefresh's `scd2` strategy against `dbt snapshot` (check strategy on every column,
  `hard_deletes: invalidate`; snapshots/history.sql) and against the hand-written one-MERGE SCD2
  of `bench_scd2.py`. A snapshot reads the source's whole current state, so dbt's input for a
  batch is the initial load with the batch applied, as the source system would hold it; lakefresh
  and the MERGE read the batch.

Each strategy also gets the floor of `bench_key.py` / `bench_scd2.py` (the least any
implementation of it does per batch: the status lookup plus the one MERGE), so that a peer that
beats lakefresh can be set against what no implementation of lakefresh's strategy can go under.

Both write modes with `--write-mode` (dbt gets the same table properties through
`tblproperties`). Medians over rounds, after a warm-up round of every path, go to stdout and
bench/results/peers[_merge_on_read].json, with each ratio twice: of the medians (the issue's
measure) and the median of the rounds' own ratios (`_paired`: the paths of a round run one after
another, so a slow spell of the machine moves both sides of a round's ratio).

Usage (dbt needs a virtual environment of its own: `make bench-peers` makes .venv-peers):
    python bench/bench_peers.py [--rows N] [--rounds R] [--write-mode copy-on-write|merge-on-read]
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_key import (
    CATALOG,
    CHANGE_BATCHES,
    HERE,
    KEY_STRATEGY,
    TABLE_PROPERTIES,
    arguments,
    generate,
    hand_written_same_table,
    measure,
    with_lakefresh,
    workspace,
    write_report,
)
from bench_scd2 import SCD2_STRATEGY
from bench_scd2 import hand_written as union_merge

PROJECT = HERE / "peers" / "dbt"


def dbt(work: Path, command: str, variables: dict[str, Any]) -> None:
    """One dbt command on this process's SparkSession (dbt-spark's `session` method)."""
    from dbt.cli.main import dbtRunner

    out = Path(tempfile.mkdtemp(prefix="dbt-", dir=work))
    args = [
        command,
        "--project-dir",
        str(PROJECT),
        "--profiles-dir",
        str(PROJECT),
        "--target-path",
        str(out / "target"),
        "--log-path",
        str(out / "logs"),
        "--vars",
        json.dumps({**variables, "tblproperties": {"format-version": "2", **TABLE_PROPERTIES}}),
        "--quiet",
        *(["--select", "history"] if command == "snapshot" else []),  # snapshots/people.sql: the tests'
    ]
    result = dbtRunner().invoke(args)
    if not result.success:
        raise SystemExit(f"dbt {command} failed: {result.exception or result.result}")


def in_default_catalog(spark) -> None:  # type: ignore[no-untyped-def]
    """dbt-spark names tables `schema.table`, in the session's current catalog: the benchmark's
    Iceberg catalog is made that one while dbt runs (lakefresh names its catalog in every table
    name, so it is not affected). dbt-spark's snapshot macro is adapted to a catalog without
    views in peers/dbt/macros/snapshot_staging.sql."""
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.default")
    spark.sql(f"USE {CATALOG}.default")


def dbt_batches(spark, work: Path, command: str, namespace: str, variable: str, inputs) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """`dbt <command>` per change batch, the dbt variable `variable` naming its input (`run`: the
    batch for the incremental model; `snapshot`: the source's state), the initial one untimed."""
    in_default_catalog(spark)
    dbt(work, command, {"schema": namespace, variable: str(inputs["b000_initial"])})
    keys = spark.read.parquet(str(inputs["b000_initial"])).select("id")
    times = {}
    for name in CHANGE_BATCHES:
        start = time.perf_counter()
        dbt(work, command, {"schema": namespace, variable: str(inputs[name])})
        times[name] = time.perf_counter() - start
        # untimed: dbt did what it should (a dbt that cannot see its table rebuilds it instead)
        keys = keys.union(spark.read.parquet(str(inputs[name])).select("id"))
        table, where = ("target", "TRUE") if command == "run" else ("history", "dbt_valid_to IS NULL")
        found = spark.table(f"{CATALOG}.{namespace}.{table}").where(where).count()
        if found != keys.distinct().count():
            raise SystemExit(f"dbt {command} of {name}: {found} current rows, not one per key")
    return times


def source_states(spark, work: Path, files: dict[str, Path]) -> dict[str, Path]:  # type: ignore[no-untyped-def]
    """The source system's current state after each batch (the previous state with the batch's
    rows replacing those of their keys), as Parquet: what `dbt snapshot` reads."""
    states = {"b000_initial": files["b000_initial"]}
    state = spark.read.parquet(str(files["b000_initial"]))
    for name in CHANGE_BATCHES:
        batch = spark.read.parquet(str(files[name]))
        state = state.join(batch.select("id"), "id", "left_anti").unionByName(batch)
        out = work / "states" / name
        state.write.mode("overwrite").parquet(str(out))
        states[name] = out
        state = spark.read.parquet(str(out))
    return states


def medians(measured: dict[str, dict[str, list[float]]], ours: str, others: list[str]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for name in CHANGE_BATCHES:
        mine = statistics.median(measured[ours][name])
        row: dict[str, Any] = {f"{ours}_s": round(mine, 3), f"{ours}_rounds": measured[ours][name]}
        for other in others:
            theirs = statistics.median(measured[other][name])
            row[f"{other}_s"] = round(theirs, 3)
            row[f"{other}_rounds"] = measured[other][name]
            row[f"{other}_over_{ours}"] = round(theirs / mine, 3)
            # each round runs every path one after another (bench_key.measure), so a round's
            # ratio sees the machine at one moment: their median is less moved by a slow spell
            # than the ratio of the medians, when the machine's speed drifts between rounds
            paired = [t / m for t, m in zip(measured[other][name], measured[ours][name], strict=True)]
            row[f"{other}_over_{ours}_paired"] = round(statistics.median(paired), 3)
        summary[name] = row
    return summary


def main() -> int:
    args = arguments(__doc__)
    with workspace("lakefresh-bench-peers-") as (work, spark):
        files = generate(spark, work, args.rows, args.keys)
        states = source_states(spark, work, files)
        key_paths = {
            "lakefresh_key": lambda r: with_lakefresh(spark, f"lfk_{r}", work, files, KEY_STRATEGY),
            "dbt_merge": lambda r: dbt_batches(spark, work, "run", f"dbtm_{r}", "batch", files),
            "floor": lambda r: hand_written_same_table(spark, f"floor_{r}", files, with_status=True),
        }
        scd2_paths = {
            "lakefresh_scd2": lambda r: with_lakefresh(spark, f"lfs_{r}", work, files, SCD2_STRATEGY),
            "union_merge": lambda r: union_merge(spark, f"union_{r}", files),
            "scd2_floor": lambda r: union_merge(spark, f"sfloor_{r}", files, with_status=True),
            "dbt_snapshot": lambda r: dbt_batches(spark, work, "snapshot", f"dbts_{r}", "state", states),
        }
        key = measure(key_paths, args.rounds)
        scd2 = measure(scd2_paths, args.rounds)
        summary = {
            "key": medians(key, "lakefresh_key", ["dbt_merge", "floor"]),
            "scd2": medians(scd2, "lakefresh_scd2", ["union_merge", "dbt_snapshot", "scd2_floor"]),
        }
        write_report("peers" if args.keys == "spread" else f"peers_{args.keys}", args, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
