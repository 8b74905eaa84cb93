"""`key` batches with duplicate keys: each row of bench_key.py's change batches comes with an
older twin (the same key, a day earlier, another city), so a 10 % batch holds 200,000 rows of
100,000 keys. lakefresh alone, in one process, with `spark.lakefresh.key.fastPath` true and
false alternated round by round (the hand-written MERGE and the floor refuse such a batch:
several source rows match one target row).

A batch with duplicate keys takes the materialized change set whatever `fastPath` says, because
this benchmark measured the judged MERGE (strategies/key/merge.py) slower for it; so the two columns now
measure the same road, and a change that lets such a batch take the judged MERGE again can be
measured against it.

    .venv/bin/python bench/bench_dups.py --rounds 4 [--rows N] [--write-mode merge-on-read]
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import statistics
import subprocess
from pathlib import Path

import bench_key as bk

HERE = Path(__file__).resolve().parent


def with_twins(spark, work: Path, files: dict[str, Path]) -> None:  # type: ignore[no-untyped-def]
    """Each change batch's rows, and an older twin of each, in one Parquet file in its place."""
    from pyspark.sql import functions as F

    for name in bk.CHANGE_BATCHES:
        df = spark.read.parquet(str(files[name]))
        older = df.withColumn("updated_at", F.col("updated_at") - F.expr("INTERVAL 1 DAY"))
        out = work / "twins" / name
        older.withColumn("city", F.lit("Older")).unionByName(df).coalesce(1).write.parquet(str(out))
        part = next(out.glob("*.parquet"))
        files[name].unlink()
        shutil.move(str(part), files[name])


def main() -> None:
    args = bk.arguments(__doc__)
    measured: dict[str, dict[str, list[float]]] = {"judged": {}, "materialized": {}}
    with bk.workspace("lfdups-") as (work, spark):
        files = bk.generate(spark, work, args.rows, args.keys)
        with_twins(spark, work, files)
        bk.with_lakefresh(spark, "warm", work, files)
        for r in range(args.rounds):
            order = ["judged", "materialized"] if r % 2 == 0 else ["materialized", "judged"]
            for road in order:
                spark.conf.set("spark.lakefresh.key.fastPath", str(road == "judged").lower())
                with contextlib.redirect_stdout(io.StringIO()):
                    times = bk.with_lakefresh(spark, f"d{r}_{road}", work, files)
                print(f"round {r}: {road} " + ", ".join(f"{k} {v:.2f}s" for k, v in times.items()))
                for k, v in times.items():
                    measured[road].setdefault(k, []).append(round(v, 2))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout
    report = {
        "rows": args.rows,
        "rounds": args.rounds,
        "write_mode": args.write_mode,
        "commit": commit.strip(),
        "seconds": measured,
        "medians": {road: {k: statistics.median(v) for k, v in d.items()} for road, d in measured.items()},
    }
    print(json.dumps(report["medians"], indent=2))
    (HERE / "results" / "key_duplicates.json").write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
