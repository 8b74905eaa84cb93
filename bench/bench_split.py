"""Benchmark: would a `key` batch written as two statements beat the one MERGE?

A MERGE with `WHEN NOT MATCHED ... INSERT` is an outer join of the whole target with the change
set, whose preserved side Spark cannot broadcast: every stored key (and, merge-on-read, its row
position) is shuffled. A MERGE of the matched rows alone is an inner join, which can broadcast
the change set; the new keys would then be appended. lakefresh already knows which rows are new
(its status lookup), so the split costs it no extra lookup; it would cost a second snapshot,
published with the first in one commit (a branch and a fast-forward), which this script does
not measure: what it measures is whether the two statements are faster than one at all.

Two paths on the same data, after bench_key.py's set-up (the same batches, rounds and warm-up):

- `floor`: bench_key's floor: the status counts, then the one MERGE (update and insert);
- `split`: the status lookup materialized with a flag per row (stored key or not), its counts,
  then `MERGE ... WHEN MATCHED THEN UPDATE` of the flagged rows (broadcast), then `INSERT` of the
  others: what the two-statement design must do at least.

Usage: python bench/bench_split.py [--rows N] [--rounds R] [--write-mode M]
Results: bench/results/split*.json
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import bench_key as bk


def split(spark, namespace: str, files: dict[str, Path]) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """The status lookup with a flag per row, a MERGE of the matched rows, an append of the rest."""

    def statements(table: str, name: str) -> str:
        source = f"(SELECT *, {bk.HASHED} AS h FROM parquet.`{files[name]}`)"
        stored = (
            f"(SELECT /*+ BROADCAST(b) */ t.id FROM {table} t "
            f"LEFT SEMI JOIN (SELECT id FROM parquet.`{files[name]}`) b ON t.id = b.id)"
        )
        flagged = spark.sql(
            f"SELECT s.*, k.id IS NOT NULL AS stored FROM {source} s LEFT JOIN {stored} k ON s.id = k.id"
        ).localCheckpoint()
        flagged.groupBy("stored").count().collect()  # the counts lakefresh reports
        flagged.createOrReplaceTempView("flagged")
        spark.sql(
            f"""MERGE INTO {table} t USING (SELECT /*+ BROADCAST(f) */ * FROM flagged f WHERE stored) s
            ON t.id = s.id
            {bk.same_table_update(name)}"""
        )
        return (
            f"INSERT INTO {table} SELECT id, name, email, amount, city, updated_at, h, updated_at, "
            f"'{name}' FROM flagged WHERE NOT stored"
        )

    return bk.timed_merges(spark, namespace, bk.same_table_initial(files), statements)


def main() -> int:
    args = bk.arguments(__doc__)
    with bk.workspace("lakefresh-bench-split-") as (work, spark):
        files = bk.generate(spark, work, args.rows, args.keys)
        paths = {
            "floor": lambda r: bk.hand_written_same_table(spark, f"floor_{r}", files, with_status=True),
            "split": lambda r: split(spark, f"split_{r}", files),
        }
        measured = bk.measure(paths, args.rounds)
        summary = {}
        for name in bk.CHANGE_BATCHES:
            floor = statistics.median(measured["floor"][name])
            two = statistics.median(measured["split"][name])
            summary[name] = {
                "floor_s": round(floor, 3),
                "floor_rounds": measured["floor"][name],
                "split_s": round(two, 3),
                "split_rounds": measured["split"][name],
                "split_over_floor": round(two / floor, 3),
            }
        millions, rest = divmod(args.rows, 1_000_000)
        suffix = "" if args.rows == 1_000_000 else f"_{millions}m" if not rest else f"_{args.rows}"
        bk.write_report(f"split{suffix}", args, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
