"""Source `files`: strict parsing with quarantine, folders with completion markers, order, formats."""

from __future__ import annotations

import datetime
import json
import os
import time
from decimal import Decimal

from tests.conftest import rows

PEOPLE = """
- name: people
  source:
    kind: files
    path: in
    format: csv
    schema: {id: int, name: string, amount: int}
  strategy: {kind: append}
"""


def test_malformed_csv_rows_go_to_quarantine_with_file_line_and_reason(ws):
    ws.write(
        "in/b1.csv",
        b"id,name,amount\n"
        b"1,ann,10\n"
        b'2,"bob\nsmith, jr",20\n'  # a quoted newline and delimiter: one good record, two lines
        b"3,cat\n"  # too few cells
        b"4,dan,abc\n"  # not an int
        b"5,eve,50,extra\n"  # too many cells
        b"6,fr\xff\xfeed,60\n"  # bytes that are not UTF-8
        b'7,"gus ""the"" great",70\n',
    )
    p = ws.pipeline(PEOPLE)
    result = p.run()
    assert result.ok, result.to_dict()
    assert result.batches[0].record_count == 7
    assert result.batches[0].quarantined == 4
    assert rows(p.table("people")) == [
        (1, "ann", 10),
        (2, "bob\nsmith, jr", 20),
        (7, 'gus "the" great', 70),
    ]
    quarantined = p.quarantine("people").collect()
    assert {r["source_file"].rsplit("/", 1)[-1] for r in quarantined} == {"b1.csv"}
    assert sorted((r["line"], r["record"], r["reason"]) for r in quarantined) == [
        (5, 3, "wrong number of cells: expected 3 (id, name, amount)"),
        (6, 4, "amount: 'abc' is not a valid int"),
        (7, 5, "wrong number of cells: expected 3 (id, name, amount)"),
        (8, 6, "bytes that are not valid UTF-8"),
    ]
    raw = {r["line"]: r["raw"] for r in quarantined}
    assert raw[5] == "3,cat"
    assert json.loads(raw[6]) == {"id": "4", "name": "dan", "amount": "abc"}


def test_a_batch_of_only_bad_rows_is_refused_unless_max_bad_rows_lets_it_load(ws):
    """By default a batch whose every row is bad is refused (it waits); `max_bad_rows: 1.0`
    publishes it as an empty batch, its rows in quarantine."""
    ws.write("in/b1.csv", "id,name,amount\nx,ann,1\n")
    refused = ws.pipeline(PEOPLE).run()
    assert [b.status for b in refused.batches] == ["refused"]
    assert "1 bad row(s) (b1.csv line 2: id: 'x' is not a valid int): every row" in refused.batches[0].error
    p = ws.pipeline(PEOPLE + "  max_bad_rows: 1.0\n")
    result = p.run()
    assert result.ok
    assert (result.batches[0].record_count, result.batches[0].quarantined) == (1, 1)
    assert rows(p.table("people")) == []


def test_folder_batches_wait_for_their_completion_marker(ws):
    ws.write("in/2025-01-01/part-0.csv", "id,name,amount\n1,ann,10\n")
    ws.write("in/2025-01-01/part-1.csv", "id,name,amount\n2,bob,20\n")
    ws.write("in/2025-01-01/_SUCCESS", "")
    ws.write("in/2025-01-02/part-0.csv", "id,name,amount\n3,cat,30\n")  # still being written
    p = ws.pipeline(PEOPLE.replace("format: csv", "format: csv\n    layout: folder"))
    assert [b.batch_id for b in p.run().batches] == ["2025-01-01"]
    assert rows(p.table("people")) == [(1, "ann", 10), (2, "bob", 20)]
    assert p.run().batches == []  # still not complete
    ws.write("in/2025-01-02/_SUCCESS", "")
    assert [b.batch_id for b in p.run().batches] == ["2025-01-02"]
    assert p.run().batches == []  # taken exactly once
    assert rows(p.table("people"), ["id", "_lf_batch_id"]) == [
        (1, "2025-01-01"),
        (2, "2025-01-01"),
        (3, "2025-01-02"),
    ]


