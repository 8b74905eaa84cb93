"""Conformance of `snapshot` with kamu and Open Data Fabric: the change log's
shape, its op codes (text or ODF's numbers), its offsets, a reproducible system time, an integer
event time, and the compared columns."""

from __future__ import annotations

from datetime import datetime

import pytest

from tests.conftest import rows

T0 = datetime(2025, 1, 1).timestamp()


def table(options: str) -> str:
    return f"""
- name: pop
  source: {{kind: files, path: in, format: csv, schema: {{year: int, city: string, population: int}}}}
  strategy: {{kind: snapshot, keys: [city], event_time: year{options}}}
"""


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
