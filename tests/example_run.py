"""The example pipeline's first run (examples/orders), made once per test run and shared: by
tests/spark/test_example.py, which checks what it reports and goes on from there, and by
tests/e2e/test_cluster.py, which runs the same pipeline on the same data on a Spark cluster and
compares the tables with this run's.

`make test` runs several pytest processes (scripts/test.sh); the one that makes the first run
keeps its data, report and tables in the folder they share (`LAKEFRESH_TEST_SHARED`), and a later
one that needs only those (tests/lake/, the example on the object store) takes them from there
instead of running the example again (`kept_run`)."""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "orders"

# Columns whose values differ between any two runs of the same batches: Iceberg's snapshot ids and
# commit times (a change feed's rows carry them; its batch ids name the snapshot they end at).
VOLATILE = ("_lf_commit_snapshot_id", "_lf_commit_timestamp", "snapshot_id")
_SNAPSHOT_ID = re.compile(r"\d{12,}")  # Iceberg's are 19 digits or so
_IN_WAREHOUSE = re.compile(r"^.*/warehouse/")


def batch_key(batch_id: str) -> str:
    """A batch id as two runs of the same batches share it: a change feed's names the snapshots
    it reads between (Iceberg's ids differ from run to run) and a Delta table's by its path."""
    return _IN_WAREHOUSE.sub("warehouse/", _SNAPSHOT_ID.sub("<snapshot>", batch_id))


@dataclass
class ExampleRun:
    folder: Path  # the pipeline and its warehouse; tests may go on running it
    data: Path  # the generated data as the run found it (a pristine copy)
    result: dict[str, Any]  # the run's JSON
    tables: dict[str, list[tuple[Any, ...]]]  # every table's rows right after it (see contents)


def first_run(root: Path, cli_in_process: Any) -> ExampleRun:
    """Generate the data, run the example through the CLI in this process, keep its tables."""
    from lakefresh.api import load_pipeline

    folder = root / "example"
    folder.mkdir()
    shutil.copy(EXAMPLE / "pipeline.yml", folder)
    subprocess.run([sys.executable, str(EXAMPLE / "generate.py"), str(root / "data")], check=True)
    shutil.copytree(root / "data", folder / "data")  # copy2: the files keep their times
    run = cli_in_process("run", "pipeline.yml", "--output", "json", cwd=folder)
    assert run.returncode == 0, run.stderr
    pipeline = load_pipeline(folder / "pipeline.yml")
    tables = {t: contents(pipeline.table(t)) for t in table_names(pipeline)}
    made = ExampleRun(folder, root / "data", json.loads(run.stdout), tables)
    keep(made)
    return made


SHARED = "LAKEFRESH_TEST_SHARED"  # set by scripts/test.sh: a folder its pytest processes share


def keep(run: ExampleRun) -> None:
    """Keep the run's data, report and tables for the other processes of this `make test`."""
    shared = os.environ.get(SHARED)
    if not shared:
        return
    folder = Path(shared) / "example_first_run"
    staging = Path(shared) / f"example_first_run.{os.getpid()}"
    shutil.copytree(run.data, staging / "data")  # copy2: the files keep their times
    kept = ExampleRun(folder, folder / "data", run.result, run.tables)
    (staging / "run.pickle").write_bytes(pickle.dumps(kept))
    try:  # whole or not at all: a reader sees the folder once it is complete
        staging.rename(folder)
    except OSError:  # another process kept one first: the same batches, the same tables
        shutil.rmtree(staging)


def kept_run() -> ExampleRun | None:
    """The first run another process of this `make test` kept, if one has (its `folder` holds
    only its data: the tables are in the rows kept)."""
    shared = os.environ.get(SHARED)
    found = Path(shared) / "example_first_run" / "run.pickle" if shared else None
    if found is None or not found.exists():
        return None
    run = pickle.loads(found.read_bytes())
    assert isinstance(run, ExampleRun)
    return run


def table_names(pipeline: Any) -> list[str]:
    """Every table the pipeline writes (the `<name>_history` tables of `history: true` included)."""
    return [table.name for table in pipeline.config.tables]


def contents(df: Any) -> list[tuple[Any, ...]]:
    """A table's rows, sorted, without the columns that differ between two runs of the same
    batches (VOLATILE), and with batch ids as `batch_key` gives them."""
    columns = sorted(c for c in df.columns if c not in VOLATILE)
    out = []
    for row in df.select(*columns).collect():
        out.append(
            tuple(
                batch_key(v) if c == "_lf_batch_id" and isinstance(v, str) else v
                for c, v in zip(columns, row, strict=True)
            )
        )
    return sorted(out, key=lambda t: tuple((x is None, str(x)) for x in t))
