"""Decide, then act: `plan` and `run` see one assessment of a table (run/assessment.py). The plan
shows what the run would settle and why it would stop, writing nothing; the run settles it."""

from __future__ import annotations

import pytest

from lakefresh.faults import SimulatedCrash
from tests.conftest import CATALOG, FORMATS
from tests.spark.test_hostile_world import TABLE, batch, statuses


def test_a_rolled_back_table_stops_the_plan_as_the_run_and_the_plan_marks_nothing(ws):
    batch(ws, "b1.csv", "1,a,2025-01-01 00:00:00")
    batch(ws, "b2.csv", "2,b,2025-01-02 00:00:00")
    batch(ws, "b3.csv", "3,c,2025-01-03 00:00:00")
    p = ws.pipeline(TABLE)
    assert p.run().ok
    snapshot = p.backend.published_batches(f"{ws.namespace}.t")["b1.csv"]
    p.spark.sql(f"CALL {CATALOG}.system.rollback_to_snapshot('{ws.namespace}.t', {snapshot})")
    batch(ws, "b4.csv", "4,d,2025-01-04 00:00:00")
    log = [f"{ws.control_namespace}.batches"]
    before = ws.version_counts(log)

    (planned,) = p.plan().tables
    stop = "2 published batch(es) are no longer in its lineage (rolled back: b2.csv, b3.csv)"
    assert planned.stops.startswith(stop)
    assert [b.batch_id for b in planned.take] == ["b2.csv", "b3.csv", "b4.csv"]  # as a reapply takes them
    assert ws.version_counts(log) == before and statuses(p).count(("b2.csv", "published")) == 1

    result = p.run()
    assert "the table was rolled back (b2.csv, b3.csv)" in result.tables[0].error
    assert ("b2.csv", "rolled_back") in statuses(p)
    (again,) = p.plan().tables  # marked now: still waiting for the decision
    assert again.stops == planned.stops

    assert p.run(rolled_back="forget").ok
    (after,) = p.plan().tables
    assert (after.stops, after.take, after.recovered) == (None, [], {})


@pytest.mark.parametrize("table_format", FORMATS)
def test_a_batch_a_crash_left_unlogged_is_shown_recovered_by_the_plan_and_recorded_by_the_run(
    ws, monkeypatch, table_format
):
    batch(ws, "b1.csv", "1,a,2025-01-01 00:00:00")
    p = ws.pipeline(TABLE + f"  format: {table_format}\n")
    assert p.run().ok
    batch(ws, "b2.csv", "1,b,2025-01-02 00:00:00", "2,c,2025-01-02 00:00:00")
    monkeypatch.setenv("LAKEFRESH_FAULTS", "after_publish@b2.csv:crash")
    with pytest.raises(SimulatedCrash):
        p.run()
    monkeypatch.delenv("LAKEFRESH_FAULTS")
    assert statuses(p) in ([("b1.csv", "published")], [("b1.csv", "published"), ("b2.csv", "staged")])
    log = p.control.batches
    before = ws.version_counts([log], p.backend)

    (planned,) = p.plan().tables
    assert list(planned.recovered) == ["b2.csv"] and planned.recovered["b2.csv"] in ("staged", "carried")
    assert (planned.stops, planned.take) == (None, [])
    assert ws.version_counts([log], p.backend) == before

    result = p.run()
    assert result.ok and result.batches == [] and result.tables[0].recovered == ["b2.csv"]
    assert statuses(p) == [("b1.csv", "published"), ("b2.csv", "published")]
    effective = {r["batch_id"]: r["effective_count"] for r in p.history("t") if r["status"] == "published"}
    assert effective == {"b1.csv": 0, "b2.csv": 2}
    assert p.plan().tables[0].recovered == {}
