"""Change-log outputs in Open Data Fabric's shape beside `snapshot`: `key` as
an upsert stream, `ledger` and `append` as logs of +A events, NULL event times, and each log's
current state. The upsert stream is checked with kamu's own tests of its UpsertStream merge."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from tests.conftest import FORMATS, rows

T0 = datetime(2025, 1, 1).timestamp()
DAY = 86400.0

UPSERTS = """
- name: pop
  source: {kind: files, path: in, format: csv, order_by: modified,
           schema: {op: int, year: int, city: string, population: long}}
  strategy: {kind: key, keys: [year, city], output: change_log, op_codes: numeric,
             event_time: year, delete: {column: op, value: 1}, drop_columns: [op]}
"""


def log_of(p, table="pop", after=-1):
    return [
        (r["op"], r["year"], r["city"], r["population"])
        for r in p.table(table).filter(f"offset > {after}").orderBy("offset").collect()
    ]


def test_kamu_upsert_stream(ws):
    """kamu-cli, src/infra/ingest-datafusion/tests/tests/test_merge_strategy_upsert_stream.rs
    (primary key year and city, event time year; ODF ops 0 +A, 1 -R, 2 -C, 3 +C, the input's op
    read as upsert or retract): test_upsert_merge_to_empty_as_is,
    test_upsert_merge_noop_upsert_unordered, test_upsert_merge_update_in_separate_batch and
    test_upsert_merge_delete_in_separate_batch, one after the other on one log. Events of a batch
    are ordered by key, then -R, -C, +C, +A (kamu's sort order)."""
    batches = [
        "0,2020,vancouver,1\n0,2020,seattle,2\n0,2020,kyiv,3\n",
        "0,2020,kyiv,3\n0,2020,seattle,2\n",  # no-op upserts, unordered
        "0,2020,vancouver,2\n3,2020,kyiv,4\n",
        "1,2020,seattle,0\n",  # a retraction carries the old values
    ]
    for i, body in enumerate(batches):
        ws.write(f"in/b{i}.csv", "op,year,city,population\n" + body, mtime=T0 + i * DAY)
    p = ws.pipeline(UPSERTS)
    result = p.run()
    assert result.ok, result.to_dict()
    assert [b.counts for b in result.batches] == [{"N": 3}, {"S": 2}, {"C": 2}, {"D": 1}]
    assert log_of(p) == [
        (0, 2020, "kyiv", 3),
        (0, 2020, "seattle", 2),
        (0, 2020, "vancouver", 1),
        (2, 2020, "kyiv", 3),
        (3, 2020, "kyiv", 4),
        (2, 2020, "vancouver", 1),
        (3, 2020, "vancouver", 2),
        (1, 2020, "seattle", 2),
    ]
    assert [r["offset"] for r in p.table("pop").orderBy("offset").collect()] == list(range(8))
    assert "_lf_batch_id" in p.table("pop").columns
    current = p.current("pop")
    assert rows(current, ["city", "population", "op"]) == [("kyiv", 4, 3), ("vancouver", 2, 3)]


def test_kamu_upsert_stream_compacts_changes_inside_a_batch(ws):
    """kamu-cli, test_merge_strategy_upsert_stream.rs, test_upsert_merge_to_empty_inter_batch_upserts
    and test_upsert_merge_update_in_same_batch / test_upsert_merge_delete_in_same_batch: a key's
    rows in one batch give one outcome, its last row's; seattle, appended and retracted in the
    same batch, leaves nothing."""
    first = "0,2020,vancouver,1\n0,2020,vancouver,2\n3,2020,vancouver,3\n0,2020,seattle,2\n"
    first += "0,2020,kyiv,3\n1,2020,seattle,2\n"
    ws.write("in/b0.csv", "op,year,city,population\n" + first, mtime=T0)
    p = ws.pipeline(UPSERTS)
    assert p.run().ok
    assert log_of(p) == [(0, 2020, "kyiv", 3), (0, 2020, "vancouver", 3)]
    ws.write("in/b1.csv", "op,year,city,population\n0,2020,vancouver,4\n0,2020,vancouver,5\n", mtime=T0 + DAY)
    ws.write("in/b2.csv", "op,year,city,population\n3,2020,kyiv,9\n1,2020,kyiv,0\n", mtime=T0 + 2 * DAY)
    result = p.run()
    assert result.ok, result.to_dict()
    assert log_of(p, after=1) == [(2, 2020, "vancouver", 3), (3, 2020, "vancouver", 5), (1, 2020, "kyiv", 3)]
    assert [b.duplicates for b in result.batches] == [1, 1]


BATCH_DAY = datetime.utcfromtimestamp(T0).date()


@pytest.mark.parametrize(
    ("rule", "counts", "expected"),
    [
        (
            "odf",  # the default: key 1's new event time alone is a correction
            {"C": 2},
            [
                ("+A", 1, "a", date(2024, 6, 1)),
                ("+A", 2, "b", BATCH_DAY),  # NULL: the batch's time
                ("-C", 1, "a", date(2024, 6, 1)),  # the old row's
                ("+C", 1, "a", date(2024, 6, 9)),
                ("-C", 2, "b", BATCH_DAY),
                ("+C", 2, "c", date(2024, 6, 10)),
                ("-R", 1, "a", date(2024, 6, 9)),  # the old row's
            ],
        ),
        (
            "effective",  # the event time says when, not what: key 1 is unchanged
            {"S": 1, "C": 1},
            [
                ("+A", 1, "a", date(2024, 6, 1)),
                ("+A", 2, "b", BATCH_DAY),
                ("-C", 2, "b", BATCH_DAY),
                ("+C", 2, "c", date(2024, 6, 10)),
                ("-R", 1, "a", date(2024, 6, 1)),
            ],
        ),
    ],
)
def test_upsert_stream_event_times_and_symbolic_codes(ws, rule, counts, expected):
    """Given key 1 seen again on a later day with the same value, key 2 changed, then key 1
    deleted: a NULL event time takes the batch's time on +A and +C, and -C and -R carry the old
    row's, under either `event_time_rule`. Under `odf` (Open Data Fabric's upsert stream, whose
    comparison covers the event time unless the new one is NULL) key 1's new day alone is a
    correction; under `effective` it is unchanged (S)."""
    ws.write("in/b0.csv", "id,v,seen,gone\n1,a,2024-06-01,false\n2,b,,false\n", mtime=T0)
    ws.write("in/b1.csv", "id,v,seen,gone\n1,a,2024-06-09,false\n2,c,2024-06-10,false\n", mtime=T0 + DAY)
    ws.write("in/b2.csv", "id,v,seen,gone\n1,,2024-06-11,true\n", mtime=T0 + 2 * DAY)
    p = ws.pipeline(
        f"""
- name: t
  source: {{kind: files, path: in, format: csv, order_by: modified,
           schema: {{id: int, v: string, seen: date, gone: boolean}}}}
  strategy: {{kind: key, keys: [id], output: change_log, event_time: seen, event_time_rule: {rule},
             delete: {{column: gone}}, drop_columns: [gone]}}
"""
    )
    result = p.run()
    assert result.ok, result.to_dict()
    assert [b.counts for b in result.batches] == [{"N": 2}, counts, {"D": 1}]
    got = [(r["op"], r["id"], r["v"], r["event_time"]) for r in p.table("t").orderBy("offset").collect()]
    assert got == expected
    assert rows(p.current("t"), ["id", "v"]) == [(2, "c")]


def test_upsert_stream_a_null_event_time_gives_none(ws):
    """kamu-cli, src/infra/ingest-datafusion/src/merge_strategies/upsert_stream.rs, its change
    filter: "Event time in `new` can be null and this alone should not be the reason to consider
    the row changed". Key 1 sent again without a day is unchanged; key 2 sent again with another
    day is corrected."""
    ws.write("in/b0.csv", "id,v,seen\n1,a,2024-06-01\n2,b,2024-06-01\n", mtime=T0)
    ws.write("in/b1.csv", "id,v,seen\n1,a,\n2,b,2024-06-02\n", mtime=T0 + DAY)
    p = ws.pipeline(
        """
- name: t
  source: {kind: files, path: in, format: csv, order_by: modified, schema: {id: int, v: string, seen: date}}
  strategy: {kind: key, keys: [id], output: change_log, event_time: seen}
"""
    )
    result = p.run()
    assert result.ok, result.to_dict()
    assert [b.counts for b in result.batches] == [{"N": 2}, {"S": 1, "C": 1}]
    got = [
        (r["op"], r["id"], r["event_time"])
        for r in p.table("t").filter("offset > 1").orderBy("offset").collect()
    ]
    assert got == [("-C", 2, date(2024, 6, 1)), ("+C", 2, date(2024, 6, 2))]


def test_key_log_with_full_snapshots_and_an_older_row(ws):
    """`key`'s own judgement holds in its log: a stored key the full snapshot lacks is retracted
    (R), and a row older than the stored one (O) appends nothing."""
    ws.write("in/b0.csv", "id,v,at\n1,a,5\n2,b,5\n", mtime=T0)
    ws.write("in/b1.csv", "id,v,at\n1,z,4\n", mtime=T0 + DAY)
    p = ws.pipeline(
        """
- name: t
  source: {kind: files, path: in, format: csv, order_by: modified, schema: {id: int, v: string, at: int}}
  strategy: {kind: key, keys: [id], date_column: at, full_snapshots: true, output: change_log}
"""
    )
    result = p.run()
    assert result.ok, result.to_dict()
    assert [b.counts for b in result.batches] == [{"N": 2}, {"O": 1, "R": 1}]
    got = [(r["offset"], r["op"], r["id"], r["v"]) for r in p.table("t").orderBy("offset").collect()]
    assert got == [(0, "+A", 1, "a"), (1, "+A", 2, "b"), (2, "-R", 2, "b")]


def test_kamu_ledger_as_a_change_log(ws):
    """kamu-cli, src/infra/ingest-datafusion/tests/tests/test_merge_strategy_ledger.rs,
    test_ledger_to_empty, test_ledger_unseen and test_ledger_seen_tail_unordered, with ODF's
    ledger output (every appended row a +A event with offset, system_time and event_time): seen
    keys append nothing, offsets continue; the events of one year keep their arrival order."""
    ws.write("in/b0.csv", "year,city,population\n2020,vancouver,1\n2020,seattle,2\n2020,kyiv,3\n", mtime=T0)
    ws.write("in/b1.csv", "year,city,population\n2020,kyiv,3\n2020,seattle,2\n", mtime=T0 + DAY)
    ws.write("in/b2.csv", "year,city,population\n2020,odessa,4\n", mtime=T0 + 2 * DAY)
    p = ws.pipeline(
        """
- name: pop
  source: {kind: files, path: in, format: csv, order_by: modified,
           schema: {year: int, city: string, population: long}}
  strategy: {kind: ledger, keys: [year, city], event_time: year, output: change_log}
"""
    )
    result = p.run()
    assert result.ok, result.to_dict()
    assert [b.counts for b in result.batches] == [{"N": 3, "K": 0}, {"N": 0, "K": 2}, {"N": 1, "K": 0}]
    got = [
        (r["offset"], r["op"], r["event_time"], r["city"], r["system_time"])
        for r in p.table("pop").orderBy("offset").collect()
    ]
    day = [datetime.utcfromtimestamp(T0 + i * DAY) for i in range(3)]
    assert got == [
        (0, "+A", 2020, "vancouver", day[0]),
        (1, "+A", 2020, "seattle", day[0]),
        (2, "+A", 2020, "kyiv", day[0]),
        (3, "+A", 2020, "odessa", day[2]),
    ]
    assert rows(p.current("pop"), ["city"]) == [("kyiv",), ("odessa",), ("seattle",), ("vancouver",)]


@pytest.mark.parametrize("table_format", FORMATS)
def test_kamu_writer_ledger_orders_by_event_time(ws, table_format):
    """kamu-cli, src/infra/core/tests/tests/ingest/test_writer.rs,
    test_data_writer_ledger_orders_by_event_time (primary key event time and city; the day here
    is `day`, since the log's own column takes the name event_time): rows arriving 2021 A, 2023 B,
    2022 C take offsets 0 A, 1 C, 2 B, by event time (the default, `log_order: event_time`).
    The next batch's offsets continue: a day before all of them still comes after them."""
    ws.write(
        "in/b0.csv",
        "day,city,population\n2021-01-01,A,1000\n2023-01-01,B,2000\n2022-01-01,C,3000\n",
        mtime=T0,
    )
    ws.write("in/b1.csv", "day,city,population\n2024-01-01,E,5\n2020-01-01,D,4\n", mtime=T0 + DAY)
    p = ws.pipeline(
        f"""
- name: pop
  format: {table_format}
  source: {{kind: files, path: in, format: csv, order_by: modified,
           schema: {{day: date, city: string, population: long}}}}
  strategy: {{kind: ledger, keys: [day, city], event_time: day, output: change_log, op_codes: numeric}}
"""
    )
    result = p.run()
    assert result.ok, result.to_dict()
    got = [
        (r["offset"], r["op"], r["event_time"], r["city"]) for r in p.table("pop").orderBy("offset").collect()
    ]
    assert got == [
        (0, 0, date(2021, 1, 1), "A"),
        (1, 0, date(2022, 1, 1), "C"),
        (2, 0, date(2023, 1, 1), "B"),
        (3, 0, date(2020, 1, 1), "D"),
        (4, 0, date(2024, 1, 1), "E"),
    ]


def test_a_ledger_log_in_arrival_order(ws):
    """`log_order: arrival`: the same batch's events take their offsets by file, then record."""
    ws.write(
        "in/b0.csv",
        "day,city,population\n2021-01-01,A,1000\n2023-01-01,B,2000\n2022-01-01,C,3000\n",
        mtime=T0,
    )
    p = ws.pipeline(
        """
- name: pop
  source: {kind: files, path: in, format: csv, schema: {day: date, city: string, population: long}}
  strategy: {kind: ledger, keys: [day, city], event_time: day, output: change_log, log_order: arrival}
"""
    )
    assert p.run().ok
    assert [(r["offset"], r["city"]) for r in p.table("pop").orderBy("offset").collect()] == [
        (0, "A"),
        (1, "B"),
        (2, "C"),
    ]


def test_append_as_a_change_log_with_null_and_numeric_event_times(ws):
    """kamu-cli, test_merge_strategy_append.rs (every row appended as it is), with ODF's append
    output: +A events in arrival order, the batch's time for a NULL timestamp event time. A NULL in
    a numeric event time cannot take the batch's time: it is quarantined with its reason, unless
    `null_event_times: keep` stores it as NULL (kamu accepts a NULL event time on a row)."""
    ws.write("in/b0.csv", "at,v\n2024-06-01 10:00:00,a\n,b\n", mtime=T0)
    ws.write("years/b0.csv", "at,v\n2020,a\n,b\n", mtime=T0)
    ws.write("kept/b0.csv", "at,v\n2020,a\n,b\n", mtime=T0)
    ws.write("kept_times/b0.csv", "at,v\n2024-06-01 10:00:00,a\n,b\n", mtime=T0)
    p = ws.pipeline(
        """
- name: t
  source: {kind: files, path: in, format: csv, schema: {at: timestamp, v: string}}
  strategy: {kind: append, event_time: at, output: change_log, op_codes: numeric}
- name: n
  source: {kind: files, path: years, format: csv, schema: {at: int, v: string}}
  strategy: {kind: append, event_time: at, output: change_log}
- name: kept
  source: {kind: files, path: kept, format: csv, schema: {at: int, v: string}}
  strategy: {kind: append, event_time: at, output: change_log, null_event_times: keep}
- name: kept_times
  source: {kind: files, path: kept_times, format: csv, schema: {at: timestamp, v: string}}
  strategy: {kind: append, event_time: at, output: change_log, null_event_times: keep}
"""
    )
    result = p.run()
    assert result.ok, result.to_dict()
    got = [(r["offset"], r["op"], r["event_time"], r["v"]) for r in p.table("t").orderBy("offset").collect()]
    assert got == [(0, 0, datetime(2024, 6, 1, 10), "a"), (1, 0, datetime.utcfromtimestamp(T0), "b")]
    assert rows(p.table("n"), ["offset", "op", "event_time", "v"]) == [(0, "+A", 2020, "a")]
    assert rows(p.quarantine("n"), ["line", "reason"]) == [
        (3, "event time column at is NULL (a number: no default)")
    ]
    assert rows(p.table("kept"), ["offset", "event_time", "v"]) == [(0, 2020, "a"), (1, None, "b")]
    assert rows(p.table("kept_times"), ["offset", "event_time", "v"]) == [
        (0, datetime(2024, 6, 1, 10), "a"),
        (1, None, "b"),
    ]
    assert p.quarantine("kept").count() == 0


def test_a_truncate_marker_retracts_the_keys_it_erases_from_the_log(ws):
    """`key`'s truncate markers in its upsert stream: every key the marker erases (E) gets its
    -R event, so the log's current state agrees with the key table the same batches make."""
    ws.write("in/b0.csv", "id,v,seq,op\n1,a,1,I\n2,b,2,I\n3,c,9,I\n", mtime=T0)
    ws.write("in/b1.csv", "id,v,seq,op\n,,5,T\n4,d,6,I\n", mtime=T0 + DAY)
    p = ws.pipeline(
        """
- name: t
  source: {kind: files, path: in, format: csv, order_by: modified,
           schema: {id: int, v: string, seq: int, op: string}}
  strategy: {kind: key, keys: [id], date_column: seq, drop_columns: [op],
             truncate: {column: op, value: T}, output: change_log}
"""
    )
    result = p.run()
    assert result.ok, result.to_dict()
    assert result.batches[1].counts == {"Z": 1, "E": 2, "N": 1}
    got = [(r["offset"], r["op"], r["id"], r["v"]) for r in p.table("t").orderBy("offset").collect()]
    assert got[3:] == [(3, "-R", 1, "a"), (4, "-R", 2, "b"), (5, "+A", 4, "d")]
    assert rows(p.current("t"), ["id", "v"]) == [(3, "c"), (4, "d")]
