"""Source `files`: the declared encoding (byte order marks, exact invalid bytes), the header against
the declared schema, and naive timestamps in the source's time zone, whatever Spark's session zone."""

from __future__ import annotations

import codecs
import gzip
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.conftest import rows

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
SESSION_ZONE = "spark.sql.session.timeZone"


def people(encoding: str) -> str:
    return f"""
    - name: people
      source:
        kind: files
        path: in
        format: csv
        schema: {{id: int, name: string}}
        csv: {{encoding: {encoding}}}
      strategy: {{kind: append}}
    """


def instants(df: Any, column: str = "ts") -> list[tuple[int, datetime | None]]:
    """(id, the stored instant in UTC), read as microseconds since the epoch: no time zone of the
    session or of this process takes part."""
    from pyspark.sql import functions as F

    got = df.select("id", F.unix_micros(column).alias("us")).collect()
    return sorted((r.id, None if r.us is None else EPOCH + timedelta(microseconds=r.us)) for r in got)


def utc(*fields: int) -> datetime:
    return datetime(*fields, tzinfo=UTC)  # type: ignore[misc]


@contextmanager
def session_zone(spark: Any, zone: str) -> Iterator[None]:
    before = spark.conf.get(SESSION_ZONE)
    spark.conf.set(SESSION_ZONE, zone)
    try:
        yield
    finally:
        spark.conf.set(SESSION_ZONE, before)


# --- encodings ---------------------------------------------------------------------------------


def test_utf16_files_with_a_byte_order_mark_load_in_either_byte_order(ws):
    ws.write("in/b1.csv", 'id,name\n1,zoë\n2,"two\nlines ✓"\nx,bad id\n'.encode("utf-16"))
    ws.write("in/b2.csv", codecs.BOM_UTF16_BE + "id,name\n3,ünïcödé\n".encode("utf-16-be"))
    p = ws.pipeline(people("UTF-16"))
    result = p.run()
    assert result.ok, result.to_dict()
    assert rows(p.table("people")) == [(1, "zoë"), (2, "two\nlines ✓"), (3, "ünïcödé")]
    assert rows(p.quarantine("people"), ["batch_id", "line", "record", "reason"]) == [
        ("b1.csv", 5, 3, "id: 'x' is not a valid int")
    ]


def test_utf32_files_with_a_byte_order_mark_load_in_either_byte_order(ws):
    ws.write("in/b1.csv", "id,name\n1,zoë\n".encode("utf-32"))
    ws.write("in/b2.csv", codecs.BOM_UTF32_BE + 'id,name\n2,"ünï\ncödé"\n'.encode("utf-32-be"))
    p = ws.pipeline(people("UTF-32"))
    assert p.run().ok
    assert rows(p.table("people")) == [(1, "zoë"), (2, "ünï\ncödé")]


def test_a_utf8_file_from_a_spreadsheet_keeps_its_first_column_name(ws):
    # "CSV UTF-8" as spreadsheet programs save it: a byte order mark and CRLF line breaks
    ws.write("in/b1.csv", codecs.BOM_UTF8 + "id,name\r\n1,zoë\r\n2,ann\r\n".encode())
    p = ws.pipeline("""
    - name: t
      source: {kind: files, path: in, format: csv}
      strategy: {kind: key, keys: [id]}
    """)
    result = p.run()
    assert result.ok, result.to_dict()
    assert p.table("t").columns[:2] == ["id", "name"]
    assert rows(p.table("t"), ["id", "name"]) == [(1, "zoë"), (2, "ann")]


def test_a_byte_order_mark_of_another_encoding_than_the_declared_one_refuses_the_batch(ws):
    ws.write("in/b1.csv", b"id,name\n1,ann\n")
    ws.write("in/b2.csv", "id,name\n2,bob\n".encode("utf-16"))  # declared UTF-8 (the default)
    p = ws.pipeline(people("UTF-8"))
    result = p.run()
    assert result.tables[0].error == (
        "batch b2.csv: b2.csv starts with a UTF-16LE byte order mark, but csv.encoding is UTF-8; "
        "declare csv.encoding: UTF-16"
    )
    assert rows(p.table("people")) == [(1, "ann")]


