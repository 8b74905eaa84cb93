"""Benchmark: every Spark job a `key` and an `scd2` batch runs, by the runner's step.

One pipeline per strategy takes the initial load, then the 1 % batch of bench_key's data. During
that batch each step of the runner (run/steps.py: read, stage, write, audit, record, publish; the
reconciliation before and the log's record after the table's run) runs under a Spark job group
of its name, so Spark's status tracker says how many jobs each step ran, what they were (the
call site Spark names a job after: `collect`, `count`, `save`...), and how many stages and
tasks they ran. Results go to stdout and bench/results/jobs.json.

Usage: python bench/bench_jobs.py [--rows N] [--write-mode copy-on-write|merge-on-read]
"""

from __future__ import annotations

import functools
import shutil
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench_key import CATALOG, arguments, generate, save_report, workspace

STRATEGIES = {
    "key": "{kind: key, keys: [id], date_column: updated_at}",
    "scd2": "{kind: scd2, keys: [id], sequence_by: updated_at}",
}


def traced(spark: Any, prefix: str) -> dict[str, float]:
    """Run each runner step under a job group named after it (after `prefix`); return seconds
    per step."""
    from lakefresh.run import runner, steps
    from lakefresh.run.bookkeeping import Bookkeeping

    seconds: Counter[str] = Counter()

    def wrap(cls: Any, method: str, group: str) -> None:
        original = getattr(cls, method)

        @functools.wraps(original)
        def run(*args: Any, **kwargs: Any) -> Any:
            spark.sparkContext.setJobGroup(prefix + group, group)
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                seconds[group] += time.perf_counter() - start
                spark.sparkContext.setJobGroup(prefix + "other", "other")

        setattr(cls, method, run)
        undo.append((cls, method, original))

    undo.clear()
    for step in ("read", "stage", "write", "audit", "record", "publish"):
        wrap(steps.BatchSteps, step, step)
    wrap(Bookkeeping, "assess", "reconcile")  # the table's assessment, then what it found written
    wrap(Bookkeeping, "settle", "reconcile")
    wrap(runner.Runner, "_record", "record the run")
    return seconds


def jobs_by_group(spark: Any, prefix: str, groups: list[str]) -> tuple[dict[str, list[str]], Counter[str]]:
    """Each group's jobs, named by the call that ran them; and the stages and the tasks they ran
    (`<group>:stages`, `<group>:tasks`; skipped stages not counted)."""
    tracker = spark.sparkContext.statusTracker()
    store = spark.sparkContext._jsc.sc().statusStore()
    out: dict[str, list[str]] = {}
    ran: Counter[str] = Counter()
    for group in groups:
        names = []
        for job_id in sorted(tracker.getJobIdsForGroup(prefix + group)):
            job = store.job(job_id)
            text = str(job.name())  # the call site, e.g. `collect at <file>:<line>`
            names.append(" ".join(text.split())[:70])
            ran[f"{group}:stages"] += int(job.numCompletedStages())
            ran[f"{group}:tasks"] += int(job.numCompletedTasks())
        out[group] = names
    return out, ran


undo: list[tuple[Any, str, Any]] = []


def one_strategy(spark: Any, work: Path, files: dict[str, Path], kind: str, mode: str) -> dict[str, Any]:
    from lakefresh.api import Pipeline
    from lakefresh.config.loader import parse, validate

    folder = work / f"in_{kind}"
    folder.mkdir()
    text = f"""
catalog: {{name: {CATALOG}, control_namespace: jobs_{kind}_ctl}}
defaults: {{namespace: jobs_{kind}}}
tables:
  - name: target
    source: {{kind: files, path: {folder}, format: parquet}}
    strategy: {STRATEGIES[kind]}
    write_mode: {mode}
"""
    pipeline = Pipeline(validate(parse(text, "bench"), "bench"), work, spark=spark)
    shutil.copy(files["b000_initial"], folder)
    assert pipeline.run().ok
    shutil.copy(files["b001_1pct"], folder)
    seconds = traced(spark, kind + ":")
    groups = ["read", "stage", "write", "audit", "record", "publish", "reconcile", "record the run", "other"]
    spark.sparkContext.setJobGroup(kind + ":other", "other")
    start = time.perf_counter()
    result = pipeline.run()
    total = time.perf_counter() - start
    assert result.ok, result.to_dict()
    for cls, method, original in undo:
        setattr(cls, method, original)
    jobs, ran = jobs_by_group(spark, kind + ":", groups)
    report = {
        "batch_seconds": round(total, 3),
        "jobs": sum(len(v) for v in jobs.values()),
        "stages": sum(ran[f"{g}:stages"] for g in groups),
        "tasks": sum(ran[f"{g}:tasks"] for g in groups),
        "steps": {
            g: {
                "seconds": round(seconds.get(g, 0.0), 3),
                "jobs": len(jobs[g]),
                "stages": ran[f"{g}:stages"],
                "tasks": ran[f"{g}:tasks"],
                "what": dict(Counter(jobs[g])),
            }
            for g in groups
            if jobs[g] or seconds.get(g)
        },
    }
    print(f"{kind}: {report['jobs']} jobs, {report['stages']} stages, {report['tasks']} tasks, {total:.2f} s")
    for g, s in report["steps"].items():
        print(f"  {g:15s} {s['seconds']:6.2f} s  {s['jobs']:2d} jobs {s['stages']:2d} stages  {s['what']}")
    return report


def main() -> int:
    args = arguments(__doc__)
    with workspace("lakefresh-jobs-") as (work, spark):
        files = generate(spark, work, args.rows, args.keys)
        report = {
            "rows": args.rows,
            "write_mode": args.write_mode,
            "strategies": {k: one_strategy(spark, work, files, k, args.write_mode) for k in STRATEGIES},
        }
        save_report("jobs", report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
