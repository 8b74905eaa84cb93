"""Benchmark: the CPU a small run costs on each table format, and the Spark jobs it runs.

A tiny `key` table (a CSV source, two columns) takes a 1-row first batch; then each round times
a run with nothing new, and a run that takes one 10-row batch. Three set-ups: the target and
the control tables on Iceberg (`iceberg`); a Delta target, its control tables on Iceberg
(`delta`, as most tests run it); a Delta target with its control tables on Delta too
(`delta-only`, `catalog.control_format: delta`).

Each run is measured in wall seconds and in CPU seconds, the driver's Python process and the
JVM's (all its threads: the driver's work, the executor's tasks, the garbage collector and the
JIT compiler), read from /proc; and in Spark jobs, counted under a job group of the run and of
each of its parts (the lease, the table's assessment and settling, each step of a batch, the
log's record at the table's end). The figures are the median over rounds. Results go to stdout
and bench/results/run_cost.json.

Usage: python bench/bench_run_cost.py [--rounds 5] [--formats iceberg,delta,delta-only] [--jobs]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import os
import resource
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import bench_key
from bench_key import CATALOG, save_report, workspace

FORMATS = ("iceberg", "delta", "delta-only")
RUNS = ("nothing new", "one 10-row batch")
TICKS = os.sysconf("SC_CLK_TCK")


class Meter:
    """Wall, Python and JVM CPU seconds, and Spark jobs by part, of what runs under `measure`."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self.jvm_pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
        self.group = "idle"
        self.groups: list[str] = []
        self.started: list[float] = []  # the JVM's CPU as each part now running began
        self.cpu: Counter[str] = Counter()  # the JVM's CPU seconds of each part

    def jvm_cpu(self) -> float:
        fields = Path(f"/proc/{self.jvm_pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime

    @staticmethod
    def python_cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    def enter(self, part: str) -> str:
        """Run what follows under the job group of `part` (within the run measured); the group
        it replaced."""
        before, self.group = self.group, f"{self.group.split('/')[0]}/{part}"
        self.spark.sparkContext.setJobGroup(self.group, "")
        self.groups.append(self.group)
        self.started.append(self.jvm_cpu())
        return before

    def leave(self, before: str) -> None:
        spent = self.jvm_cpu() - self.started.pop()
        self.cpu[self.group.split("/", 1)[1]] += spent
        if self.started:  # a part within a part: its CPU is the inner part's
            self.started[-1] += spent
        self.group = before
        self.spark.sparkContext.setJobGroup(before, "")

    @contextlib.contextmanager
    def measure(self, label: str) -> Iterator[dict[str, Any]]:
        out: dict[str, Any] = {}
        self.group = label
        self.spark.sparkContext.setJobGroup(label, "")
        self.groups.append(label)
        self.cpu.clear()
        wall, py, jvm = time.perf_counter(), self.python_cpu(), self.jvm_cpu()
        yield out
        out["wall_s"] = time.perf_counter() - wall
        out["python_cpu_s"] = self.python_cpu() - py
        out["jvm_cpu_s"] = self.jvm_cpu() - jvm
        out["cpu_s"] = out["python_cpu_s"] + out["jvm_cpu_s"]
        tracker = self.spark.sparkContext.statusTracker()
        store = self.spark.sparkContext._jsc.sc().statusStore()
        jobs: Counter[str] = Counter()
        names: list[str] = []
        for group in set(self.groups):
            part = group.split("/", 1)[1] if "/" in group else "other"
            ids = tracker.getJobIdsForGroup(group)
            jobs[part] += len(ids)
            names += [f"{part}: {_job_name(store.job(i))}" for i in ids]
        out["jobs"] = sum(jobs.values())
        out["jobs_by_part"] = {k: v for k, v in sorted(jobs.items()) if v}
        out["job_names"] = sorted(names)
        out["jvm_cpu_by_part"] = {k: round(v, 3) for k, v in sorted(self.cpu.items())}
        self.groups.clear()
        self.group = "idle"
        self.spark.sparkContext.setJobGroup("idle", "")


def _job_name(job: Any) -> str:
    """A job's description when it has one (Delta names its jobs: `Delta: ...`), else its call site."""
    description = job.description()
    text = str(description.get()) if description.isDefined() else ""
    text = text or str(job.name())
    return " ".join(text.split())[:90]


def instrument(meter: Meter) -> Callable[[], None]:
    """Each part of a run under a job group of its name; returns what undoes it."""
    from lakefresh.run.bookkeeping import Bookkeeping
    from lakefresh.run.runner import Runner
    from lakefresh.run.steps import BatchSteps
    from lakefresh.state.control import ControlTables
    from lakefresh.state.leases import Leases

    undo: list[tuple[Any, str, Any]] = []

    def wrap(cls: Any, method: str, part: str) -> None:
        original = getattr(cls, method)

        @functools.wraps(original)
        def run(*args: Any, **kwargs: Any) -> Any:
            before = meter.enter(part)
            try:
                return original(*args, **kwargs)
            finally:
                meter.leave(before)

        setattr(cls, method, run)
        undo.append((cls, method, original))

    wrap(Leases, "take", "lease: take")
    wrap(Leases, "release", "lease: release")
    wrap(ControlTables, "ensure", "control tables: ensure")
    wrap(ControlTables, "read_ahead", "control tables: read ahead")
    wrap(Bookkeeping, "assess", "assess")
    wrap(Bookkeeping, "settle", "settle")
    wrap(Runner, "_layout", "layout")
    for step in ("read", "stage", "commit", "audit", "record", "published"):
        wrap(BatchSteps, step, f"batch: {step}")
    wrap(Runner, "_record", "record the run")
    wrap(ControlTables, "tidy", "control tables: tidy")
    wrap(importlib.import_module("lakefresh.verbs.maintain"), "compaction_due", "compaction due")

    def restore() -> None:
        for cls, method, original in undo:
            setattr(cls, method, original)

    return restore


def pipeline_text(fmt: str, folder: Path, name: str) -> str:
    target = "" if fmt == "iceberg" else "    format: delta\n"
    control = "control_format: delta, " if fmt == "delta-only" else ""
    return f"""
catalog: {{name: {CATALOG}, {control}control_namespace: {name}_ctl}}
defaults: {{namespace: {name}}}
tables:
  - name: target
{target}    source: {{kind: files, path: {folder}, format: csv, schema: {{id: int, v: int}}}}
    strategy: {{kind: key, keys: [id]}}
"""


def one_format(
    spark: Any, meter: Meter, work: Path, fmt: str, rounds: int
) -> dict[str, list[dict[str, Any]]]:
    """Each round's two runs on a fresh table of this format."""
    from lakefresh.api import Pipeline
    from lakefresh.config.loader import parse, validate

    name = fmt.replace("-", "_")
    folder = work / name
    folder.mkdir()
    pipeline = Pipeline(
        validate(parse(pipeline_text(fmt, folder, name), "bench"), "bench"), work, spark=spark
    )
    (folder / "b000.csv").write_text("id,v\n1,1\n", encoding="utf-8")
    assert pipeline.run().ok
    measured: dict[str, list[dict[str, Any]]] = {run: [] for run in RUNS}
    for n in range(1, rounds + 2):  # the first round warms up
        with meter.measure(f"{name}-{n}-idle") as idle:
            assert pipeline.run().batches == []
        body = "".join(f"{(n * 7 + j) % 50},{n}\n" for j in range(10))
        (folder / f"b{n:03d}.csv").write_text("id,v\n" + body, encoding="utf-8")
        with meter.measure(f"{name}-{n}-batch") as batch:
            result = pipeline.run()
            assert result.ok and len(result.batches) == 1, result.to_dict()
        if n > 1:
            measured[RUNS[0]].append(idle)
            measured[RUNS[1]].append(batch)
    return measured


def summary(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of each figure over the rounds; the jobs of the last round."""
    out: dict[str, Any] = {
        key: round(statistics.median(r[key] for r in rounds), 3)
        for key in ("wall_s", "cpu_s", "python_cpu_s", "jvm_cpu_s", "jobs")
    }
    out["jobs_by_part"] = rounds[-1]["jobs_by_part"]
    parts = {part for r in rounds for part in r["jvm_cpu_by_part"]}
    out["jvm_cpu_by_part"] = {
        part: round(statistics.median(r["jvm_cpu_by_part"].get(part, 0.0) for r in rounds), 3)
        for part in sorted(parts)
    }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--jobs", action="store_true", help="print every job's call site")
    parser.add_argument("--out", default="run_cost")
    parser.add_argument("--conf", action="append", default=[], help="a session setting, KEY=VALUE")
    args = parser.parse_args()
    formats = args.formats.split(",")
    bench_key.FORMAT[:] = ["delta" if any(f != "iceberg" for f in formats) else "iceberg"]
    report: dict[str, Any] = {"rounds": args.rounds, "batch_rows": 10, "formats": {}}
    conf = {"spark.sql.shuffle.partitions": "2", **dict(c.split("=", 1) for c in args.conf)}
    with workspace("lakefresh-run-cost-", conf) as (work, spark):
        meter = Meter(spark)
        restore = instrument(meter)
        try:
            for fmt in formats:
                measured = one_format(spark, meter, work, fmt, args.rounds)
                report["formats"][fmt] = {run: summary(rounds) for run, rounds in measured.items()}
                if args.jobs:
                    for run, rounds in measured.items():
                        print(f"--- {fmt}, {run}:", *rounds[-1]["job_names"], sep="\n  ")
                        print("  JVM CPU by part:", rounds[-1]["jvm_cpu_by_part"])
        finally:
            restore()
    print(f"{'format':12s} {'run':18s} {'wall':>6s} {'cpu':>6s} {'py':>6s} {'jvm':>6s} {'jobs':>5s}")
    for fmt, runs in report["formats"].items():
        for run, s in runs.items():
            print(
                f"{fmt:12s} {run:18s} {s['wall_s']:6.2f} {s['cpu_s']:6.2f} "
                f"{s['python_cpu_s']:6.2f} {s['jvm_cpu_s']:6.2f} {s['jobs']:5.0f}"
            )
    save_report(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
