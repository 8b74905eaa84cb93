"""Benchmark: a Delta batch's row count, from the version's checksum and from a replay of the log.

After each write (`DeltaBackend.stage`, alternately an append and a MERGE that deletes through a
deletion vector), the audit needs the new version's row count. It is timed the way lakefresh
answers it (`records_in` over the version's checksum: no Spark job) and the way it did before
(a bare count, which Delta plans from the files' statistics after replaying the log), on a
small table (the checksum lists up to 50 files). Results go to stdout and
bench/results/delta_lookups.json.

Usage: python bench/bench_delta_lookups.py [--rounds N]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench_key import FORMAT, arguments, save_report, workspace


def lookups(spark: Any, root: Path, name: str, rounds: int) -> dict[str, list[float]]:
    from lakefresh.lakehouse.backend import Layout
    from lakefresh.lakehouse.delta import DeltaBackend
    from lakefresh.lakehouse.delta.log import records_in

    backend = DeltaBackend(spark, str(root))
    df = spark.createDataFrame([(i, f"v{i}") for i in range(1000)], "id int, v string")
    backend.create(name, df.schema, Layout(write_mode="merge-on-read"))
    backend.stage(name, "b0", lambda: backend.append(name, df))
    seconds: dict[str, list[float]] = {k: [] for k in ("checksum", "replay")}
    for n in range(1, rounds + 1):
        if n % 2:
            backend.stage(name, f"b{n}", lambda: backend.append(name, df.limit(10)))
        else:
            merge = f"MERGE INTO {backend.qualified(name)} t USING (SELECT {n} AS id) s ON t.id = s.id"
            backend.stage(name, f"b{n}", lambda m=merge: spark.sql(m + " WHEN MATCHED THEN DELETE"))
        version = int(backend.latest(name) or 0)
        start = time.perf_counter()
        counted = records_in(backend._checksum(name, version))
        seconds["checksum"].append(time.perf_counter() - start)
        start = time.perf_counter()
        replayed = backend.read(name, version).count()
        seconds["replay"].append(time.perf_counter() - start)
        assert counted == replayed, (counted, replayed)
    return seconds


def main() -> None:
    args = arguments(__doc__)
    FORMAT[0] = "delta"
    conf = {"spark.sql.shuffle.partitions": "2"}
    with workspace("lakefresh-bench-delta-", conf) as (work, spark):
        root = work / "warehouse"
        lookups(spark, root, "bench.warm_up", 4)  # warm-up: the first writes compile what later ones run
        seconds = lookups(spark, root, "bench.t", args.rounds)
    summary = {
        k: {"rounds": [round(s, 4) for s in v], "median": round(statistics.median(v), 4)}
        for k, v in seconds.items()
    }
    summary["ratio"] = {"median": round(summary["replay"]["median"] / summary["checksum"]["median"], 1)}
    for key, value in summary.items():
        print(f"{key:9s} {value}")
    save_report("delta_lookups", {"rounds": args.rounds, "cores": 2, "lookups": summary})


if __name__ == "__main__":
    sys.exit(main())
