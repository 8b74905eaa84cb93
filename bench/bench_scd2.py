"""Benchmark: the `scd2` strategy against a hand-written SCD2 MERGE INTO of the same batches.

The same data as `bench_key.py` (a 1,000,000-key initial load, then batches of 1 % and 10 %: half
changes of existing keys with a newer date, half new keys), the same session and table properties:

- lakefresh: a pipeline with a `files` source (Parquet) and the `scd2` strategy (`sequence_by`
  the record date), with all of its bookkeeping: strict read, status codes, history recomputed
  for the touched keys, one staged MERGE, audit, control tables, publish;
- hand-written: the usual single-MERGE SCD2 (the "union" approach: every batch row once with its
  key to close the current version, once more with a NULL key to insert the new version when the
  hash differs), which handles neither late nor bunched events.

Each round loads fresh targets; the median per batch over rounds goes to stdout and
bench/results/scd2.json.

Usage: python bench/bench_scd2.py [--rows N] [--rounds R]
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from bench_key import (
    CHANGE_BATCHES,
    HASHED,
    arguments,
    count_statuses,
    generate,
    measure,
    timed_merges,
    with_lakefresh,
    workspace,
    write_report,
)

SCD2_STRATEGY = "{kind: scd2, keys: [id], sequence_by: updated_at}"


def hand_written(  # type: ignore[no-untyped-def]
    spark, namespace: str, files: dict[str, Path], with_status: bool = False
) -> dict[str, float]:
    """The union MERGE. `with_status`: first look up the current version of every batch key and
    count the batch's rows per status (N new key, O older than the current version, C changed,
    S/U unchanged). A correct SCD2 must make at least that lookup before it writes (a late event
    re-cuts stored history), so lookup plus MERGE is the least any implementation of the issue's
    `scd2` does per batch, on data where the union MERGE happens to be right."""

    def merge(table: str, name: str) -> str:
        source = f"(SELECT *, {HASHED} AS h FROM parquet.`{files[name]}`)"
        return f"""MERGE INTO {table} t
        USING (
          SELECT s.id AS merge_key, s.* FROM {source} s
          UNION ALL
          SELECT NULL AS merge_key, s.* FROM {source} s
          JOIN {table} c ON c.id = s.id AND c.is_current AND c._lf_hash <> s.h
        ) s
        ON t.id = s.merge_key AND t.is_current
        WHEN MATCHED AND t._lf_hash <> s.h THEN UPDATE SET
          t.valid_to = s.updated_at, t.is_current = false
        WHEN NOT MATCHED THEN INSERT
          (id, name, email, amount, city, updated_at, valid_from, valid_to, is_current, _lf_hash,
           _lf_batch_id)
          VALUES (s.id, s.name, s.email, s.amount, s.city, s.updated_at, s.updated_at, NULL, true,
           s.h, '{name}')"""

    return timed_merges(
        spark,
        namespace,
        f"SELECT *, updated_at AS valid_from, CAST(NULL AS timestamp) AS valid_to, true AS is_current, "
        f"{HASHED} AS _lf_hash, 'b000' AS _lf_batch_id FROM parquet.`{files['b000_initial']}`",
        merge,
        before=(lambda table, name: count_statuses(spark, table, files[name], "valid_from", "t.is_current"))
        if with_status
        else None,
    )


def main() -> int:
    args = arguments(__doc__)

    with workspace("lakefresh-bench-scd2-") as (work, spark):
        files = generate(spark, work, args.rows, args.keys)
        paths = {
            "lakefresh": lambda r: with_lakefresh(spark, f"lf_{r}", work, files, SCD2_STRATEGY),
            "merge": lambda r: hand_written(spark, f"merge_{r}", files),
            "floor": lambda r: hand_written(spark, f"floor_{r}", files, with_status=True),
        }
        measured = measure(paths, args.rounds)
        summary = {}
        for name in CHANGE_BATCHES:
            ours = statistics.median(measured["lakefresh"][name])
            bare = statistics.median(measured["merge"][name])
            floor = statistics.median(measured["floor"][name])
            summary[name] = {
                "lakefresh_s": round(ours, 3),
                "merge_s": round(bare, 3),
                "floor_s": round(floor, 3),
                "ratio": round(ours / bare, 3),
                "floor_ratio": round(floor / bare, 3),
            }
        write_report("scd2" if args.keys == "spread" else f"scd2_{args.keys}", args, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
