"""The runner's reads of the `batches` log (state/reads.py): a table's rows come in the order
their attempts started, however they were read. Reconciliation takes the last staged attempt of a
batch as its newest, and `published` the last row of a batch."""

from __future__ import annotations

from datetime import datetime

import pytest

from lakefresh.state.batch_row import BatchRow
from lakefresh.state.control import ControlTables
from tests.conftest import CATALOG, FORMATS, log_reads

TABLE = """
- name: t
  source: {kind: files, path: in, format: csv, schema: {id: int, ts: timestamp}}
  strategy: {kind: key, keys: [id], date_column: ts}
"""


def attempt(name: str, attempt_id: str, day: int | None, status: str = "staged") -> BatchRow:
    started = None if day is None else datetime(2025, 1, day)
    return BatchRow(name, "b1.csv", attempt_id, status, started_at=started)


def test_a_tables_log_rows_come_in_the_order_their_attempts_started_read_kept_or_read_ahead(ws):
    p = ws.pipeline(TABLE)
    p.control.ensure()
    name = f"{ws.namespace}.t"
    p.control.record_attempts([attempt(f"{ws.namespace}.other", "x", 1)])  # the log's first commit
    assert p.control.attempts(name) == []  # a read kept at the log's head: the appends below keep it
    # the attempt that started last is appended first, each in a commit of its own; a row
    # without a start time (a recovered record's) comes before every other
    p.control.record_attempts([attempt(name, "c", 3)])
    p.control.record_attempts(
        [attempt(name, "a", 1), attempt(name, "b", 2), attempt(name, "r", None, "published")]
    )
    assert p.control._kept[name][0] == p.backend.latest(p.control.batches)  # kept, with the appends
    assert [a.attempt for a in p.control.attempts(name)] == ["r", "a", "b", "c"]

    fresh = ControlTables(p.backend, ws.control_namespace)  # another process: a read of its own
    assert [a.attempt for a in fresh.attempts(name)] == ["r", "a", "b", "c"]
    ahead = ControlTables(p.backend, ws.control_namespace)  # a run's tables read in one query
    ahead.read_ahead([name, f"{ws.namespace}.other"])
    assert ahead._kept[name][0] == p.backend.latest(ahead.batches)
    assert [a.attempt for a in ahead.attempts(name)] == ["r", "a", "b", "c"]


def test_a_process_that_made_a_logs_first_commit_reads_nothing_of_it_on_its_next_run(ws):
    """A log with no commit holds no row: that read is kept like any other, so the process whose
    append is the log's first commit (a pipeline's first run, then its next in the same process:
    `--continuous`, the Python API) knows the log without reading it. (Where a staged commit
    cannot carry the batch's record, Iceberg before 1.12 on Spark 3.5, the first run stages the
    record's row and marks it published by a MERGE, which keeps no read: the next run reads once.)"""
    p = ws.pipeline(TABLE)
    ws.write("in/b1.csv", "id,ts\n1,2025-01-01 00:00:00\n")
    assert p.run().ok
    ws.write("in/b2.csv", "id,ts\n1,2025-01-02 00:00:00\n2,2025-01-02 00:00:00\n")
    with log_reads() as reads:
        took = p.run()
    assert took.ok and took.batches[0].counts == {"N": 1, "S": 1}  # S: a newer date alone
    assert len(reads) == (0 if p.backend.carries_commit_properties() else 1)
    name = f"{ws.namespace}.t"
    fresh = ControlTables(p.backend, ws.control_namespace)
    assert sorted(p.control.log_rows(name), key=str) == sorted(fresh.log_rows(name), key=str)
    assert p.control.published(name) == fresh.published(name)
    assert sorted(p.control.published(name)) == ["b1.csv", "b2.csv"]


@pytest.mark.parametrize("table_format", FORMATS)
def test_follows_names_the_newest_commit_only_when_it_is_the_only_one_since_the_marker(ws, table_format):
    """`follows(table, marker)`, which keeps a read current across the process's own append: a
    marker of None is a table with no commit yet (an Iceberg table created empty, a Delta table
    not written), whose first commit alone follows it."""
    p = ws.pipeline(TABLE + f"  format: {table_format}\n")
    name, backend = f"{ws.namespace}.t", p.backend
    one = p.spark.range(1).selectExpr("CAST(id AS INT) AS id")
    if table_format == "iceberg":  # created empty: no snapshot, nothing follows yet
        p.spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{ws.namespace}")
        p.spark.sql(f"CREATE TABLE {backend.qualified(name)} (id INT) USING iceberg")
    assert backend.latest(name) is None and backend.follows(name, None) is None
    backend.append(name, one)
    first = backend.latest(name)
    assert first is not None and backend.follows(name, None) == first
    backend.append(name, one)
    assert backend.follows(name, None) is None
    assert backend.follows(name, first) == backend.latest(name) != first
