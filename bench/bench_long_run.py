"""Benchmark: does the cost of a batch stay flat as a pipeline runs for long?

A `key` table takes BATCHES tiny CSV batches (5 rows each), one `pipeline.run()` per batch, as a
continuous pipeline would. The script reports the median seconds per batch over each window of
WINDOW batches, and the files in the `batches` control table at the end. A per-batch cost that
grows with the number of batches already taken (the log's files, the lineage's length) shows as
rising medians.

Results go to stdout and bench/results/long_run.json.

Usage: python bench/bench_long_run.py [--batches N] [--window W]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from bench_key import CATALOG, save_report, workspace


def main() -> int:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--batches", type=int, default=150)
    parser.add_argument("--window", type=int, default=25)
    args = parser.parse_args()

    from lakefresh.api import Pipeline
    from lakefresh.config.loader import parse, validate

    with workspace("lakefresh-long-") as (work, spark):
        folder = work / "in"
        folder.mkdir()
        text = f"""
catalog: {{name: {CATALOG}, control_namespace: long_ctl}}
defaults: {{namespace: long}}
tables:
  - name: target
    source: {{kind: files, path: {folder}, format: csv, schema: {{id: int, v: int}}}}
    strategy: {{kind: key, keys: [id]}}
"""
        pipeline = Pipeline(validate(parse(text, "bench"), "bench"), work, spark=spark)
        seconds: list[float] = []
        windows = []
        for n in range(args.batches):
            rows = "".join(f"{(n * 7 + j) % 50},{n}\n" for j in range(5))
            (folder / f"b{n:06d}.csv").write_text("id,v\n" + rows, encoding="utf-8")
            start = time.perf_counter()
            result = pipeline.run()
            seconds.append(time.perf_counter() - start)
            if not result.ok:
                raise SystemExit(f"lakefresh failed: {result.to_dict()}")
            if (n + 1) % args.window == 0:
                median = statistics.median(seconds[-args.window :])
                windows.append({"batches": f"{n + 2 - args.window}-{n + 1}", "median_s": round(median, 3)})
                print(f"batches {windows[-1]['batches']}: median {median:.2f} s per batch", flush=True)
        report = {
            "batches": args.batches,
            "window": args.window,
            "cores": 2,
            "windows": windows,
            "batches_table_files": pipeline.backend.file_count("long_ctl.batches"),
        }
        save_report("long_run", report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
