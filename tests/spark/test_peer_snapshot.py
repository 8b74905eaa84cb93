"""Conformance of `snapshot` with kamu and Open Data Fabric: the change log's
shape, its op codes (text or ODF's numbers), its offsets, a reproducible system time, an integer
event time, ODF's event time rule (the default: -C and -R repeat the old row's event time, and a
change of the event time alone is a correction) beside lakefresh's `effective` one, NULL event
times kept, and the compared columns."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.conftest import FORMATS, rows

T0 = datetime(2025, 1, 1).timestamp()
DAY = 86400.0


def table(options: str, table_format: str = "iceberg") -> str:
    return f"""
- name: pop
  format: {table_format}
  source: {{kind: files, path: in, format: csv, schema: {{year: int, city: string, population: int}}}}
  strategy: {{kind: snapshot, keys: [city], event_time: year{options}}}
"""


def events(p, after: int = -1) -> list[tuple]:
    """The log's events after an offset: (offset, op, event_time, year, city, population)."""
    log = p.table("pop").filter(f"offset > {after}").orderBy("offset").collect()
    return [(r["offset"], r["op"], r["event_time"], r["year"], r["city"], r["population"]) for r in log]


def kamu_snapshots(ws, second: str) -> None:
    """kamu's tests' first state (vancouver 1, seattle 2, kyiv 3, all in 2020), then `second`."""
    header = "year,city,population\n"
    ws.write("in/s1.csv", header + "2020,vancouver,1\n2020,seattle,2\n2020,kyiv,3\n", mtime=T0)
    ws.write("in/s2.csv", header + second, mtime=T0 + DAY)


@pytest.mark.parametrize(
    ("codes", "ops"), [("symbolic", ["-C", "+C", "+A", "-R"]), ("numeric", [2, 3, 0, 1])]
)
def test_kamu_snapshot_merge_mix_of_changes(ws, codes, ops):
    """kamu-cli, src/infra/ingest-datafusion/tests/tests/test_merge_strategy_snapshot.rs,
    test_snapshot_merge_mix_of_changes (key city, event time year): over +A vancouver 1, seattle 2,
    kyiv 3, the snapshot (seattle 2, kyiv 4, odessa 5) appends -C kyiv 3, +C kyiv 4, +A odessa 5
    and the retraction of vancouver 1, in that order, at offsets 3-6. ODF RFC-015
    (rfcs/015-unified-changelog-stream-schema.md) numbers the ops 0 +A, 1 -R, 2 -C, 3 +C."""
    p = ws.pipeline(table(f", op_codes: {codes}"))
    ws.write("in/s1.csv", "year,city,population\n2020,vancouver,1\n2020,seattle,2\n2020,kyiv,3\n", mtime=T0)
    ws.write(
        "in/s2.csv", "year,city,population\n2020,seattle,2\n2020,kyiv,4\n2020,odessa,5\n", mtime=T0 + 86400
    )
    result = p.run()
    assert result.ok, result.to_dict()
    assert result.batches[1].counts == {"-C": 1, "+C": 1, "+A": 1, "-R": 1}
    log = p.table("pop").filter("offset >= 3").orderBy("offset")
    got = [(r["offset"], r["op"], r["event_time"], r["city"], r["population"]) for r in log.collect()]
    assert got == [
        (3, ops[0], 2020, "kyiv", 3),
        (4, ops[1], 2020, "kyiv", 4),
        (5, ops[2], 2020, "odessa", 5),
        (6, ops[3], 2020, "vancouver", 1),
    ]
    assert rows(p.current("pop"), ["city", "population"]) == [("kyiv", 4), ("odessa", 5), ("seattle", 2)]
    # system_time is the batch's time: the same log from the same batches, whenever it runs
    assert {r[0] for r in p.table("pop").select("system_time").distinct().collect()} == {
        datetime.utcfromtimestamp(T0),
        datetime.utcfromtimestamp(T0 + 86400),
    }


