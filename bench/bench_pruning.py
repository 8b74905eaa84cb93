"""Benchmark: does the target's layout let a 1 % batch's MERGE touch fewer files?

A target of ROWS rows is written in one of three layouts, with small data files so that pruning
has files to skip (`--file-mb`, default 8):

- `random`: rows in no order, as a table written by many batches ends up: every file spans
  (almost) every key;
- `sorted`: `WRITE ORDERED BY id` (range distribution), so each file holds one slice of the keys;
- `bucketed`: `PARTITIONED BY bucket(16, id)`: a key's rows live in one of 16 partitions.

Then a copy-on-write MERGE of a 1 % batch, its keys `spread` over the whole range or the `recent`
(highest) ones, is timed, and the commit's summary says how many data files it rewrote: a MERGE
that prunes rewrites only the files that hold the batch's keys. Results go to stdout and
bench/results/pruning_<millions>m.json.

With `--lakefresh`, lakefresh's own path instead: a `key` target loaded and updated by
`pipeline.run()` with and without `sort_by: [id]` (bench/results/pruning_lakefresh_<m>m.json).

Usage: python bench/bench_pruning.py [--rows N] [--rounds R] [--file-mb M] [--lakefresh]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

from bench_key import CATALOG, save_report, workspace

LAYOUTS = {
    "random": ("", ""),
    "sorted": ("", "ALTER TABLE {t} WRITE ORDERED BY id"),
    "bucketed": ("PARTITIONED BY (bucket(16, id))", ""),
}


def people(spark: Any, ids: Any, day: int) -> Any:
    from pyspark.sql import functions as F

    return ids.select(
        F.col("id").cast("bigint").alias("id"),
        F.concat(F.lit("name-"), F.col("id")).alias("name"),
        (F.col("id") % 1000 / 10.0 + F.lit(day)).alias("amount"),
        F.lit(f"2025-01-{day:02d} 00:00:00").cast("timestamp").alias("updated_at"),
    )


def one_round(spark: Any, layout: str, keys: str, rows: int, file_mb: int, n: int) -> dict[str, float]:
    from pyspark.sql import functions as F

    table = f"{CATALOG}.prune.t_{layout}_{keys}_{n}"
    partitioned, after = LAYOUTS[layout]
    props = (
        f"'format-version'='2', 'write.target-file-size-bytes'='{file_mb * 1024 * 1024}', "
        "'write.merge.mode'='copy-on-write', 'write.distribution-mode'='range'"
    )
    spark.sql(
        f"CREATE TABLE {table} (id bigint, name string, amount double, updated_at timestamp) "
        f"USING iceberg {partitioned} TBLPROPERTIES ({props})"
    )
    if after:
        spark.sql(after.format(t=table))
    initial = people(spark, spark.range(rows), 1)
    if layout == "random":
        initial = initial.orderBy(F.rand(7))
    initial.writeTo(table).append()
    size = max(1, rows // 100)
    changed = (
        spark.range(rows).where(F.abs(F.hash("id", F.lit(n))) % 100 == 0)  # about 1 %, anywhere
        if keys == "spread"
        else spark.range(rows - size, rows)
    )
    people(spark, changed, 2).createOrReplaceTempView("batch")
    files = int(spark.sql(f"SELECT count(*) FROM {table}.files").first()[0])
    start = time.perf_counter()
    spark.sql(
        f"MERGE INTO {table} t USING batch s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    seconds = time.perf_counter() - start
    summary = spark.sql(f"SELECT summary FROM {table}.snapshots ORDER BY committed_at DESC LIMIT 1").first()[
        0
    ]
    spark.sql(f"DROP TABLE {table} PURGE")
    return {"seconds": seconds, "files": files, "rewritten": int(summary.get("deleted-data-files", 0))}


def with_lakefresh(rows: int, rounds: int, file_mb: int) -> dict[str, Any]:
    """lakefresh's own write path: a `key` target of ROWS rows loaded by lakefresh, then a 1 %
    batch of the newest keys (half updates, half new keys above them: `bench_key.py --keys
    recent`), copy-on-write, with and without `sort_by: [id]`."""
    import bench_key

    bench_key.CHANGES[:] = [("b001_1pct", 0.01, "2025-01-02", 2)]
    bench_key.CHANGE_BATCHES[:] = ["b001_1pct"]
    bench_key.WRITE_MODE[0] = "copy-on-write"
    size = f"properties: {{write.target-file-size-bytes: '{file_mb * 1024 * 1024}'}}\n"
    with workspace("lakefresh-pruning-lf-") as (work, spark):
        files = bench_key.generate(spark, work, rows, "recent")
        measured = bench_key.measure(
            {
                "lakefresh": lambda r: bench_key.with_lakefresh(
                    spark, f"plain_{r}", work, files, table_settings=size
                ),
                "lakefresh, sort_by: [id]": lambda r: bench_key.with_lakefresh(
                    spark, f"sorted_{r}", work, files, table_settings=size + "sort_by: [id]\n"
                ),
            },
            rounds,
        )
    return {
        path: {
            "seconds": [round(s, 2) for s in by_batch["b001_1pct"]],
            "median_seconds": round(statistics.median(by_batch["b001_1pct"]), 2),
        }
        for path, by_batch in measured.items()
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--file-mb", type=int, default=8)
    parser.add_argument(
        "--lakefresh",
        action="store_true",
        help="lakefresh's `key` strategy with and without `sort_by: [id]`, recent keys",
    )
    args = parser.parse_args()
    if args.lakefresh:
        found = with_lakefresh(args.rows, args.rounds, args.file_mb)
        save_report(
            f"pruning_lakefresh_{args.rows // 1_000_000}m",
            {"rows": args.rows, "rounds": args.rounds, "file_mb": args.file_mb, "paths": found},
        )
        return 0
    results: dict[str, Any] = {}
    with workspace("lakefresh-pruning-") as (_, spark):
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.prune")
        for keys in ("spread", "recent"):
            for layout in LAYOUTS:
                runs = [
                    one_round(spark, layout, keys, args.rows, args.file_mb, n) for n in range(args.rounds)
                ]
                name = f"{layout}, {keys} keys"
                results[name] = {
                    "seconds": [round(r["seconds"], 2) for r in runs],
                    "median_seconds": round(statistics.median(r["seconds"] for r in runs), 2),
                    "files": runs[-1]["files"],
                    "rewritten": [r["rewritten"] for r in runs],
                }
                print(name, results[name], flush=True)
    save_report(
        f"pruning_{args.rows // 1_000_000}m",
        {"rows": args.rows, "rounds": args.rounds, "file_mb": args.file_mb, "layouts": results},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