def test_a_file_modified_within_min_file_age_waits_and_so_do_the_files_after_it(ws):
    """A file written in place may still be growing: taken now, its later rows would never be
    read (its batch is taken). It waits until it is `min_file_age` old, as Apache NiFi's ListFile
    waits for its "Minimum File Age", and the files after it wait too, so batches stay in order."""
    an_hour_ago = time.time() - 3600
    ws.write("in/a.csv", "id,name,amount\n1,ann,10\n", mtime=an_hour_ago)
    b = ws.write("in/b.csv", "id,name,amount\n2,bob,20\n")  # just written
    ws.write("in/c.csv", "id,name,amount\n3,cat,30\n", mtime=an_hour_ago)
    p = ws.pipeline(PEOPLE.replace("format: csv", "format: csv\n    min_file_age: 5m"))
    assert [b.batch_id for b in p.run().batches] == ["a.csv"]
    assert p.plan().tables[0].waiting == [
        {"name": "b.csv", "reason": "modified less than min_file_age (300 s) ago: may still be written"},
        {"name": "c.csv", "reason": "after 'b.csv', which waits (batches stay in order)"},
    ]
    ws.write("in/b.csv", "id,name,amount\n2,bob,20\n4,dan,40\n")  # its writer finishes
    os.utime(b, (an_hour_ago, an_hour_ago))
    assert [b.batch_id for b in p.run().batches] == ["b.csv", "c.csv"]
    assert rows(p.table("people")) == [(1, "ann", 10), (2, "bob", 20), (3, "cat", 30), (4, "dan", 40)]
    ws.write("in/a.csv", "id,name,amount\n1,ann,10\n")  # a taken file touched: it holds nothing up
    ws.write("in/d.csv", "id,name,amount\n5,eve,50\n", mtime=an_hour_ago)
    assert [b.batch_id for b in p.run().batches] == ["d.csv"]


def test_order_by_modification_time(ws):
    ws.write("in/b.csv", "id,name,amount\n1,first,1\n", mtime=1_700_000_000)
    ws.write("in/a.csv", "id,name,amount\n1,second,2\n", mtime=1_700_000_500)
    p = ws.pipeline("""
    - name: t
      source:
        kind: files
        path: in
        format: csv
        order_by: modified
        schema: {id: int, name: string, amount: int}
      strategy: {kind: full}
    """)
    result = p.run()
    assert [b.batch_id for b in result.batches] == ["b.csv", "a.csv"]
    assert rows(p.table("t")) == [(1, "second", 2)]


def test_types_are_inferred_when_not_declared_then_kept_from_the_target(ws):
    ws.write("in/b1.csv", "id,amount,day\n1,1.5,2025-01-01\n")
    ws.write("in/b2.csv", "id,amount,day\n2,oops,2025-01-02\n3,2,2025-01-03\n")
    p = ws.pipeline("""
    - name: t
      source: {kind: files, path: in, format: csv}
      strategy: {kind: append}
    """)
    assert p.run().ok
    types = {f.name: f.dataType.simpleString() for f in p.table("t").schema.fields}
    assert (types["id"], types["amount"], types["day"]) == ("int", "double", "date")
    assert rows(p.quarantine("t"), ["batch_id", "reason"]) == [
        ("b2.csv", "amount: 'oops' is not a valid double")
    ]
    assert rows(p.table("t"), ["id", "amount"]) == [(1, 1.5), (3, 2.0)]


def test_json_lines_and_parquet(ws, spark):
    ws.write("json/b1.json", '{"id": 1, "name": "ann"}\n{"id": "x", "name": "bob"}\n{broken\n')
    ws.write_parquet("pq/b1.parquet", [(1, "ann"), (2, "bob")], "id int, name string")
    p = ws.pipeline("""
    - name: from_json
      source: {kind: files, path: json, format: json, schema: {id: int, name: string}}
      strategy: {kind: key, keys: [id]}
    - name: from_parquet
      source: {kind: files, path: pq, format: parquet}
      strategy: {kind: key, keys: [id]}
    """)
    result = p.run()
    assert result.ok, result.to_dict()
    assert rows(p.table("from_json")) == [(1, "ann")]
    assert rows(p.quarantine("from_json"), ["record", "reason"]) == [
        (2, "id: 'x' is not a valid int"),
        (3, "malformed JSON record"),
    ]
    assert rows(p.table("from_parquet")) == [(1, "ann"), (2, "bob")]


def test_a_missing_source_folder_is_a_clear_error(ws):
    p = ws.pipeline(PEOPLE)
    result = p.run()
    assert not result.ok
    assert result.tables[0].error == f"source folder {ws.root}/in does not exist"
    assert result.tables[0].resume_command.endswith("--table people")