def test_compare_columns_limit_what_counts_as_a_change(ws):
    """Open Data Fabric, schemas/fragments/MergeStrategy.json, Snapshot.compareColumns: only the
    listed columns are compared; a change elsewhere appends nothing."""
    p = ws.pipeline(
        """
- name: pop
  source: {kind: files, path: in, format: csv, schema: {city: string, population: int, note: string}}
  strategy: {kind: snapshot, keys: [city], compare_columns: [population]}
"""
    )
    ws.write("in/s1.csv", "city,population,note\nkyiv,3,a\n", mtime=T0)
    ws.write("in/s2.csv", "city,population,note\nkyiv,3,b\n", mtime=T0 + 86400)
    ws.write("in/s3.csv", "city,population,note\nkyiv,4,b\n", mtime=T0 + 2 * 86400)
    result = p.run()
    assert [b.counts for b in result.batches] == [{"+A": 1}, {}, {"-C": 1, "+C": 1}]


@pytest.mark.parametrize("table_format", FORMATS)
def test_kamu_snapshot_merge_input_carries_event_time(ws, table_format):
    """kamu-cli, src/infra/ingest-datafusion/tests/tests/test_merge_strategy_snapshot.rs,
    test_snapshot_merge_input_carries_event_time (key city, event time year): over vancouver 1,
    seattle 2, kyiv 3 in 2020, the snapshot (2020 seattle 2, 2021 kyiv 3, 2021 odessa 5) appends
    -C kyiv 2020, +C kyiv 2021 (only its event time changed), +A odessa 2021 and -R vancouver
    2020: -C and -R repeat the old row's event time (the default, `event_time_rule: odf`)."""
    kamu_snapshots(ws, "2020,seattle,2\n2021,kyiv,3\n2021,odessa,5\n")
    p = ws.pipeline(table("", table_format))
    result = p.run()
    assert result.ok, result.to_dict()
    assert result.batches[1].counts == {"-C": 1, "+C": 1, "+A": 1, "-R": 1}
    assert events(p, after=2) == [
        (3, "-C", 2020, 2020, "kyiv", 3),
        (4, "+C", 2021, 2021, "kyiv", 3),
        (5, "+A", 2021, 2021, "odessa", 5),
        (6, "-R", 2020, 2020, "vancouver", 1),
    ]
    assert rows(p.current("pop"), ["city", "year"]) == [("kyiv", 2021), ("odessa", 2021), ("seattle", 2020)]


def test_the_effective_event_time_rule_on_kamus_example(ws):
    """lakefresh's other rule, `event_time_rule: effective`, on the same snapshots and a third:
    the event time says when a change took effect, not what changed. kyiv's new year alone
    appends nothing; a retraction carries the snapshot's latest event time (2021, then 2022), a
    correction the new row's (2022)."""
    kamu_snapshots(ws, "2020,seattle,2\n2021,kyiv,3\n2021,odessa,5\n")
    ws.write("in/s3.csv", "year,city,population\n2020,seattle,2\n2022,kyiv,4\n", mtime=T0 + 2 * DAY)
    p = ws.pipeline(table(", event_time_rule: effective"))
    result = p.run()
    assert result.ok, result.to_dict()
    assert [b.counts for b in result.batches][1:] == [{"+A": 1, "-R": 1}, {"-C": 1, "+C": 1, "-R": 1}]
    assert events(p, after=2) == [
        (3, "+A", 2021, 2021, "odessa", 5),
        (4, "-R", 2021, 2020, "vancouver", 1),
        (5, "-C", 2022, 2020, "kyiv", 3),
        (6, "+C", 2022, 2022, "kyiv", 4),
        (7, "-R", 2022, 2021, "odessa", 5),
    ]