def test_a_genuine_replacement_character_loads_and_invalid_bytes_are_quarantined_by_line(ws):
    ws.write(
        "in/b1.csv",
        b"id,name\n"
        b"1,a \xef\xbf\xbd b\n"  # line 2: U+FFFD, valid UTF-8
        b"2,caf\xe9\n"  # line 3: a Latin-1 byte
        b'3,"two\nli\xffnes"\n'  # lines 4-5: one record, the bad byte on its second line
        b"4,ok\n",
    )
    p = ws.pipeline(people("UTF-8"))
    result = p.run()
    assert result.ok, result.to_dict()
    assert rows(p.table("people")) == [(1, "a \ufffd b"), (4, "ok")]
    assert rows(p.quarantine("people"), ["line", "record", "reason"]) == [
        (3, 2, "bytes that are not valid UTF-8"),
        (4, 3, "bytes that are not valid UTF-8"),
    ]


def test_a_compressed_file_is_checked_as_spark_reads_it_decompressed(ws):
    # not a plain local file: the JVM decompresses it into a temporary copy that Python decodes
    ws.write("in/b1.csv.gz", gzip.compress(codecs.BOM_UTF8 + b"id,name\n1,zo\xc3\xab\n2,caf\xe9\n"))
    p = ws.pipeline(people("UTF-8").replace("format: csv", "format: csv\n        pattern: '*.csv.gz'"))
    result = p.run()
    assert result.ok, result.to_dict()
    assert rows(p.table("people")) == [(1, "zoë")]
    assert rows(p.quarantine("people"), ["line", "reason"]) == [(3, "bytes that are not valid UTF-8")]


def test_a_header_that_lacks_a_declared_column_refuses_the_batch_until_corrected(ws):
    table = """
    - name: people
      source:
        kind: files
        path: in
        format: csv
        schema: {id: int, name: string, ts: timestamp}
      strategy: {kind: append}
    """
    ws.write("in/b1.csv", "id,name,ts\n1,ann,2025-01-01 10:00:00\n")
    ws.write("in/b2.csv", "id,nmae,ts\n2,bob,2025-01-02 10:00:00\n")
    p = ws.pipeline(table)
    result = p.run()
    assert result.tables[0].error == (
        "batch b2.csv: the header of b2.csv lacks declared column(s) 'name' (did you mean 'nmae'?); "
        "header: id, nmae, ts"
    )
    assert p.table("people").columns[:3] == ["id", "name", "ts"]  # no column `nmae`
    assert rows(p.table("people"), ["id", "name"]) == [(1, "ann")]

    ws.write("in/b2.csv", "id,name,ts\n2,bob,2025-01-02 10:00:00\n")
    result = p.run()
    assert result.ok, result.to_dict()
    assert rows(p.table("people"), ["id", "name"]) == [(1, "ann"), (2, "bob")]


# --- time zones --------------------------------------------------------------------------------


def zoned(name: str, timezone: str | None = None, csv: str = "") -> str:
    zone = f"\n    timezone: {timezone}" if timezone else ""
    options = f"\n    csv: {csv}" if csv else ""
    return f"""
- name: {name}
  source:
    kind: files
    path: in
    format: csv
    schema: {{id: int, ts: timestamp}}{zone}{options}
  strategy: {{kind: append}}
"""


def test_naive_timestamps_are_read_in_the_source_time_zone_whatever_the_session_zone(ws, spark):
    ws.write(
        "in/b1.csv",
        "id,ts\n"
        "1,2025-01-15 10:00:00.123456\n"  # New York is UTC-5 in winter
        "2,2025-07-15T10:00:00.000001\n"  # and UTC-4 in summer
        "3,2025-01-15\n",  # a date alone: midnight
    )
    stored = {}
    for session in ("UTC", "America/Los_Angeles"):
        suffix = session.split("/")[-1].lower()
        tables = zoned(f"ny_{suffix}", "America/New_York") + zoned(f"plain_{suffix}")
        p = ws.pipeline(tables, name=f"{suffix}.yml")
        with session_zone(spark, session):
            assert p.run().ok
        stored[session] = (instants(p.table(f"ny_{suffix}")), instants(p.table(f"plain_{suffix}")))
    assert stored["UTC"] == stored["America/Los_Angeles"]
    assert stored["UTC"] == (
        [
            (1, utc(2025, 1, 15, 15, 0, 0, 123456)),
            (2, utc(2025, 7, 15, 14, 0, 0, 1)),
            (3, utc(2025, 1, 15, 5, 0)),
        ],
        [  # no timezone: UTC
            (1, utc(2025, 1, 15, 10, 0, 0, 123456)),
            (2, utc(2025, 7, 15, 10, 0, 0, 1)),
            (3, utc(2025, 1, 15, 0, 0)),
        ],
    )


