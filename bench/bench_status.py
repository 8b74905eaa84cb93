"""Benchmark: the reading verbs (`status`, `history`, `quarantine`, `freshness`, `status
--pending`, `report`, `plan`) on the example pipeline, each a fresh `lakefresh` process as a user
runs it, read without a JVM (lakehouse/native.py, sources/native_listing.py) and through Spark
(LAKEFRESH_NATIVE_READS=0: what every read did before). Wall seconds and the process's CPU
seconds (user + system: what the machine's load does not stretch), medians over rounds, the
roads alternated, after one unmeasured run of each command.

The example is copied to a temporary folder, given fresh data and run once first (through Spark,
not measured), unless --folder names an example folder that has run already.

Usage: .venv/bin/python bench/bench_status.py [--rounds N] [--folder F] [--roads native,spark]
           [--commands status,history,...]
Results: bench/results/status.json (the commands and roads measured; another run's figures of a
command or road not measured again are kept)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAKEFRESH = [sys.executable, "-m", "lakefresh"]
COMMANDS = {
    "status": ["status", "pipeline.yml"],
    "history": ["history", "pipeline.yml", "customers"],
    "quarantine": ["quarantine", "pipeline.yml"],
    "freshness": ["freshness", "pipeline.yml"],
    "status --pending": ["status", "pipeline.yml", "--pending"],
    "report": ["report", "pipeline.yml", "-f", "report.html"],
    "plan": ["plan", "pipeline.yml"],
}


def prepared(folder: str | None) -> Path:
    if folder:
        return Path(folder).resolve()
    here = Path(tempfile.mkdtemp(prefix="lakefresh-status-")) / "orders"
    shutil.copytree(ROOT / "examples" / "orders", here)
    subprocess.run([sys.executable, "generate.py", "data"], cwd=here, check=True, capture_output=True)
    subprocess.run([*LAKEFRESH, "run", "pipeline.yml", "--quiet"], cwd=here, check=True, capture_output=True)
    return here


def timed(args: list[str], cwd: Path, native: bool) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one process."""
    env = {**os.environ, "LAKEFRESH_NATIVE_READS": "1" if native else "0"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: modules load from their bytecode
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([*LAKEFRESH, *args], cwd=cwd, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--folder", help="an example folder that has run already")
    parser.add_argument("--roads", default="native,spark", help="native, spark or both")
    parser.add_argument("--commands", default=",".join(COMMANDS), help="which of them (comma-separated)")
    opts = parser.parse_args()
    chosen = {name: COMMANDS[name] for name in opts.commands.split(",")}
    here = prepared(opts.folder)
    figures: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for args in chosen.values():  # a warm-up, not measured: bytecode written, files cached
        timed(args, here, True)
    for _ in range(opts.rounds):
        for name, args in chosen.items():
            for road in opts.roads.split(","):
                figures.setdefault(name, {}).setdefault(road, []).append(timed(args, here, road == "native"))
    file = ROOT / "bench" / "results" / "status.json"
    out = json.loads(file.read_text(encoding="utf-8")) if file.exists() else {}
    for name, roads in figures.items():
        for road, found in roads.items():
            out.setdefault(name, {})[road] = {
                "rounds": len(found),
                "wall_s": round(statistics.median(w for w, _ in found), 2),
                "cpu_s": round(statistics.median(c for _, c in found), 2),
                "load_average": round(os.getloadavg()[0], 2),  # the machine's, when measured
            }
    text = json.dumps(out, indent=2)
    file.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
