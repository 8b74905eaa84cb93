"""A batch's materialized rows are released when the work that made them ends
(lakehouse/checkpoints.py): one batch's attempt, published or failed, a backlog group, a
rebuild verb. Spark would otherwise hold their blocks until the driver's garbage collector
found them (a 5 M-row initial load's checkpoints: 2.6 GB, held while the next batches ran)."""

from __future__ import annotations

import pytest

from tests.conftest import rows

TABLE = """
- name: t
  source: {kind: files, path: in, format: csv, schema: {id: int, city: string}}
  strategy: {kind: key, keys: [id]}
"""


def persisted(spark) -> set[int]:
    """The ids of the RDDs the session holds blocks of (checkpoints and caches)."""
    return {int(k) for k in spark.sparkContext._jsc.getPersistentRDDs()}


@pytest.mark.usefixtures("needs_record_in_commit")
def test_a_run_of_one_batch_then_a_backlog_group_holds_no_rows_after_it(ws):
    ws.write("in/b1.csv", "id,city\n1,Oslo\n2,Rome\n")
    p = ws.pipeline(TABLE)
    before = persisted(ws.spark)
    assert p.run().ok
    ws.write("in/b2.csv", "id,city\n2,Lima\n3,Kyiv\n")
    ws.write("in/b3.csv", "id,city\n3,Nice\n4,Bern\n")
    result = p.run()  # b2 and b3 wait together: one group, one commit
    assert result.ok, result.to_dict()
    assert persisted(ws.spark) - before == set()
    history = [r for r in p.history("t") if r["status"] == "published"]
    published = {r["batch_id"]: r["published_snapshot_id"] for r in history}
    assert published["b2.csv"] == published["b3.csv"]  # the group's one commit
    assert rows(p.table("t"), ["id", "city", "_lf_batch_id"]) == [
        (1, "Oslo", "b1.csv"),
        (2, "Lima", "b2.csv"),
        (3, "Nice", "b3.csv"),
        (4, "Bern", "b3.csv"),
    ]


def test_a_failed_attempt_holds_no_rows_and_the_next_run_applies_the_batch(ws, monkeypatch):
    ws.write("in/b1.csv", "id,city\n1,Oslo\n")
    p = ws.pipeline(TABLE)
    assert p.run().ok
    ws.write("in/b2.csv", "id,city\n1,Rome\n2,Lima\n")
    before = persisted(ws.spark)
    monkeypatch.setenv("LAKEFRESH_FAULTS", "after_write@b2.csv")  # after its stage and its write
    assert not p.run().ok
    assert persisted(ws.spark) - before == set()
    monkeypatch.delenv("LAKEFRESH_FAULTS")
    assert p.run().ok
    assert rows(p.table("t"), ["id", "city"]) == [(1, "Rome"), (2, "Lima")]


def test_an_unload_holds_no_rows_after_it(ws):
    ws.write("in/b1.csv", "id,city\n1,Oslo\n2,Rome\n")
    p = ws.pipeline(TABLE)
    assert p.run().ok
    ws.write("in/b2.csv", "id,city\n2,Lima\n3,Kyiv\n")
    assert p.run().ok
    before = persisted(ws.spark)
    p.unload("t", ["b2.csv"])
    assert persisted(ws.spark) - before == set()
    assert rows(p.table("t"), ["id", "city"]) == [(1, "Oslo"), (2, "Rome")]