def test_a_local_time_skipped_by_daylight_saving_is_quarantined(ws):
    ws.write(
        "in/b1.csv",
        "id,ts\n1,2025-03-09 01:59:59.999999\n2,2025-03-09 02:30:00\n3,2025-03-09 03:00:00\n",
    )
    p = ws.pipeline(zoned("t", "America/New_York"))
    result = p.run()
    assert result.ok, result.to_dict()
    assert instants(p.table("t")) == [
        (1, utc(2025, 3, 9, 6, 59, 59, 999999)),  # EST, UTC-5
        (3, utc(2025, 3, 9, 7, 0)),  # EDT, UTC-4
    ]
    assert rows(p.quarantine("t"), ["line", "record", "reason"]) == [
        (3, 2, "ts: '2025-03-09 02:30:00' does not exist in America/New_York (daylight saving gap)")
    ]


def test_an_ambiguous_local_time_takes_the_earlier_offset(ws):
    # 2025-11-02 01:00-02:00 happens twice in New York: first in EDT (UTC-4), then in EST (UTC-5)
    ws.write("in/b1.csv", "id,ts\n1,2025-11-02 00:59:59\n2,2025-11-02 01:30:00\n3,2025-11-02 02:00:00\n")
    p = ws.pipeline(zoned("t", "America/New_York"))
    assert p.run().ok
    assert instants(p.table("t")) == [
        (1, utc(2025, 11, 2, 4, 59, 59)),
        (2, utc(2025, 11, 2, 5, 30)),  # the EDT one, not 06:30
        (3, utc(2025, 11, 2, 7, 0)),
    ]


def test_timestamps_with_an_explicit_zone_keep_it(ws, spark):
    ws.write(
        "in/b1.csv",
        "id,ts\n"
        "1,2025-01-15T10:00:00Z\n"
        "2,2025-01-15 10:00:00+01:00\n"
        "3,2025-01-15T10:00:00.5-08:00\n"
        "4,2025-01-15 10:00:00 UTC\n"
        "5,2025-01-15 10:00:00 Europe/Paris\n",
    )
    p = ws.pipeline(zoned("t", "America/New_York"))
    with session_zone(spark, "Asia/Tokyo"):
        assert p.run().ok
    assert instants(p.table("t")) == [
        (1, utc(2025, 1, 15, 10, 0)),
        (2, utc(2025, 1, 15, 9, 0)),
        (3, utc(2025, 1, 15, 18, 0, 0, 500000)),
        (4, utc(2025, 1, 15, 10, 0)),
        (5, utc(2025, 1, 15, 9, 0)),
    ]


def test_a_timestamp_format_reads_naive_text_in_the_source_zone_and_zoned_text_in_its_own(ws, spark):
    ws.write("in/b1.csv", "id,ts\n1,15/01/2025 10:00\n2,09/03/2025 02:30\n")
    ws.write("zoned/b1.csv", "id,ts\n1,15/01/2025 10:00 +01:00\n")
    tables = zoned("naive", "America/New_York", csv="{timestamp_format: 'dd/MM/yyyy HH:mm'}") + zoned(
        "with_zone", "America/New_York", csv="{timestamp_format: 'dd/MM/yyyy HH:mm XXX'}"
    ).replace("path: in", "path: zoned")
    p = ws.pipeline(tables)
    with session_zone(spark, "America/Los_Angeles"):
        assert p.run().ok
    assert instants(p.table("naive")) == [(1, utc(2025, 1, 15, 15, 0))]
    assert rows(p.quarantine("naive"), ["record", "reason"]) == [
        (2, "ts: '09/03/2025 02:30' does not exist in America/New_York (daylight saving gap)")
    ]
    assert instants(p.table("with_zone")) == [(1, utc(2025, 1, 15, 9, 0))]
