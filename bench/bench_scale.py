"""Benchmark: a batch's fixed cost, and whether cost follows the batch (`key`).

- `fixed`: a 10-row `key` batch (5 changes of keys spread over the id range, 5 new keys) into a
  ROWS-row merge-on-read target: lakefresh's `pipeline.run()` against the bare merge-on-read
  MERGE of the same 10 rows (`bench_key.hand_written`), and the floor (`bench_key`'s: the status
  lookup, then the same-table MERGE). Target: lakefresh <= 1.5x the bare MERGE.
- `scale`: a 1 % batch into a ROWS-row and into a 5 x ROWS-row target, lakefresh with the write
  mode it chooses itself (`write_mode: auto`: merge-on-read, since no change feed reads the
  table), and the floor at both sizes (the status lookup, then the same-table merge-on-read
  MERGE). Target: the larger <= 2x the smaller.

The data, session, warm-up round and rotation of `bench_key.py`; both figures of a ratio come
from the same run. Results: stdout and bench/results/fixed_cost.json, bench/results/scale.json
(`fixed_cost_<N>_rows.json`, `scale_<N>_rows.json` with `--rows N` other than 1,000,000).

Usage: python bench/bench_scale.py [--rows N] [--rounds R] [--only fixed|scale]
"""

from __future__ import annotations

import argparse
import statistics
import sys

import bench_key
from bench_key import (
    CHANGE_BATCHES,
    CHANGES,
    MERGE_ON_READ,
    TABLE_PROPERTIES,
    WRITE_MODE,
    generate,
    hand_written,
    hand_written_same_table,
    measure,
    save_report,
    with_lakefresh,
    workspace,
)


def batches(*changes: tuple[str, float, str, int]) -> None:
    """The change batches the next `generate` makes and the paths apply."""
    CHANGES[:] = list(changes)
    CHANGE_BATCHES[:] = [c[0] for c in changes]


def fixed(spark, work, rows: int, rounds: int) -> None:  # type: ignore[no-untyped-def]
    batches(("b001_10rows", 10 / rows, "2025-01-02", 2))
    TABLE_PROPERTIES.clear()
    TABLE_PROPERTIES.update(MERGE_ON_READ)
    WRITE_MODE[0] = "merge-on-read"
    files = generate(spark, work / "fixed", rows)
    measured = measure(
        {
            "lakefresh": lambda r: with_lakefresh(spark, f"fx_lf_{r}", work / "fixed", files),
            "merge": lambda r: hand_written(spark, f"fx_merge_{r}", files),
            # the least any `key` batch does: the status lookup, then the same-table MERGE
            "floor": lambda r: hand_written_same_table(spark, f"fx_floor_{r}", files, with_status=True),
        },
        rounds,
    )
    ours = statistics.median(measured["lakefresh"]["b001_10rows"])
    bare = statistics.median(measured["merge"]["b001_10rows"])
    floor = statistics.median(measured["floor"]["b001_10rows"])
    save_report(
        sized("fixed_cost", rows),
        {
            "rows": rows,
            "rounds": rounds,
            "batch_rows": 10,
            "write_mode": "merge-on-read",
            "lakefresh_rounds": measured["lakefresh"]["b001_10rows"],
            "merge_rounds": measured["merge"]["b001_10rows"],
            "floor_rounds": measured["floor"]["b001_10rows"],
            "lakefresh_s": round(ours, 3),
            "merge_s": round(bare, 3),
            "floor_s": round(floor, 3),
            "ratio": round(ours / bare, 3),
            "floor_ratio": round(floor / bare, 3),
            "ratio_to_floor": round(ours / floor, 3),
            "target": 1.5,
        },
    )


def scale(spark, work, rows: int, rounds: int) -> None:  # type: ignore[no-untyped-def]
    batches(("b001_1pct", 0.01, "2025-01-02", 2))
    TABLE_PROPERTIES.clear()
    TABLE_PROPERTIES.update(MERGE_ON_READ)  # the floor's tables; lakefresh's choose their own
    WRITE_MODE[0] = "auto"
    small = generate(spark, work / "small", rows)
    large = generate(spark, work / "large", rows * 5)
    measured = measure(
        {
            "small": lambda r: with_lakefresh(spark, f"sc_s_{r}", work / "small", small),
            "large": lambda r: with_lakefresh(spark, f"sc_l_{r}", work / "large", large),
            "small_floor": lambda r: hand_written_same_table(spark, f"sc_fs_{r}", small, with_status=True),
            "large_floor": lambda r: hand_written_same_table(spark, f"sc_fl_{r}", large, with_status=True),
        },
        rounds,
    )
    one = statistics.median(measured["small"]["b001_1pct"])
    five = statistics.median(measured["large"]["b001_1pct"])
    floor_one = statistics.median(measured["small_floor"]["b001_1pct"])
    floor_five = statistics.median(measured["large_floor"]["b001_1pct"])
    save_report(
        sized("scale", rows),
        {
            "rows": [rows, rows * 5],
            "rounds": rounds,
            "write_mode": "auto (merge-on-read)",
            "small_rounds": measured["small"]["b001_1pct"],
            "large_rounds": measured["large"]["b001_1pct"],
            "small_floor_rounds": measured["small_floor"]["b001_1pct"],
            "large_floor_rounds": measured["large_floor"]["b001_1pct"],
            "small_s": round(one, 3),
            "large_s": round(five, 3),
            "small_floor_s": round(floor_one, 3),
            "large_floor_s": round(floor_five, 3),
            "ratio": round(five / one, 3),
            "floor_ratio": round(floor_five / floor_one, 3),
            "target": 2.0,
        },
    )


def sized(name: str, rows: int) -> str:
    """A results file's name: `name` at the default 1,000,000 rows, else with the rows in it (a
    run on small tables keeps the issue's figures)."""
    return name if rows == 1_000_000 else f"{name}_{rows}_rows"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=["fixed", "scale"])
    args = parser.parse_args()
    with workspace("lakefresh-bench-scale-") as (work, spark):
        if args.only in (None, "fixed"):
            fixed(spark, work, args.rows, args.rounds)
        if args.only in (None, "scale"):
            scale(spark, work, args.rows, args.rounds)
    assert bench_key.CHANGE_BATCHES is CHANGE_BATCHES  # the paths read the lists changed in place
    return 0


if __name__ == "__main__":
    sys.exit(main())