def test_kamu_snapshot_merge_mix_of_changes_with_null_event_times_kept(ws):
    """kamu-cli, test_merge_strategy_snapshot.rs, test_snapshot_merge_mix_of_changes as written
    there: the new snapshot's years are NULL. With `null_event_times: keep` the events keep them:
    -C kyiv 2020 (the old row's), +C kyiv NULL, +A odessa NULL, -R vancouver 2020; a NULL event
    time gives none, so seattle (2020, then NULL) is unchanged."""
    kamu_snapshots(ws, ",seattle,2\n,kyiv,4\n,odessa,5\n")
    p = ws.pipeline(table(", null_event_times: keep"))
    result = p.run()
    assert result.ok, result.to_dict()
    assert result.batches[1].counts == {"-C": 1, "+C": 1, "+A": 1, "-R": 1}
    assert events(p, after=2) == [
        (3, "-C", 2020, 2020, "kyiv", 3),
        (4, "+C", None, None, "kyiv", 4),
        (5, "+A", None, None, "odessa", 5),
        (6, "-R", 2020, 2020, "vancouver", 1),
    ]
    assert rows(p.current("pop"), ["city", "year", "population"]) == [
        ("kyiv", None, 4),
        ("odessa", None, 5),
        ("seattle", 2020, 2),
    ]


def test_kamu_writer_snapshot_orders_by_pk_and_operation_type(ws):
    """kamu-cli, src/infra/core/tests/tests/ingest/test_writer.rs,
    test_data_writer_snapshot_orders_by_pk_and_operation_type (no event time column: every event
    takes its source's time, here the batch's): round 2 appends -R A, -C B, +C B, -C D, +C D at
    offsets 4-8, ordered by key then op, and -R and -C carry round 1's event time."""
    first, second = (datetime(2000, 1, d, 12, tzinfo=UTC) for d in (1, 2))
    ws.write("in/r1.csv", "city,population\nC,3000\nA,1000\nD,4000\nB,2000\n", mtime=first.timestamp())
    ws.write("in/r2.csv", "city,population\nC,3000\nB,4000\nD,5000\n", mtime=second.timestamp())
    p = ws.pipeline(
        """
- name: pop
  source: {kind: files, path: in, format: csv, schema: {city: string, population: long}}
  strategy: {kind: snapshot, keys: [city], op_codes: numeric}
"""
    )
    result = p.run()
    assert result.ok, result.to_dict()
    got = [
        (r["offset"], r["op"], r["event_time"], r["city"], r["population"]) for r in p.table("pop").collect()
    ]
    one, two = (t.replace(tzinfo=None) for t in (first, second))
    assert sorted(got) == [
        (0, 0, one, "A", 1000),
        (1, 0, one, "B", 2000),
        (2, 0, one, "C", 3000),
        (3, 0, one, "D", 4000),
        (4, 1, one, "A", 1000),
        (5, 2, one, "B", 2000),
        (6, 3, two, "B", 4000),
        (7, 2, one, "D", 4000),
        (8, 3, two, "D", 5000),
    ]


def test_the_event_time_counts_under_compare_columns_only_when_listed(ws):
    """Open Data Fabric, schemas/fragments/MergeStrategy.json, Snapshot.compareColumns: only the
    listed columns are compared. vancouver's new year alone appends nothing under compare_columns:
    [population], and a correction under compare_columns: [population, year]."""
    for folder in ("in", "listed"):
        ws.write(f"{folder}/s1.csv", "year,city,population\n2020,vancouver,1\n", mtime=T0)
        ws.write(f"{folder}/s2.csv", "year,city,population\n2021,vancouver,1\n", mtime=T0 + DAY)
    listed = table(", compare_columns: [population, year]").replace("name: pop", "name: listed")
    listed = listed.replace("path: in", "path: listed")
    p = ws.pipeline(table(", compare_columns: [population]") + listed)
    result = p.run()
    assert result.ok, result.to_dict()
    counts = {(b.table.split(".")[-1], b.batch_id): b.counts for b in result.batches}
    assert counts[("pop", "s2.csv")] == {}
    assert counts[("listed", "s2.csv")] == {"-C": 1, "+C": 1}
