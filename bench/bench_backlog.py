"""Benchmark: the fixed cost of a batch in a backlog, and where it goes.

A `key` table takes one 1-row batch, then BATCHES tiny CSV batches (5 rows each) wait in its
folder and one `pipeline.run()` takes them all, as after downtime. Each runner step (run/steps.py),
the reconciliation and the log's record at the table's end are timed, and so are the calls to
the control tables and the table backend; the script prints seconds per batch for each.
Results go to stdout and bench/results/backlog.json.

With --files N (the question: does a backlog of 100 ten-row files take at most 10x the time of
one such file?), each round makes a fresh table with a 1-row batch, then times a run that takes
one ten-row file, then a run that takes N such files waiting together (grouped, run/backlog.py), and,
with --alone, the same N files one commit each (`backlog.max_batches: 1`). Results go to
bench/results/backlog_files.json.

Usage: python bench/bench_backlog.py [--batches N]
       python bench/bench_backlog.py --files 100 [--rows 10] [--rounds 3] [--alone]
"""

from __future__ import annotations

import argparse
import collections
import functools
import sys
import time
from typing import Any

from bench_key import CATALOG, save_report, workspace

spent: collections.Counter[str] = collections.Counter()
calls: collections.Counter[str] = collections.Counter()


def timed(cls: Any, name: str) -> None:
    original = getattr(cls, name)

    @functools.wraps(original)
    def run(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent[f"{cls.__name__}.{name}"] += time.perf_counter() - start
            calls[f"{cls.__name__}.{name}"] += 1

    setattr(cls, name, run)


def instrument() -> None:
    from lakefresh.lakehouse.iceberg import IcebergBackend
    from lakefresh.run.bookkeeping import Bookkeeping
    from lakefresh.run.runner import Runner
    from lakefresh.run.steps import BatchSteps
    from lakefresh.state.control import ControlTables

    for name in ("record_attempt", "record_published", "published", "attempts", "tidy"):
        timed(ControlTables, name)
    for name in ("assess", "settle", "effective", "check_config"):
        timed(Bookkeeping, name)
    for name in ("stage", "publish", "head", "live_records", "published_batches"):
        timed(IcebergBackend, name)
    for name in ("read", "stage", "write", "audit", "record", "publish"):
        timed(BatchSteps, name)
    timed(Runner, "_record")


def main() -> int:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--batches", type=int, default=15)
    parser.add_argument("--files", type=int, default=0)
    parser.add_argument("--rows", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--alone", action="store_true")
    args = parser.parse_args()
    if args.files:
        return backlog_of_files(args.files, args.rows, args.rounds, args.alone)
    n_batches = args.batches

    from lakefresh.api import Pipeline
    from lakefresh.config.loader import parse, validate

    instrument()
    with workspace("lakefresh-backlog-") as (work, spark):
        folder = work / "in"
        folder.mkdir()
        text = f"""
catalog: {{name: {CATALOG}, control_namespace: backlog_ctl}}
defaults: {{namespace: backlog}}
tables:
  - name: target
    source: {{kind: files, path: {folder}, format: csv, schema: {{id: int, v: int}}}}
    strategy: {{kind: key, keys: [id]}}
"""
        pipeline = Pipeline(validate(parse(text, "bench"), "bench"), work, spark=spark)
        (folder / "b000.csv").write_text("id,v\n1,1\n", encoding="utf-8")
        assert pipeline.run().ok
        for n in range(1, n_batches + 1):
            rows = "".join(f"{(n * 7 + j) % 50},{n}\n" for j in range(5))
            (folder / f"b{n:03d}.csv").write_text("id,v\n" + rows, encoding="utf-8")
        spent.clear()
        calls.clear()
        start = time.perf_counter()
        result = pipeline.run()
        total = time.perf_counter() - start
        assert result.ok, result.to_dict()
        print(f"{n_batches} batches in one run: {total:.2f} s, {total / n_batches:.3f} s per batch")
        for name, seconds in spent.most_common():
            print(f"  {name:34s} {seconds / n_batches:7.3f} s per batch  ({calls[name]} calls)")
        report = {
            "batches": n_batches,
            "seconds": round(total, 3),
            "seconds_per_batch": round(total / n_batches, 3),
            "per_batch": {k: round(v / n_batches, 3) for k, v in spent.most_common()},
            "calls": dict(calls),
        }
        save_report("backlog", report)
    return 0


def backlog_of_files(files: int, rows: int, rounds: int, alone: bool) -> int:
    import statistics

    from lakefresh.api import Pipeline
    from lakefresh.config.loader import parse, validate

    def write(folder: Any, name: str, n: int) -> None:
        body = "".join(f"{(n * 13 + j) % 5000},{n}\n" for j in range(rows))
        (folder / name).write_text("id,v\n" + body, encoding="utf-8")

    timings: dict[str, list[float]] = {"one file": [], f"{files} files": []}
    if alone:
        timings[f"{files} files, one commit each"] = []
    with workspace("lakefresh-backlog-files-") as (work, spark):

        def pipeline(name: str, max_batches: int) -> Any:
            folder = work / name
            folder.mkdir()
            text = f"""
catalog: {{name: {CATALOG}, control_namespace: {name}_ctl}}
defaults: {{namespace: {name}, backlog: {{max_batches: {max_batches}}}}}
tables:
  - name: target
    source: {{kind: files, path: {folder}, format: csv, schema: {{id: int, v: int}}}}
    strategy: {{kind: key, keys: [id]}}
"""
            p = Pipeline(validate(parse(text, "bench"), "bench"), work, spark=spark)
            (folder / "b0000.csv").write_text("id,v\n1,1\n", encoding="utf-8")
            assert p.run().ok
            return p, folder

        def timed_run(p: Any, expected: int) -> float:
            start = time.perf_counter()
            result = p.run()
            seconds = time.perf_counter() - start
            assert result.ok and len(result.batches) == expected, result.to_dict()
            return seconds

        for r in range(rounds):
            p, folder = pipeline(f"bf{r}", 50)
            write(folder, "b0001.csv", 1)
            timings["one file"].append(timed_run(p, 1))
            for n in range(2, files + 2):
                write(folder, f"b{n:04d}.csv", n)
            timings[f"{files} files"].append(timed_run(p, files))
            if alone:
                q, other = pipeline(f"bfa{r}", 1)
                for n in range(2, files + 2):
                    write(other, f"b{n:04d}.csv", n)
                timings[f"{files} files, one commit each"].append(timed_run(q, files))
            print({k: [round(x, 2) for x in v] for k, v in timings.items()}, flush=True)
    medians = {k: statistics.median(v) for k, v in timings.items()}
    ratio = medians[f"{files} files"] / medians["one file"]
    for k, v in timings.items():
        print(f"  {k:32s} rounds {', '.join(f'{x:.2f}' for x in v)} s, median {medians[k]:.2f} s")
    print(f"  ratio {files} files / one file: {ratio:.2f} (target <= 10)")
    report = {
        "files": files,
        "rows_per_file": rows,
        "rounds": {k: [round(x, 3) for x in v] for k, v in timings.items()},
        "medians": {k: round(v, 3) for k, v in medians.items()},
        "ratio": round(ratio, 2),
    }
    save_report("backlog_files", report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
