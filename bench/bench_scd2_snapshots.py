"""Benchmark: `scd2` over daily full snapshots, where few keys change a day.

KEYS keys (`id, name, city`), one full snapshot a day for DAYS days (its batch time that day at
00:00 UTC, the file's modification time), in each of which CHANGE of the keys (1 % by default)
have a new `city`; the rest are re-sent unchanged. One `pipeline.run()` per snapshot into an
Iceberg `scd2` table (`full_snapshots: true`, validity from the batch time, the write mode
lakefresh chooses), with `resent_rows` as given (`derive`, the default for full snapshots,
`record` or `skip`).

Per batch, from the snapshot it published (its summary): the rows it added, the position deletes
it added and removed (a data file's delete file is replaced by one that repeats its earlier
positions), and the table's position deletes after it; the table's live rows, the bytes of its
files, the entries of `_lf_events` (all rows, the most of one row, and their characters); and the
run's seconds (and its phases').
Results go to stdout and to bench/results/scd2_snapshots.json, one entry per `resent_rows` (a
run replaces its own entry).

Usage: python bench/bench_scd2_snapshots.py [--keys 2000] [--days 60] [--change 0.01]
       [--resent-rows derive|record|skip]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench_key import CATALOG, HERE, save_report, workspace

CITIES = ("Oslo", "Rome", "Kyiv", "Lima", "Bern", "Quito", "Milan", "Paris")
NAMESPACE = "snap"
END = ("live_rows", "data_bytes", "position_deletes", "events", "events_most", "events_chars")  # at the end


def snapshots(folder: Path, keys: int, days: int, change: float) -> None:
    """One CSV per day; a fixed seed picks each day's changed keys."""
    rng = random.Random(7)
    city = {k: CITIES[k % len(CITIES)] for k in range(keys)}
    start = datetime(2025, 1, 1, tzinfo=UTC)
    for day in range(days):
        if day:
            for k in rng.sample(range(keys), max(1, int(keys * change))):
                city[k] = CITIES[(CITIES.index(city[k]) + 1) % len(CITIES)]
        path = folder / f"s{day:03d}.csv"
        path.write_text("id,name,city\n" + "".join(f"{k},name-{k},{city[k]}\n" for k in range(keys)))
        when = (start + timedelta(days=day)).timestamp()
        os.utime(path, (when, when))


def table_figures(spark, version: int) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """What the batch's snapshot wrote, and what the table holds after it."""
    table = f"{CATALOG}.{NAMESPACE}.dim"
    [summary] = spark.sql(f"SELECT summary FROM {table}.snapshots WHERE snapshot_id = {version}").first()
    entries = "size(split(_lf_events, ','))"
    events = spark.sql(
        f"SELECT sum({entries}) AS n, max({entries}) AS most, sum(length(_lf_events)) AS text FROM {table}"
    ).first()
    return {
        "added_records": int(summary.get("added-records", 0)),
        "added_position_deletes": int(summary.get("added-position-deletes", 0)),
        "removed_position_deletes": int(summary.get("removed-position-deletes", 0)),
        "position_deletes": int(summary.get("total-position-deletes", 0)),
        "live_rows": spark.table(table).count(),
        "data_bytes": int(summary.get("total-files-size", 0)),  # data and delete files
        "events": int(events["n"] or 0),
        "events_most": int(events["most"] or 0),
        "events_chars": int(events["text"] or 0),
    }


def run(spark, work: Path, args: argparse.Namespace) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    from lakefresh.api import Pipeline
    from lakefresh.config.loader import parse, validate

    source, folder = work / "snapshots", work / "in"
    source.mkdir()
    folder.mkdir()
    snapshots(source, args.keys, args.days, args.change)
    setting = f", resent_rows: {args.resent_rows}"
    text = f"""
catalog: {{name: {CATALOG}, control_namespace: {NAMESPACE}_ctl}}
defaults: {{namespace: {NAMESPACE}}}
tables:
  - name: dim
    source: {{kind: files, path: {folder}, format: csv, schema: {{id: int, name: string, city: string}}}}
    strategy: {{kind: scd2, keys: [id], full_snapshots: true{setting}}}
"""
    pipeline = Pipeline(validate(parse(text, "bench"), "bench"), work, spark=spark)
    out = []
    for day in range(args.days):
        name = f"s{day:03d}.csv"
        (source / name).rename(folder / name)  # keeps its modification time: the batch time
        started = time.perf_counter()
        result = pipeline.run()
        seconds = time.perf_counter() - started
        if not result.ok:
            raise SystemExit(f"lakefresh failed: {result.to_dict()}")
        [batch] = result.batches
        assert batch.version is not None
        phases = {k: round(v, 2) for k, v in asdict(batch.seconds).items() if isinstance(v, float)}
        figures = {"day": day + 1, "seconds": round(seconds, 2), "phases": phases, "counts": batch.counts}
        figures |= table_figures(spark, batch.version)
        out.append(figures)
        print(json.dumps(figures), flush=True)
    return out


def main() -> int:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--keys", type=int, default=2000)
    parser.add_argument("--days", type=int, default=60)
    parser.add_argument("--change", type=float, default=0.01)
    parser.add_argument("--resent-rows", choices=["derive", "record", "skip"], default="derive")
    args = parser.parse_args()

    with workspace("lakefresh-bench-snapshots-") as (work, spark):
        batches = run(spark, work, args)
    later = batches[1:]  # the first snapshot loads every key
    entry = {
        "keys": args.keys,
        "days": args.days,
        "change": args.change,
        "cores": 2,
        "rows_added_per_batch_median": statistics.median(b["added_records"] for b in later),
        "position_deletes_per_batch_median": statistics.median(
            b["added_position_deletes"] - b.get("removed_position_deletes", 0) for b in later
        ),
        "seconds_per_batch_median": statistics.median(b["seconds"] for b in later),
        "seconds_first_10": statistics.median(b["seconds"] for b in later[:10]),
        "seconds_last_10": statistics.median(b["seconds"] for b in later[-10:]),
        "end": {k: batches[-1][k] for k in END},
        "batches": batches,
    }
    out = HERE / "results" / "scd2_snapshots.json"
    report = json.loads(out.read_text()) if out.exists() else {}
    report[args.resent_rows] = entry
    save_report("scd2_snapshots", report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