def test_a_number_that_would_be_rounded_to_fit_its_type_is_quarantined(ws, spark):
    """A cast to a decimal rounds to its scale, and a cast of a Parquet double to an integer
    drops the fraction: either would store another number than the file holds."""
    ws.write("csv/b1.csv", "id,amount\n1,12.34\n2,12.340\n3,12.345\n4,1.2345E1\n5, 7 \n")
    ws.write_parquet("pq/b1.parquet", [(1, 2.0), (2, 1.7), (3, 1e12)], "id int, n double")
    p = ws.pipeline("""
    - name: from_csv
      source: {kind: files, path: csv, format: csv, schema: {id: int, amount: "decimal(10,2)"}}
      strategy: {kind: append}
    - name: from_parquet
      source: {kind: files, path: pq, format: parquet, schema: {n: int}}
      strategy: {kind: append}
    """)
    result = p.run()
    assert result.ok, result.to_dict()
    assert rows(p.table("from_csv")) == [(1, Decimal("12.34")), (2, Decimal("12.34")), (5, Decimal("7.00"))]
    assert rows(p.quarantine("from_csv"), ["record", "reason"]) == [
        (3, "amount: '12.345' does not fit decimal(10,2) without rounding"),
        (4, "amount: '1.2345E1' does not fit decimal(10,2) without rounding"),
    ]
    assert rows(p.table("from_parquet")) == [(1, 2)]
    assert rows(p.quarantine("from_parquet"), ["record", "reason"]) == [
        (2, "n: '1.7' does not fit int without rounding"),
        (3, "n: '1.0E12' is not a valid int"),
    ]


def test_a_date_with_text_after_it_is_not_a_date(ws):
    """Spark's cast reads `2025-01-31 garbage` as 2025-01-31; a date, or a date and a time, is
    a date, and anything else is quarantined."""
    ws.write(
        "in/b1.csv",
        "id,day\n1,2025-01-31\n2,2025-01-31 garbage\n3,2025-01-31T23:30:00+05:00\n4,2025-01-31 10:00\n",
    )
    p = ws.pipeline("""
    - name: t
      source: {kind: files, path: in, format: csv, schema: {id: int, day: date}}
      strategy: {kind: append}
    """)
    result = p.run()
    assert result.ok, result.to_dict()
    day = datetime.date(2025, 1, 31)
    assert rows(p.table("t")) == [(1, day), (3, day), (4, day)]
    assert rows(p.quarantine("t"), ["record", "reason"]) == [
        (2, "day: '2025-01-31 garbage' is not a valid date")
    ]


def test_an_inferred_column_of_numbers_written_with_leading_zeros_stays_text(ws):
    ws.write("in/b1.csv", "id,postcode,amount\n1,00123,0.5\n2,45000,10\n")
    p = ws.pipeline("""
    - name: t
      source: {kind: files, path: in, format: csv}
      strategy: {kind: append}
    """)
    result = p.run()
    assert result.ok, result.to_dict()
    types = {f.name: f.dataType.simpleString() for f in p.table("t").schema.fields}
    assert (types["id"], types["postcode"], types["amount"]) == ("int", "string", "double")
    assert rows(p.table("t")) == [(1, "00123", 0.5), (2, "45000", 10.0)]


def test_a_column_spelled_two_ways_is_a_clear_error(ws):
    """Spark's column names are not case sensitive: `id` and `ID` are one column twice."""
    ws.write("csv/b1.csv", "id,ID\n1,2\n")
    ws.write("json/b1.json", '{"id": 1, "Id": 2}\n')
    p = ws.pipeline("""
    - name: from_csv
      source: {kind: files, path: csv, format: csv}
      strategy: {kind: append}
    - name: from_json
      source: {kind: files, path: json, format: json}
      strategy: {kind: append}
    """)
    result = p.run()
    errors = {t.table: t.error for t in result.tables}
    assert errors["from_csv"].endswith("the header must name every column once, got ['id', 'ID']")
    assert errors["from_json"].startswith(
        "batch b1.json: its JSON spells one column two ways (names differing only in case are one column): "
    )


def test_a_wide_decimal_is_checked_for_rounding_and_a_doubles_last_bits_are_not(ws, spark):
    """decimal(38,2) leaves no room for a wider cast to compare with: the text's own digits say
    it. A double's last bits are noise (0.1 + 0.2 = 0.30000000000000004): 0.30 holds it."""
    ws.write("csv/b1.csv", "id,amount\n1,12.34\n2,12.345\n")
    ws.write_parquet("pq/b1.parquet", [(1, 0.1 + 0.2), (2, 0.125)], "id int, n double")
    p = ws.pipeline("""
    - name: from_csv
      source: {kind: files, path: csv, format: csv, schema: {id: int, amount: "decimal(38,2)"}}
      strategy: {kind: append}
    - name: from_parquet
      source: {kind: files, path: pq, format: parquet, schema: {n: "decimal(10,2)"}}
      strategy: {kind: append}
    """)
    result = p.run()
    assert result.ok, result.to_dict()
    assert rows(p.table("from_csv")) == [(1, Decimal("12.34"))]
    assert rows(p.quarantine("from_csv"), ["record", "reason"]) == [
        (2, "amount: '12.345' does not fit decimal(38,2) without rounding")
    ]
    assert rows(p.table("from_parquet")) == [(1, Decimal("0.30"))]
    assert rows(p.quarantine("from_parquet"), ["record", "reason"]) == [
        (2, "n: '0.125' does not fit decimal(10,2) without rounding")
    ]
