"""`adopt` of a table a real `dbt snapshot` run wrote: dbt-core with dbt-spark's `session` method
(bench/peers/dbt, snapshots/people.sql: the timestamp strategy, `unique_key: id`, `updated_at`),
in a process of its own from the virtual environment `make test`'s setup makes for it
(.venv-peers: dbt pins packages lakefresh's development tools cannot take), on this test's
warehouse. dbt snapshots the source's state twice; lakefresh adopts the table, then takes two
more batches: the table equals the history lakefresh builds from all four (dbt's layout:
https://docs.getdbt.com/docs/build/snapshots, "Snapshot meta-fields")."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime
from pathlib import Path

from tests.conftest import CATALOG, rows
from tests.spark.test_adopt import JAN, PEOPLE, SCD2, both, continued_as_lakefresh_builds_it

ROOT = Path(__file__).resolve().parents[2]
DBT_PYTHON = ROOT / ".venv-peers" / "bin" / "python"
PROJECT = ROOT / "bench" / "peers" / "dbt"

# dbt runs `dbt snapshot` once per state, on a session of its own over the tests' warehouse; the
# snapshot's schema is made the session's current namespace, as dbt-spark names `schema.table`
DBT_RUN = """
import json, sys
from pathlib import Path
from dbt.cli.main import dbtRunner
from lakefresh.config.engine import CatalogConfig, SparkConfig
from lakefresh.lakehouse.session import build_session, spark_settings

warehouse, schema, project, work, states = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
catalog = CatalogConfig(name="{catalog}", warehouse=warehouse)
spark = build_session(spark_settings(catalog, SparkConfig(master="local[1]"), Path(work)))
spark.sql("CREATE NAMESPACE IF NOT EXISTS {catalog}." + schema)
spark.sql("USE {catalog}." + schema)
for n, state in enumerate(states):
    out = Path(work) / f"dbt{{n}}"
    args = ["snapshot", "--select", "people", "--project-dir", project, "--profiles-dir", project,
            "--target-path", str(out / "target"), "--log-path", str(out / "logs"),
            "--vars", json.dumps({{"schema": schema, "state": state}}), "--quiet"]
    result = dbtRunner().invoke(args)
    if not result.success:
        raise SystemExit(f"dbt snapshot failed: {{result.exception or result.result}}")
spark.stop()
"""

STATES = [
    [(1, "Ann", datetime(2025, 1, 1)), (2, "Bob", datetime(2025, 1, 1))],
    [(1, "Anna", datetime(2025, 1, 2)), (2, "Bob", datetime(2025, 1, 1))],
]


def dbt_snapshots(ws, warehouse: Path, schema: str) -> None:
    """dbt's two snapshot runs, in a process of its own."""
    assert DBT_PYTHON.exists(), "no .venv-peers: LAKEFRESH_TEST_SERVICES=1 bash scripts/setup.sh makes it"
    states = []
    for n, state in enumerate(STATES):
        path = ws.root / f"state{n}"
        ws.spark.createDataFrame(state, "id int, name string, updated_at timestamp").write.parquet(str(path))
        states.append(str(path))
    script = DBT_RUN.format(catalog=CATALOG)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    command = [str(DBT_PYTHON), "-c", script, str(warehouse), schema, str(PROJECT), str(ws.root), *states]
    ran = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]


def test_a_table_a_real_dbt_snapshot_wrote_adopted_then_continued_equals_lakefresh_s_history(ws, warehouse):
    both(ws, PEOPLE, new=["p3.csv", "p4.csv"])  # the source's rows as the batches bring them
    tables = SCD2.format(name="ref", folder="all", table_format="iceberg")
    p = ws.pipeline(tables + SCD2.format(name="people", folder="in", table_format="iceberg"))
    dbt_snapshots(ws, warehouse, ws.namespace)
    written = ws.spark.table(f"{CATALOG}.{ws.namespace}.people")
    assert {"dbt_scd_id", "dbt_updated_at", "dbt_valid_from", "dbt_valid_to"} <= set(written.columns)
    assert rows(written, ["id", "name", "dbt_valid_from", "dbt_valid_to"]) == [
        (1, "Ann", JAN[0], JAN[1]),
        (1, "Anna", JAN[1], None),
        (2, "Bob", JAN[0], None),
    ]

    done = p.adopt("people")
    assert done.dropped == ["dbt_scd_id"] and "is_current" in done.added
    result = p.run()
    assert result.ok, json.dumps(result.to_dict(), default=str)
    continued_as_lakefresh_builds_it(p)
    hashes = ["id", "dbt_valid_from", "_lf_hash", "_lf_events"]
    assert rows(p.table("people"), hashes) == rows(p.table("ref"), hashes)  # as lakefresh keeps them
