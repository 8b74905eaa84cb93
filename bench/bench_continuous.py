"""Benchmark: one process running a pipeline of many tables again and again (`--continuous`, the
Python API): does a continuous pipeline over ten tables spend most of its interval on
bookkeeping?

A pipeline of TABLES `key` tables, each reading CSV files of its own folder. After a first run
(one 5-row batch per table, not timed), each round times four runs:

- `nothing_new`: no table has a new file;
- `one_table`: one table (a different one each round) has one new 5-row file;
- `every_table`: every table has one new 5-row file;
- `new_process`: nothing new, run by a new `Pipeline` of the same file, as a scheduled
  `lakefresh run` does in a process of its own (the JVM's and the session's start aside).

Besides the seconds, each run's reads of the `batches` log are counted (the queries of
state/reads.py): a process whose only writes to the log are its own appends should read none.
The `floor` of a run with nothing new is what any implementation must do to find that: list
each table's folder (the listing lakefresh makes, `Storage.list`) and look up each target's and
the log's current snapshot (metadata, no Spark job). Results: stdout and
bench/results/continuous.json.

Usage: python bench/bench_continuous.py [--tables N] [--rounds R]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench_key import CATALOG, save_report, workspace

KINDS = ("nothing_new", "one_table", "every_table", "new_process")


def pipeline_text(work: Path, tables: int) -> str:
    schema = "{id: int, name: string, updated_at: date}"
    listed = "\n".join(
        f"""  - name: t{i}
    source: {{kind: files, path: {work / f"in{i}"}, format: csv, schema: {schema}}}
    strategy: {{kind: key, keys: [id], date_column: updated_at}}"""
        for i in range(tables)
    )
    catalog = f"catalog: {{name: {CATALOG}, control_namespace: cont_ctl}}\n"
    return f"{catalog}defaults: {{namespace: cont}}\ntables:\n{listed}\n"


class Feed:
    """Each table's folder, and a new 5-row file in it on demand (its keys changed each time)."""

    def __init__(self, work: Path, tables: int) -> None:
        self.folders = [work / f"in{i}" for i in range(tables)]
        for folder in self.folders:
            folder.mkdir()
        self.files = 0

    def add(self, table: int) -> None:
        self.files += 1
        day = 1 + self.files % 28
        rows = "".join(
            f"{k},n{self.files},2025-01-{day:02d}\n" for k in range(self.files % 7, self.files % 7 + 5)
        )
        (self.folders[table] / f"b{self.files:05d}.csv").write_text("id,name,updated_at\n" + rows)


def counting_log_reads(spark: Any) -> list[int]:
    """A counter of the queries state/reads.py makes of the `batches` log (SparkSession.sql
    wrapped: the queries still run)."""
    from pyspark.sql import SparkSession

    from lakefresh.state.reads import LOG_READS

    count = [0]
    original = SparkSession.sql

    def sql(self: Any, query: str, *args: Any, **kwargs: Any) -> Any:
        if query.startswith(LOG_READS):
            count[0] += 1
        return original(self, query, *args, **kwargs)

    SparkSession.sql = sql  # type: ignore[method-assign]
    return count


def floor(pipeline: Any) -> float:
    """A run with nothing new, as little as any implementation does: each table's folder listed,
    each target's and the log's current snapshot looked up."""
    from lakefresh.lakehouse.storage import storage_for

    start = time.perf_counter()
    storage = storage_for(pipeline.spark)
    for table in pipeline.config.tables:
        storage.list(table.source.path)
        pipeline.backend.latest(f"cont.{table.name}")
        pipeline.backend.latest(pipeline.control.batches)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tables", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    from lakefresh.api import Pipeline
    from lakefresh.config.loader import parse, validate

    with workspace("lakefresh-bench-continuous-") as (work, spark):
        feed = Feed(work, args.tables)
        config = validate(parse(pipeline_text(work, args.tables), "bench"), "bench")
        pipeline = Pipeline(config, work, spark=spark)
        for i in range(args.tables):
            feed.add(i)
        start = time.perf_counter()
        assert pipeline.run().ok
        first = time.perf_counter() - start
        assert pipeline.run().ok  # the first run found no log to keep its reads of
        reads = counting_log_reads(spark)
        seconds: dict[str, list[float]] = {k: [] for k in (*KINDS, "floor")}
        log_reads: dict[str, list[int]] = {k: [] for k in KINDS}
        for r in range(args.rounds):
            for kind, tables in zip(KINDS, ([], [r % args.tables], range(args.tables), []), strict=True):
                for i in tables:
                    feed.add(i)
                runs = Pipeline(config, work, spark=spark) if kind == "new_process" else pipeline
                before, start = reads[0], time.perf_counter()
                result = runs.run()
                seconds[kind].append(time.perf_counter() - start)
                log_reads[kind].append(reads[0] - before)
                assert result.ok and len(result.batches) == len(tables), result.to_dict()
            seconds["floor"].append(floor(pipeline))
            print(f"round {r}: " + ", ".join(f"{k} {v[-1]:.2f}s" for k, v in seconds.items()))
        report = {
            "tables": args.tables,
            "rounds": args.rounds,
            "cores": 2,
            "first_run_s": round(first, 3),
            "runs": {
                k: {
                    "seconds": [round(s, 3) for s in v],
                    "median_s": round(statistics.median(v), 3),
                    **({"log_reads": log_reads[k]} if k in log_reads else {}),
                }
                for k, v in seconds.items()
            },
        }
        report["nothing_new_to_floor"] = round(
            statistics.median(seconds["nothing_new"]) / statistics.median(seconds["floor"]), 2
        )
        save_report("continuous", report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
