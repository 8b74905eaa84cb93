"""Benchmark: how a batch's cost grows with the target (the capacity plan, docs/capacity.md).

For each target size (1 M, 5 M, 20 M rows by default), the data of `bench_key.py`: an initial
load, then ROUNDS batches of 1 %, half changes of keys spread over the whole id range, half new
keys, each batch a day later and with a city of its own (so every update is a change). For each
configuration: a fresh lakefresh table, its initial load (timed), then the 1 % batches one
`pipeline.run()` each (timed; the median is reported). A configuration is a strategy (`key`,
`scd2`), a write mode (`copy-on-write`, `merge-on-read`) and a layout (unpartitioned, or
`partition_by: [bucket(16, id)]`). After the last batch the target's data files, delete files
and bytes are read from its snapshot summary.

Every configuration's figures are appended to bench/results/capacity.json as they come (a long
run that stops keeps what it measured; `--fresh` starts the file anew). One Spark session,
`local[2]`, 6 GB driver, 8 shuffle partitions (bench_key.session).

With `--lake`, the same on a lake on loopback (tests/lake/servers.py): the warehouse on an
S3-compatible server (S3Proxy, its objects in files of a local folder) through S3FileIO, the
tables in Iceberg's REST catalog server; the batches stay on the local disk. Each batch's requests
to the store are counted by the relay between the session and the server (the catalog server's
own reads and writes of table metadata go to the store directly and are not counted). Figures to
bench/results/capacity_lake.json.

Usage: python bench/bench_capacity.py [--sizes 1000000,5000000,20000000] [--rounds 3]
           [--strategies key,scd2] [--modes copy-on-write,merge-on-read] [--layouts none,bucket16]
           [--lake] [--fresh]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import bench_key
from bench_key import CATALOG, CHANGE_BATCHES, CHANGES, HERE, KEY_STRATEGY, UPDATE_CITY, generate, workspace
from bench_scd2 import SCD2_STRATEGY

STRATEGIES = {"key": KEY_STRATEGY, "scd2": SCD2_STRATEGY}
LAYOUTS = {"none": "", "bucket16": "partition_by: [bucket(16, id)]"}
RESULTS = HERE / "results" / "capacity.json"
LAKE_RESULTS = HERE / "results" / "capacity_lake.json"
MACHINE = "2 cores, 24 GB; local[2], 6 GB driver, 8 shuffle partitions"


def one_percent_batches(rounds: int) -> None:
    """ROUNDS batches of 1 %, each a day after the one before, its new keys in a block of its own."""
    CHANGES[:] = [(f"b{n:03d}_1pct", 0.01, f"2025-01-{n + 1:02d}", n + 1) for n in range(1, rounds + 1)]
    CHANGE_BATCHES[:] = [c[0] for c in CHANGES]
    UPDATE_CITY.update({c[0]: f"City {n}" for n, c in enumerate(CHANGES)})  # every update a change


def run_configuration(
    spark: Any,
    work: Path,
    files: dict[str, Path],
    rows: int,
    config: tuple[str, str, str],
    requests: Callable[[], int] | None = None,
) -> dict[str, Any]:
    """One configuration (strategy, mode, layout): its load and batches, timed; with `requests`
    (the store's requests so far), each batch's requests too."""
    from lakefresh.api import Pipeline
    from lakefresh.config.loader import parse, validate

    strategy, mode, layout = config
    name = f"cap_{strategy}_{mode.replace('-', '_')}_{layout}_{rows}"
    folder = work / name
    batch_dir = folder / "in"
    batch_dir.mkdir(parents=True)
    settings = LAYOUTS[layout]
    text = f"""
catalog: {{name: {CATALOG}, control_namespace: {name}_ctl}}
defaults: {{namespace: {name}}}
tables:
  - name: target
    source: {{kind: files, path: {batch_dir}, format: parquet}}
    strategy: {STRATEGIES[strategy]}
    write_mode: {mode}
    {settings}
"""
    pipeline = Pipeline(validate(parse(text, "bench"), "bench"), folder, spark=spark)
    times: dict[str, float] = {}
    asked: dict[str, int] = {}
    for batch in ("b000_initial", *CHANGE_BATCHES):
        shutil.copy(files[batch], batch_dir / files[batch].name)
        before = requests() if requests else 0
        start = time.perf_counter()
        result = pipeline.run()
        times[batch] = round(time.perf_counter() - start, 3)
        asked[batch] = requests() - before if requests else 0
        if not result.ok:
            raise SystemExit(f"lakefresh failed: {result.to_dict()}")
        print(f"  {name} {batch}: {times[batch]:.2f} s {result.batches[0].counts}", flush=True)
    summary = spark.sql(
        f"SELECT summary FROM {CATALOG}.{name}.target.snapshots ORDER BY committed_at DESC LIMIT 1"
    ).first()[0]
    rounds = [times[b] for b in CHANGE_BATCHES]
    for table in ("target", "batches", "quarantine"):  # the disk is not a 20 M-row table's x 8
        namespace = name if table == "target" else f"{name}_ctl"
        spark.sql(f"DROP TABLE IF EXISTS {CATALOG}.{namespace}.{table} PURGE")
    shutil.rmtree(folder, ignore_errors=True)
    measured = {
        "rows": rows,
        "strategy": strategy,
        "write_mode": mode,
        "layout": layout,
        "load_s": times["b000_initial"],
        "batch_rows": int(rows * 0.01),
        "rounds_s": rounds,
        "median_s": round(statistics.median(rounds), 3),
        "data_files": int(summary.get("total-data-files", 0)),
        "delete_files": int(summary.get("total-delete-files", 0)),
        "total_bytes": int(summary.get("total-files-size", 0)),
        "total_records": int(summary.get("total-records", 0)),
    }
    if requests:
        measured |= {
            "load_requests": asked["b000_initial"],
            "rounds_requests": [asked[b] for b in CHANGE_BATCHES],
        }
        measured["median_requests"] = statistics.median(measured["rounds_requests"])
    return measured


@contextlib.contextmanager
def on_the_lake(prefix: str) -> Iterator[tuple[Path, Any, Callable[[], int]]]:
    """A temporary folder, the lake's servers and a session on them (the benchmark's settings);
    the servers stopped and the folder removed at the end."""
    import tempfile

    sys.path.insert(0, str(HERE.parent))
    from lakefresh.config import CatalogConfig, SparkConfig
    from lakefresh.lakehouse.session import build_session, spark_settings
    from tests.lake.servers import Lake

    work = Path(tempfile.mkdtemp(prefix=prefix))
    lake = Lake().start()
    try:
        catalog = CatalogConfig(
            name=CATALOG, type="rest", warehouse=lake.catalog.warehouse, properties={"uri": lake.catalog.url}
        )
        conf = {"spark.driver.memory": "6g", "spark.sql.shuffle.partitions": "8"}
        settings = spark_settings(
            catalog, SparkConfig(master="local[2]", conf=conf), HERE, storage=lake.storage_config()
        )
        spark = build_session(settings)
        assert lake.link is not None
        link = lake.link
        yield work, spark, lambda: sum(link.requests.values())
        spark.stop()
    finally:
        lake.stop()
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--sizes", default="1000000,5000000,20000000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--strategies", default="key,scd2")
    parser.add_argument("--modes", default="copy-on-write,merge-on-read")
    parser.add_argument("--layouts", default="none,bucket16")
    parser.add_argument("--lake", action="store_true", help="the warehouse on an S3 server on loopback")
    parser.add_argument("--fresh", action="store_true")
    args = parser.parse_args()
    one_percent_batches(args.rounds)
    results = LAKE_RESULTS if args.lake else RESULTS
    found: list[dict[str, Any]] = []
    if results.exists() and not args.fresh:
        found = json.loads(results.read_text(encoding="utf-8"))["configurations"]
    configs = [
        (strategy, mode, layout)
        for strategy in args.strategies.split(",")
        for mode in args.modes.split(",")
        for layout in args.layouts.split(",")
    ]
    place = on_the_lake("lakefresh-bench-capacity-lake-") if args.lake else _local()
    with place as (work, spark, requests):
        for rows in [int(s) for s in args.sizes.split(",")]:
            files = generate(spark, work / f"data_{rows}", rows)
            for config in configs:
                figures = run_configuration(spark, work, files, rows, config, requests)
                same = ("rows", "strategy", "write_mode", "layout")
                found = [f for f in found if any(f[k] != figures[k] for k in same)] + [figures]
                machine = MACHINE + ("; S3Proxy and a REST catalog on loopback" if args.lake else "")
                results.write_text(json.dumps({"machine": machine, "configurations": found}, indent=2) + "\n")
                print(json.dumps(figures), flush=True)
            shutil.rmtree(work / f"data_{rows}", ignore_errors=True)
    assert bench_key.CHANGE_BATCHES is CHANGE_BATCHES  # generate reads the list changed in place
    return 0


@contextlib.contextmanager
def _local() -> Iterator[tuple[Path, Any, None]]:
    with workspace("lakefresh-bench-capacity-") as (work, spark):
        yield work, spark, None


if __name__ == "__main__":
    sys.exit(main())
