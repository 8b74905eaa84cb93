"""Strategy `snapshot`: change data capture between full snapshots, as an event log."""

from __future__ import annotations

from datetime import datetime

import pytest

from tests.conftest import rows

SNAPSHOTS = """
- name: stock
  source:
    kind: files
    path: in
    format: csv
    schema: {sku: string, qty: int}
    order_by: modified
  strategy: {kind: snapshot, keys: [sku]}
"""

DAY = 86400.0
T0 = datetime(2025, 1, 1).timestamp()


def at(day: int) -> datetime:
    return datetime.utcfromtimestamp(T0 + day * DAY)


def log(p):
    return [
        (r["offset"], r["op"], r["sku"], r["qty"], r["event_time"], r["_lf_batch_id"])
        for r in p.table("stock").orderBy("offset").collect()
    ]


def test_a_key_appears_changes_disappears_and_reappears(ws):
    ws.write("in/s1.csv", "sku,qty\na,1\nb,2\n", mtime=T0)
    ws.write("in/s2.csv", "sku,qty\na,5\nb,2\n", mtime=T0 + DAY)
    ws.write("in/s3.csv", "sku,qty\nb,2\n", mtime=T0 + 2 * DAY)
    ws.write("in/s4.csv", "sku,qty\na,7\nb,2\n", mtime=T0 + 3 * DAY)
    p = ws.pipeline(SNAPSHOTS)
    result = p.run()
    assert result.ok, result.to_dict()
    assert [b.counts for b in result.batches] == [
        {"+A": 2},
        {"-C": 1, "+C": 1},
        {"-R": 1},
        {"+A": 1},
    ]
    assert log(p) == [
        (0, "+A", "a", 1, at(0), "s1.csv"),
        (1, "+A", "b", 2, at(0), "s1.csv"),
        (2, "-C", "a", 1, at(0), "s2.csv"),  # correct-from repeats the old row, its time included
        (3, "+C", "a", 5, at(1), "s2.csv"),
        (4, "-R", "a", 5, at(1), "s3.csv"),  # the retraction repeats the last row
        (5, "+A", "a", 7, at(3), "s4.csv"),
    ]
    assert rows(p.current("stock"), ["sku", "qty", "op"]) == [("a", 7, "+A"), ("b", 2, "+A")]
    system_times = {r[0] for r in p.table("stock").select("system_time").distinct().collect()}
    assert system_times == {at(0), at(1), at(2), at(3)}  # each batch's time: reproducible


def test_an_identical_snapshot_appends_nothing(ws):
    ws.write("in/s1.csv", "sku,qty\na,1\nb,2\n", mtime=T0)
    ws.write("in/s2.csv", "sku,qty\nb,2\na,1\n", mtime=T0 + DAY)
    p = ws.pipeline(SNAPSHOTS)
    result = p.run()
    assert [b.counts for b in result.batches] == [{"+A": 2}, {}]
    assert [b.status for b in result.batches] == ["published", "published"]
    assert len(log(p)) == 2
    assert p.run().batches == []  # and it is not applied again


