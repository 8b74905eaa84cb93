"""Change detection: a value that changed is a change, whatever its type and whatever the
session's zone, and the hash of a row that did not change stays what it was."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest

from tests.conftest import rows, settings_kept

TIMES = "schema: {id: int, at: timestamp, note: string}"
HEADER = "id,at,note\n"

KEY = f"""
- name: t
  source: {{kind: files, path: in, format: csv, {TIMES}}}
  strategy: {{kind: key, keys: [id]}}
"""
SCD2 = f"""
- name: t
  source: {{kind: files, path: in, format: csv, {TIMES}}}
  strategy: {{kind: scd2, keys: [id]}}
"""
SNAPSHOT = f"""
- name: t
  source: {{kind: files, path: in, format: csv, {TIMES}, order_by: name}}
  strategy: {{kind: snapshot, keys: [id]}}
"""


def counts(result, batch_id):
    return next(b.counts for b in result.batches if b.batch_id == batch_id)


T0 = datetime(2025, 2, 1).timestamp()


def two_batches(ws, first: str, second: str) -> None:
    """Key 1 at `first`, then at `second`; key 2 the same in both. A day between the files."""
    ws.write("in/b1.csv", HEADER + f"1,{first},x\n2,2025-01-01 10:00:00,y\n", mtime=T0)
    ws.write("in/b2.csv", HEADER + f"1,{second},x\n2,2025-01-01 10:00:00,y\n", mtime=T0 + 86400)


def test_key_a_change_within_one_millisecond_is_seen_both_ways(ws):
    """From whole milliseconds to a part of one and back: each is a change."""
    ws.write("in/b1.csv", HEADER + "1,2025-01-01 10:00:00.123,x\n")
    ws.write("in/b2.csv", HEADER + "1,2025-01-01 10:00:00.123456,x\n")
    ws.write("in/b3.csv", HEADER + "1,2025-01-01 10:00:00.123,x\n")
    p = ws.pipeline(KEY)
    result = p.run()
    assert result.ok, result.to_dict()
    assert [counts(result, b) for b in ("b1.csv", "b2.csv", "b3.csv")] == [{"N": 1}, {"C": 1}, {"C": 1}]
    assert rows(p.table("t"), ["id", "at"]) == [(1, datetime(2025, 1, 1, 10, 0, 0, 123000))]


def test_scd2_a_timestamp_that_moved_by_one_microsecond_opens_a_version(ws):
    two_batches(ws, "2025-01-01 10:00:00.000001", "2025-01-01 10:00:00.000002")
    p = ws.pipeline(SCD2)
    result = p.run()
    assert result.ok, result.to_dict()
    assert rows(p.table("t"), ["id", "at", "is_current"]) == [
        (1, datetime(2025, 1, 1, 10, 0, 0, 1), False),
        (1, datetime(2025, 1, 1, 10, 0, 0, 2), True),
        (2, datetime(2025, 1, 1, 10, 0, 0), True),
    ]


def test_snapshot_a_timestamp_that_moved_by_one_microsecond_is_an_update(ws):
    two_batches(ws, "2025-01-01 10:00:00.000001", "2025-01-01 10:00:00.000002")
    p = ws.pipeline(SNAPSHOT)
    result = p.run()
    assert result.ok, result.to_dict()
    assert [(r["op"], r["id"], r["at"]) for r in p.table("t").orderBy("offset").collect()] == [
        ("+A", 1, datetime(2025, 1, 1, 10, 0, 0, 1)),
        ("+A", 2, datetime(2025, 1, 1, 10, 0, 0)),
        ("-C", 1, datetime(2025, 1, 1, 10, 0, 0, 1)),
        ("+C", 1, datetime(2025, 1, 1, 10, 0, 0, 2)),
    ]


@pytest.mark.parametrize("zone", ["UTC", "America/New_York", "Asia/Kolkata"])
def test_a_rows_hash_is_the_same_in_every_session_zone_and_as_stored_before(spark, zone):
    """The hash of a row of whole milliseconds is the MD5 of its JSON text in UTC, which is what
    lakefresh stored for it before; a session in another zone hashes it the same."""
    from pyspark.sql import functions as F

    from lakefresh.strategies.base import hashdiff

    with settings_kept(spark, ["spark.sql.session.timeZone"]):
        spark.conf.set("spark.sql.session.timeZone", zone)
        df = spark.sql(
            "SELECT 1 AS id, TIMESTAMP'2025-01-01 10:00:00.250 UTC' AS at, "
            "TIMESTAMP_NTZ'2025-01-01 10:00:00.5' AS local, 'x' AS note"
        )
        got = df.select(F.hex(hashdiff(["note", "at", "local", "id"], df.schema))).first()[0]
    text = '{"at":"2025-01-01T10:00:00.250Z","id":1,"local":"2025-01-01T10:00:00.500","note":"x"}'
    assert got.lower() == hashlib.md5(text.encode()).hexdigest()


def test_a_change_feeds_update_within_one_millisecond_is_not_a_carry_over(spark):
    """Copy-on-write commits bring rows they rewrote unchanged back as update pairs of equal
    images, which `without_carry_overs` drops; a pair 1 µs apart is a real update."""
    from lakefresh.lakehouse.changes import without_carry_overs

    changes = spark.sql("""
        SELECT * FROM VALUES
          (1, TIMESTAMP'2025-01-01 10:00:00.000001', 'UPDATE_BEFORE', 0, 7L),
          (1, TIMESTAMP'2025-01-01 10:00:00.000002', 'UPDATE_AFTER', 0, 7L),
          (2, TIMESTAMP'2025-01-01 10:00:00.000001', 'UPDATE_BEFORE', 0, 7L),
          (2, TIMESTAMP'2025-01-01 10:00:00.000001', 'UPDATE_AFTER', 0, 7L)
        AS t(id, at, _lf_change_type, _lf_change_ordinal, _lf_commit_snapshot_id)
    """)
    assert rows(without_carry_overs(changes, ["id"]), ["id", "_lf_change_type"]) == [
        (1, "UPDATE_AFTER"),
        (1, "UPDATE_BEFORE"),
    ]


def test_a_struct_stored_as_text_keeps_its_timestamps_exact_and_in_utc(ws, spark):
    """A nested value into a text column is its JSON text (schema evolution): its timestamps to
    the microsecond and in UTC, whatever the session's zone."""
    at = datetime(2025, 1, 1, 10, 0, 0, 1, tzinfo=UTC)
    ws.write_parquet("in/b1.parquet", [(1, "x")], "id int, info string")
    ws.write_parquet("in/b2.parquet", [(2, (2, at))], "id int, info struct<a: int, t: timestamp>")
    p = ws.pipeline("""
    - name: t
      source: {kind: files, path: in, format: parquet}
      strategy: {kind: append}
    """)
    with settings_kept(spark, ["spark.sql.session.timeZone"]):
        spark.conf.set("spark.sql.session.timeZone", "America/New_York")
        result = p.run()
    assert result.ok, result.to_dict()
    assert rows(p.table("t")) == [(1, "x"), (2, '{"a":2,"t":"2025-01-01T10:00:00.000001Z"}')]
