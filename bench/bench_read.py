"""Benchmark: the driver's work to read a small batch, before its first Spark job.

A CSV batch (10 rows, one of them bad; columns id int, v string, ts timestamp, n int) and the same
rows as Parquet are read by lakefresh's `files` source: `source.read(ref)` builds the DataFrame of
the checked rows (the strict parse with its reasons, the records numbered by file and line) and
runs no job. What that costs is driver time in every batch, whatever its size: Python building
the plan, and a round trip to the JVM for each call PySpark makes (Py4J), each new DataFrame
analysed there. The script counts the round trips and times the read, in one session, after a
warm-up. Results: stdout and bench/results/read.json.

Usage: python bench/bench_read.py [--rounds R]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from bench_key import save_report, workspace

ROWS = "".join(f"{i},v{i},2025-01-0{1 + i % 9} 10:00:00,{i}\n" for i in range(9))
CSV = "id,v,ts,n\n" + ROWS + "x,bad,2025-01-02,3\n"  # the last row is bad: its id is no int
SCHEMA = "{id: int, v: string, ts: timestamp, n: int}"


class RoundTrips:
    """Counts Py4J's round trips from this process to the JVM."""

    def __init__(self) -> None:
        import py4j.clientserver as clientserver

        self.count = 0
        original = clientserver.ClientServerConnection.send_command

        def counted(connection, command):  # type: ignore[no-untyped-def]
            self.count += 1
            return original(connection, command)

        clientserver.ClientServerConnection.send_command = counted


def source_of(spark, work: Path, fmt: str):  # type: ignore[no-untyped-def]
    from lakefresh.api import load_pipeline
    from lakefresh.sources import SourceContext, make_source

    folder = work / fmt
    folder.mkdir()
    if fmt == "csv":
        (folder / "b1.csv").write_text(CSV, encoding="utf-8")
    else:
        spark.sql(
            "SELECT CAST(id AS INT) id, CONCAT('v', id) v, TIMESTAMP'2025-01-01 10:00:00' ts, "
            "CAST(id AS INT) n FROM range(10)"
        ).coalesce(1).write.parquet(str(work / "written"))
        (part,) = (work / "written").glob("part-*.parquet")
        part.rename(folder / "b1.parquet")
    path = work / f"{fmt}.yml"
    path.write_text(
        f"catalog: {{name: bench, warehouse: {work / 'warehouse'}}}\n"
        f"tables:\n- name: t\n  source: {{kind: files, path: {folder}, format: {fmt}, schema: {SCHEMA}}}\n"
        f"  strategy: {{kind: key, keys: [id], date_column: ts}}\n",
        encoding="utf-8",
    )
    pipeline = load_pipeline(path, spark=spark)
    table = pipeline.config.tables[0]
    return make_source(table.source, SourceContext.of(pipeline.config, pipeline.backend, str(work), table))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    trips = RoundTrips()
    report: dict[str, dict[str, float]] = {}
    with workspace("lakefresh-bench-read-") as (work, spark):
        for fmt in ("csv", "parquet"):
            source = source_of(spark, work, fmt)
            (ref,) = source.list_batches()
            for _ in range(5):  # warm-up
                source.read(ref, None)
            seconds, counts = [], []
            for _ in range(args.rounds):
                before, start = trips.count, time.perf_counter()
                source.read(ref, None)
                seconds.append(time.perf_counter() - start)
                counts.append(trips.count - before)
            report[fmt] = {
                "median_ms": round(statistics.median(seconds) * 1000, 1),
                "min_ms": round(min(seconds) * 1000, 1),
                "round_trips": statistics.median(counts),
            }
    save_report("read", {"rounds": args.rounds, "paths": report})
    return 0


if __name__ == "__main__":
    sys.exit(main())