def test_columns_added_and_removed_between_snapshots(ws):
    ws.write("in/s1.csv", "sku,qty\na,1\nb,2\n", mtime=T0)
    ws.write("in/s2.csv", "sku,qty,colour\na,1,\nb,2,red\n", mtime=T0 + DAY)
    ws.write("in/s3.csv", "sku,colour\na,\nb,red\n", mtime=T0 + 2 * DAY)
    tables = """
    - name: stock
      source:
        kind: files
        path: in
        format: csv
        order_by: modified
        schema: {sku: string, qty: int, colour: string}
      strategy: {kind: snapshot, keys: [sku]}
    """
    # one declared schema: a missing column reads as NULL; s2 adds a value to b only
    p = ws.pipeline(tables)
    result = p.run()
    assert result.ok, result.to_dict()
    assert [b.counts for b in result.batches] == [{"+A": 2}, {"-C": 1, "+C": 1}, {"-C": 2, "+C": 2}]
    assert rows(p.current("stock"), ["sku", "qty", "colour"]) == [("a", None, None), ("b", None, "red")]


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        (
            "odf",  # the default: -C and -R repeat the old row; a new event time alone corrects
            [
                ("+A", 1, datetime(2024, 6, 1), datetime(2024, 6, 1)),
                ("-C", 1, datetime(2024, 6, 1), datetime(2024, 6, 1)),
                ("+C", 2, datetime(2024, 6, 5), datetime(2024, 6, 5)),
                ("-C", 2, datetime(2024, 6, 5), datetime(2024, 6, 5)),
                ("+C", 2, datetime(2024, 6, 9), datetime(2024, 6, 9)),
                ("-R", 2, datetime(2024, 6, 9), datetime(2024, 6, 9)),
                ("+A", 1, datetime(2024, 6, 10), datetime(2024, 6, 10)),
            ],
        ),
        (
            "effective",  # the time a change took effect: -R as of the snapshot's latest
            [
                ("+A", 1, datetime(2024, 6, 1), datetime(2024, 6, 1)),
                ("-C", 1, datetime(2024, 6, 1), datetime(2024, 6, 5)),
                ("+C", 2, datetime(2024, 6, 5), datetime(2024, 6, 5)),
                ("-R", 2, datetime(2024, 6, 5), datetime(2024, 6, 10)),
                ("+A", 1, datetime(2024, 6, 10), datetime(2024, 6, 10)),
            ],
        ),
    ],
)
def test_event_time_from_a_column(ws, rule, expected):
    """Given four snapshots of sku a (qty 1, then 2, then 2 seen later) and then b alone: each
    event's (op, qty, seen_at, event_time) by `event_time_rule`."""
    tables = f"""
    - name: stock
      source: {{kind: files, path: in, format: csv, schema: {{sku: string, qty: int, seen_at: timestamp}}}}
      strategy: {{kind: snapshot, keys: [sku], event_time: seen_at, event_time_rule: {rule}}}
    """
    ws.write("in/s1.csv", "sku,qty,seen_at\na,1,2024-06-01 00:00:00\n", mtime=T0)
    ws.write("in/s2.csv", "sku,qty,seen_at\na,2,2024-06-05 00:00:00\n", mtime=T0 + DAY)
    ws.write("in/s3.csv", "sku,qty,seen_at\na,2,2024-06-09 00:00:00\n", mtime=T0 + 2 * DAY)
    ws.write("in/s4.csv", "sku,qty,seen_at\nb,1,2024-06-10 00:00:00\n", mtime=T0 + 3 * DAY)
    p = ws.pipeline(tables)
    result = p.run()
    assert result.ok, result.to_dict()
    got = [
        (r["op"], r["qty"], r["seen_at"], r["event_time"])
        for r in p.table("stock").orderBy("offset").collect()
    ]
    assert got == expected


def test_a_data_column_named_like_a_log_column_is_a_clear_error(ws):
    ws.write("in/s1.csv", "sku,op\na,x\n", mtime=T0)
    tables = """
    - name: stock
      source: {kind: files, path: in, format: csv}
      strategy: {kind: snapshot, keys: [sku]}
    """
    p = ws.pipeline(tables)
    result = p.run()
    assert not result.ok
    assert "column 'op'" in result.tables[0].error and "op_column" in result.tables[0].error


def test_a_quarantined_record_is_not_retracted(ws):
    """sku b's record has a bad cell: it is in the snapshot, so no -R is logged for it."""
    ws.write("in/s1.csv", "sku,qty\na,1\nb,2\nc,3\n", mtime=T0)
    ws.write("in/s2.csv", "sku,qty\na,1\nb,many\n", mtime=T0 + DAY)
    p = ws.pipeline(SNAPSHOTS)
    result = p.run()
    assert result.ok, result.to_dict()
    assert [(op, sku) for _, op, sku, *_ in log(p)][3:] == [("-R", "c")]
    assert rows(p.quarantine("stock"), ["batch_id", "record"]) == [("s2.csv", 2)]
