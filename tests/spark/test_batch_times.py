"""A `files` batch's time from its name, a metadata file or a column, exactly, and batches ordered
by that time or by an integer version in their names."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.conftest import machine_zone, rows

LATE = 1.8e9  # every file's modification time: later than any batch time below


def test_batch_time_from_the_file_name_exactly(ws):
    """Open Data Fabric's EventTimeSource::FromPath (kamu: `eventTime: {kind: fromPath, pattern,
    timestampFormat}`): the time in a file's name, to the microsecond, is the batch's time; the
    batches are applied in that order, not by name."""
    ws.write("in/b_20250102T030405000002.csv", "id,v\n1,late\n", mtime=LATE)
    ws.write("in/a_20250102T030405000009.csv", "id,v\n1,latest\n", mtime=LATE)
    ws.write("in/c_20250101T000000000000.csv", "id,v\n1,first\n2,x\n", mtime=LATE)
    p = ws.pipeline(
        """
- name: t
  source:
    kind: files
    path: in
    format: csv
    schema: {id: int, v: string}
    order_by: batch_time
    batch_time: {name: '_(?P<time>[0-9T]+)[.]csv', format: '%Y%m%dT%H%M%S%f'}
  strategy: {kind: key, keys: [id]}
"""
    )
    result = p.run()
    assert result.ok, result.to_dict()
    assert [b.batch_id for b in result.batches] == [
        "c_20250101T000000000000.csv",
        "b_20250102T030405000002.csv",
        "a_20250102T030405000009.csv",
    ]
    assert rows(p.table("t"), ["id", "v", "_lf_updated_at"]) == [
        (1, "latest", datetime(2025, 1, 2, 3, 4, 5, 9)),
        (2, "x", datetime(2025, 1, 1)),
    ]


def test_batch_time_from_a_metadata_file_and_a_batch_that_waits_for_it(ws):
    """A small JSON file beside each batch holds its time (an offset converts to UTC); a batch
    whose metadata file has not landed yet waits, and `plan` says why; metadata files are never
    batches."""
    p = ws.pipeline(
        """
- name: t
  source:
    kind: files
    path: in
    format: json
    schema: {id: int, v: string}
    batch_time: {metadata: '{stem}.meta.json', field: extracted_at}
  strategy: {kind: key, keys: [id]}
"""
    )
    ws.write("in/one.json", '{"id": 1, "v": "a"}\n', mtime=LATE)
    ws.write("in/one.meta.json", '{"extracted_at": "2025-03-01T10:00:00.000001+01:00"}', mtime=LATE)
    ws.write("in/two.json", '{"id": 2, "v": "b"}\n', mtime=LATE)
    result = p.run()
    assert result.ok, result.to_dict()
    assert [b.batch_id for b in result.batches] == ["one.json"]
    assert [w["reason"] for w in p.plan().tables[0].waiting] == [
        "no metadata file 'two.meta.json' yet (batch_time.metadata)"
    ]
    ws.write("in/two.meta.json", '{"extracted_at": 1740823200}', mtime=LATE)  # seconds: 2025-03-01 10:00 UTC
    assert [b.batch_id for b in p.run().batches] == ["two.json"]
    assert rows(p.table("t"), ["id", "_lf_updated_at"]) == [
        (1, datetime(2025, 3, 1, 9, 0, 0, 1)),
        (2, datetime(2025, 3, 1, 10, 0)),
    ]


def test_batch_time_from_a_column_is_the_snapshots_system_time(ws):
    """The batch's largest value of a column is its time: here each snapshot's `taken_at`, which
    a change log writes as its system_time (Databricks' AUTO CDC FROM SNAPSHOT takes a
    snapshot's version or time from the snapshot itself)."""
    ws.write("in/s1.csv", "sku,qty,taken_at\na,1,2025-01-01 06:00:00.5\n", mtime=LATE)
    ws.write("in/s2.csv", "sku,qty,taken_at\na,2,2025-01-02 06:00:00.25\n", mtime=LATE)
    p = ws.pipeline(
        """
- name: stock
  source: {kind: files, path: in, format: csv, schema: {sku: string, qty: int, taken_at: timestamp},
           batch_time: {column: taken_at}}
  strategy: {kind: snapshot, keys: [sku], compare_columns: [qty]}
"""
    )
    result = p.run()
    assert result.ok, result.to_dict()
    got = [(r["op"], r["qty"], r["system_time"]) for r in p.table("stock").orderBy("offset").collect()]
    assert got == [
        ("+A", 1, datetime(2025, 1, 1, 6, 0, 0, 500000)),
        ("-C", 1, datetime(2025, 1, 2, 6, 0, 0, 250000)),
        ("+C", 2, datetime(2025, 1, 2, 6, 0, 0, 250000)),
    ]


def test_snapshots_ordered_by_an_integer_version(ws):
    """Databricks, AUTO CDC FROM SNAPSHOT (docs.databricks.com/aws/en/ldp/cdc, "Process snapshot
    history"): snapshots are applied in the order of their integer versions, so version 2 comes
    before version 10 (by name, 10 would come first). The batch's time is still its file's
    modification time, which orders `key`'s records when there is no date column."""
    ws.write("in/snapshot_10.csv", "id,v\n1,ten\n", mtime=LATE + 10)
    ws.write("in/snapshot_2.csv", "id,v\n1,two\n2,gone\n", mtime=LATE + 2)
    p = ws.pipeline(
        """
- name: t
  source: {kind: files, path: in, format: csv, schema: {id: int, v: string},
           order_by: version, version: 'snapshot_([0-9]+)'}
  strategy: {kind: key, keys: [id], full_snapshots: true}
"""
    )
    result = p.run()
    assert result.ok, result.to_dict()
    assert [b.batch_id for b in result.batches] == ["snapshot_2.csv", "snapshot_10.csv"]
    assert rows(p.table("t"), ["id", "v"]) == [(1, "ten")]


def test_a_name_without_a_time_is_a_clear_error(ws):
    ws.write("in/nameless.csv", "id,v\n1,a\n", mtime=LATE)
    p = ws.pipeline(
        """
- name: t
  source: {kind: files, path: in, format: csv, schema: {id: int, v: string},
           batch_time: {name: '_(?P<time>[0-9]{8})[.]csv', format: '%Y%m%d'}}
  strategy: {kind: append}
"""
    )
    result = p.run()
    assert not result.ok
    assert "batch 'nameless.csv': its name does not match batch_time.name" in result.tables[0].error


def test_a_batch_time_is_the_same_instant_whatever_the_machines_zone(ws, spark):
    """A batch's time (here a file's modification time) is stored as that instant: PySpark reads
    a naive datetime in the machine's zone, so a batch applied on a computer in New York stored
    its time five hours late, and the next batch, applied two hours later on a machine in UTC,
    was older than it (O): its update was dropped."""
    t0 = datetime(2025, 1, 10, 12, 0).replace(tzinfo=UTC).timestamp()
    ws.write("in/b1.csv", "id,v\n1,first\n", mtime=t0)
    text = """
- name: t
  source: {kind: files, path: in, format: csv, schema: {id: int, v: string}}
  strategy: {kind: key, keys: [id]}
"""
    p = ws.pipeline(text)
    with machine_zone("America/New_York"):
        first = p.run()
    assert first.ok, first.to_dict()
    stored = p.table("t").selectExpr("CAST(_lf_updated_at AS STRING)").first()[0]
    assert stored == "2025-01-10 12:00:00"  # the session's zone is UTC
    ws.write("in/b2.csv", "id,v\n1,second\n", mtime=t0 + 7200)
    with machine_zone("UTC"):
        second = p.run()
    assert second.ok, second.to_dict()
    assert second.batches[0].counts == {"C": 1}
    assert rows(p.table("t"), ["id", "v"]) == [(1, "second")]
