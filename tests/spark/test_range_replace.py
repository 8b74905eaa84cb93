"""Strategies `timestamp` and `sequence`: a batch replaces the target's rows inside its range."""

from __future__ import annotations

from datetime import datetime

import pytest

from tests.conftest import machine_zone, rows

READINGS = """
- name: readings
  source:
    kind: files
    path: in
    format: csv
    schema: {sensor: string, at: string, value: int}
  strategy: {kind: timestamp, column: at, format: "dd/MM/yyyy HH:mm"}
"""

SEQUENCED = """
- name: events
  source:
    kind: files
    path: in
    format: csv
    schema: {seq: bigint, value: string}
  strategy: {kind: sequence, column: seq}
"""


def ts(day: int, hour: int = 0) -> datetime:
    return datetime(2025, 1, day, hour)


def test_timestamp_overlapping_contained_and_disjoint_ranges(ws):
    # b1 owns [1st, 5th]; b2 overlaps its end; b3 lies inside what b1 still owns; b4 is disjoint
    ws.write(
        "in/b1.csv", "sensor,at,value\ns,01/01/2025 00:00,1\ns,03/01/2025 00:00,3\ns,05/01/2025 00:00,5\n"
    )
    ws.write("in/b2.csv", "sensor,at,value\ns,04/01/2025 00:00,40\ns,07/01/2025 00:00,70\n")
    ws.write("in/b3.csv", "sensor,at,value\ns,02/01/2025 00:00,20\ns,03/01/2025 00:00,30\n")
    ws.write("in/b4.csv", "sensor,at,value\ns,09/01/2025 00:00,90\n")
    p = ws.pipeline(READINGS)
    result = p.run()
    assert result.ok, result.to_dict()
    assert [b.counts for b in result.batches] == [
        {"N": 3, "D": 0},
        {"N": 2, "D": 1},  # the 5th, inside [4th, 7th], absent from b2: deleted
        {"N": 2, "D": 1},  # the 3rd is replaced
        {"N": 1, "D": 0},
    ]
    assert rows(p.table("readings"), ["at", "value", "_lf_batch_id"]) == [
        (ts(1), 1, "b1.csv"),
        (ts(2), 20, "b3.csv"),
        (ts(3), 30, "b3.csv"),
        (ts(4), 40, "b2.csv"),
        (ts(7), 70, "b2.csv"),
        (ts(9), 90, "b4.csv"),
    ]
    history = {r["batch_id"]: r for r in p.history("readings")}
    assert {b: (r["effective_count"], _ranges(r)) for b, r in history.items()} == {
        "b1.csv": (
            1,
            [
                "[2025-01-01 00:00:00.000000, 2025-01-02 00:00:00.000000)",
                "(2025-01-03 00:00:00.000000, 2025-01-04 00:00:00.000000)",
            ],
        ),
        "b2.csv": (2, ["[2025-01-04 00:00:00.000000, 2025-01-07 00:00:00.000000]"]),
        "b3.csv": (2, ["[2025-01-02 00:00:00.000000, 2025-01-03 00:00:00.000000]"]),
        "b4.csv": (1, ["[2025-01-09 00:00:00.000000, 2025-01-09 00:00:00.000000]"]),
    }
    assert (history["b1.csv"]["range_start"], history["b1.csv"]["range_end"]) == (
        "2025-01-01 00:00:00.000000",
        "2025-01-05 00:00:00.000000",
    )


def test_timestamp_values_that_do_not_parse_are_quarantined(ws):
    ws.write("in/b1.csv", "sensor,at,value\ns,01/01/2025 00:00,1\ns,2025-01-02,2\ns,,3\n")
    p = ws.pipeline(READINGS)
    result = p.run()
    assert result.ok, result.to_dict()
    reasons = sorted(r.reason for r in p.quarantine("readings").collect())
    assert reasons == [
        "cannot parse timestamp column at with format 'dd/MM/yyyy HH:mm'",
        "timestamp column at is NULL",
    ]
    assert rows(p.table("readings"), ["at", "value"]) == [(ts(1), 1)]


