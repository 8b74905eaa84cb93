"""Explicit ranges for `timestamp` and `sequence`: a batch's range given with
it (its file name, or two columns) instead of its rows' [min, max], and what becomes of rows
outside it."""

from __future__ import annotations

from datetime import datetime

from tests.conftest import rows


def table(range_spec: str, kind: str = "timestamp", schema: str = "at: timestamp, amount: int") -> str:
    column = "at" if kind == "timestamp" else "seq"
    return f"""
- name: sales
  source: {{kind: files, path: in, format: csv, schema: {{{schema}}}}}
  strategy: {{kind: {kind}, column: {column}, range: {range_spec}}}
"""


def by_columns(more: str = "") -> str:
    """A `sequence` table whose batches give their range in columns `lo` and `hi`."""
    spec = "{start_column: lo, end_column: hi" + (f", {more}" if more else "") + "}"
    return table(spec, kind="sequence", schema="seq: int, v: string, lo: int, hi: int")


PATTERN = "{pattern: 'sales_(?P<start>[0-9-]+)_(?P<end>[0-9-]+)[.]csv', outside: %s}"


def test_sqlmesh_time_range_the_interval_is_replaced_whole_and_rows_outside_it_dropped(ws):
    """SQLMesh, docs/concepts/models/model_kinds.md, INCREMENTAL_BY_TIME_RANGE: the run's interval
    is replaced, and a filter on the time column keeps rows outside it from being stored
    (outside: drop). The interval is the file's: a date-only end covers its whole day, so a day
    the batch has fewer rows for loses the others."""
    p = ws.pipeline(table(PATTERN % "drop"))
    ws.write(
        "in/sales_2024-01-01_2024-01-02.csv",
        "at,amount\n2024-01-01 09:00:00,1\n2024-01-02 10:00:00,2\n"
        "2024-01-02 23:00:00,3\n2024-01-03 08:00:00,4\n",
    )
    first = p.run()
    assert first.ok, first.to_dict()
    assert first.batches[0].counts == {"N": 3, "D": 0, "W": 1}
    ws.write("in/sales_2024-01-02_2024-01-02.csv", "at,amount\n2024-01-02 11:00:00,5\n")
    second = p.run()
    assert second.batches[0].counts == {"N": 1, "D": 2}
    assert rows(p.table("sales"), ["at", "amount"]) == [
        (datetime(2024, 1, 1, 9), 1),
        (datetime(2024, 1, 2, 11), 5),
    ]
    ws.write("in/sales_2024-01-01_2024-01-01.csv", "at,amount\n")  # the day, now with no sales
    assert p.run().ok
    assert rows(p.table("sales"), ["at", "amount"]) == [(datetime(2024, 1, 2, 11), 5)]


def test_a_row_outside_the_range_refuses_the_batch_by_default(ws):
    """Delta's replaceWhere check (docs.databricks.com/aws/en/delta/selective-overwrite): rows that
    do not match the range fail the write; outside: error is the default."""
    p = ws.pipeline(table("{pattern: 'sales_(?P<start>[0-9-]+)_(?P<end>[0-9-]+)[.]csv'}"))
    ws.write(
        "in/sales_2024-01-01_2024-01-01.csv", "at,amount\n2024-01-01 09:00:00,1\n2024-01-05 09:00:00,2\n"
    )
    batch = p.run().batches[0]
    assert batch.status == "refused" and "outside its range" in (batch.error or "")
    assert not p.backend.exists(f"{ws.namespace}.sales")


def test_a_sequence_range_from_two_columns(ws):
    """The range from the batch's own start and end columns (e.g. an export's "from" and "to"
    sequence numbers), rows outside it kept."""
    p = ws.pipeline(by_columns("outside: keep"))
    ws.write("in/b1.csv", "seq,v,lo,hi\n1,a,1,10\n5,b,1,10\n")
    assert p.run().ok
    ws.write("in/b2.csv", "seq,v,lo,hi\n2,c,1,4\n12,d,1,4\n")
    result = p.run()
    assert result.batches[0].counts == {"N": 2, "D": 1}  # seq 1 replaced; 5 lies outside [1, 4]
    assert rows(p.table("sales"), ["seq", "v"]) == [(12, "d"), (2, "c"), (5, "b")]


def test_a_batch_whose_range_columns_are_all_null_is_refused(ws):
    """Its rows name no range to replace; they were appended beside whatever they were meant to
    replace (and the audit's prediction, nothing gained, then failed the batch)."""
    p = ws.pipeline(by_columns())
    ws.write("in/b1.csv", "seq,v,lo,hi\n1,a,1,10\n")
    assert p.run().ok
    ws.write("in/b2.csv", "seq,v,lo,hi\n1,b,,\n")
    batch = p.run().batches[0]
    assert batch.status == "refused" and "range columns are NULL on every row" in (batch.error or "")
    assert rows(p.table("sales"), ["seq", "v"]) == [(1, "a")]