def test_sequence_ranges_and_a_batch_that_replaces_everything(ws):
    ws.write("in/b1.csv", "seq,value\n1,a\n2,b\n3,c\n")
    ws.write("in/b2.csv", "seq,value\n5,e\n6,f\n")  # disjoint
    ws.write("in/b3.csv", "seq,value\n2,B\n")  # contained in b1: b1 keeps two pieces
    ws.write("in/b4.csv", "seq,value\n0,z\n9,y\n")  # covers everything
    p = ws.pipeline(SEQUENCED)
    result = p.run()
    assert result.ok, result.to_dict()
    assert [b.counts for b in result.batches] == [
        {"N": 3, "D": 0},
        {"N": 2, "D": 0},
        {"N": 1, "D": 1},
        {"N": 2, "D": 5},
    ]
    assert rows(p.table("events"), ["seq", "value"]) == [(0, "z"), (9, "y")]
    assert rows(p.read_batch("events", "b3.csv"), ["seq", "value"]) == [
        (1, "a"),
        (2, "B"),
        (3, "c"),
        (5, "e"),
        (6, "f"),
    ]
    history = {r["batch_id"]: (r["effective_count"], _ranges(r)) for r in p.history("events")}
    assert history == {"b1.csv": (0, []), "b2.csv": (0, []), "b3.csv": (0, []), "b4.csv": (2, ["[0, 9]"])}


def test_sequence_effective_ranges_after_a_contained_batch(ws):
    ws.write("in/b1.csv", "seq,value\n1,a\n2,b\n3,c\n")
    ws.write("in/b2.csv", "seq,value\n2,B\n")
    p = ws.pipeline(SEQUENCED)
    assert p.run().ok
    history = {r["batch_id"]: (r["effective_count"], _ranges(r)) for r in p.history("events")}
    assert history == {"b1.csv": (2, ["[1, 2)", "(2, 3]"]), "b2.csv": (1, ["[2, 2]"])}


@pytest.mark.parametrize("declared", ["string"])
def test_a_sequence_column_must_be_numeric(ws, declared):
    ws.write("in/b1.csv", "seq,value\nx,a\n")
    p = ws.pipeline(SEQUENCED.replace("seq: bigint", f"seq: {declared}"))
    result = p.run()
    assert not result.ok
    assert "sequence column 'seq' is string; it must be numeric" in result.tables[0].error


def _ranges(row):
    from lakefresh.ranges import Interval

    return [str(Interval(**r)) for r in row["effective_ranges"] or []]


def test_a_sequence_value_that_bounds_no_range_is_quarantined(ws):
    """NaN sorts above every number: a batch's range [low, NaN] would replace every stored row
    from low on, later batches' rows included."""
    ws.write("in/b1.csv", "seq,value\n1,a\n2,b\n5,c\n")
    ws.write("in/b2.csv", "seq,value\n1,z\nNaN,y\n")
    p = ws.pipeline(SEQUENCED.replace("seq: bigint", "seq: double"))
    result = p.run()
    assert result.ok, result.to_dict()
    assert rows(p.table("events"), ["seq", "value"]) == [(1.0, "z"), (2.0, "b"), (5.0, "c")]
    assert rows(p.quarantine("events"), ["batch_id", "reason"]) == [
        ("b2.csv", "sequence column seq is NaN or infinite")
    ]


def test_a_timestamp_range_stays_put_on_a_machine_whose_zone_is_not_the_sessions(ws):
    """Python reads a collected timestamp in its own zone (New York here), the session in UTC: a
    range written back through Python moved five hours and replaced the wrong rows."""
    with machine_zone("America/New_York"):
        ws.write("in/b1.csv", "sensor,at,value\ns,01/01/2025 10:00,1\ns,01/01/2025 12:00,2\n")
        ws.write("in/b2.csv", "sensor,at,value\ns,01/01/2025 12:00,20\n")
        p = ws.pipeline(READINGS)
        result = p.run()
        assert result.ok, result.to_dict()
        assert [b.counts for b in result.batches] == [{"N": 2, "D": 0}, {"N": 1, "D": 1}]
        assert rows(p.table("readings"), ["value", "_lf_batch_id"]) == [(1, "b1.csv"), (20, "b2.csv")]
        b1 = next(r for r in p.history("readings") if r["batch_id"] == "b1.csv")
        assert (b1["range_start"], b1["range_end"]) == (
            "2025-01-01 10:00:00.000000",
            "2025-01-01 12:00:00.000000",
        )
