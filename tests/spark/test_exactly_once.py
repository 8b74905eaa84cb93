"""Exactly once: a batch is applied once, re-runs are no-ops, and a crash at any step leaves the
target at its last published batch, from which the next run finishes the job. Every strategy
through a raise and a crash at every fault point: tests/spark/test_contract_strategies.py."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from lakefresh.errors import CommitConflictError
from tests.conftest import rows

pytestmark = pytest.mark.lease

TABLE = """
- name: t
  source:
    kind: files
    path: in
    format: csv
    schema: {id: int, v: string, ts: timestamp}
  strategy: {kind: key, keys: [id], date_column: ts}
"""
# a killed run's lease lasts this long: then the next run takes its table over
SHORT_LEASE = "run: {lease_ttl: 3s}\n"
ONE_BY_ONE = "backlog: {max_batches: 1}\n"  # the path of a lone batch (backlogs: test_backlog.py)
AFTER_B1 = [(1, "a", "b1.csv"), (2, "b", "b1.csv")]
AFTER_B2 = [(1, "A", "b2.csv"), (2, "b", "b1.csv"), (3, "c", "b2.csv")]


def two_batches(ws):
    ws.write("in/b1.csv", "id,v,ts\n1,a,2025-01-01 00:00:00\n2,b,2025-01-01 00:00:00\n")
    ws.write(
        "in/b2.csv",
        "id,v,ts\n1,A,2025-01-02 00:00:00\n3,c,2025-01-02 00:00:00\nx,bad,2025-01-02 00:00:00\n",
    )


def target(p):
    return rows(p.table("t"), ["id", "v", "_lf_batch_id"])


def published_log(p):
    return sorted((r["batch_id"], r["status"]) for r in p.history("t") if r["status"] == "published")


def lineage(ws, p):
    backend = p.backend
    return sorted(backend.published_batches(f"{ws.namespace}.t"))


@pytest.mark.e2e
# in-process crashes at every point, for every strategy: tests/spark/test_contract_strategies.py
@pytest.mark.parametrize("point", ["after_write", "after_publish"])
def test_a_killed_process_is_finished_by_the_next_run(ws, point):
    two_batches(ws)
    path = ws.root / "pipeline.yml"
    path.write_text(ws.pipeline_yaml(TABLE) + SHORT_LEASE, encoding="utf-8")
    env = {**os.environ, "LAKEFRESH_FAULTS": f"{point}@b2.csv:kill"}
    proc = subprocess.run(
        [sys.executable, "-m", "lakefresh.cli", "run", str(path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == -9, proc.stderr  # SIGKILL, mid-batch

    p = ws.pipeline(TABLE)
    assert target(p) == (AFTER_B2 if point == "after_publish" else AFTER_B1)
    result = p.run(wait=60)  # once the killed run's lease expired
    assert result.ok, result.to_dict()
    assert target(p) == AFTER_B2
    assert lineage(ws, p) == ["b1.csv", "b2.csv"]
    assert published_log(p) == [("b1.csv", "published"), ("b2.csv", "published")]
    statuses = sorted(r["status"] for r in p.history("t") if r["batch_id"] == "b2.csv")
    # only an attempt killed after its record was written leaves a row to abandon
    assert statuses == (["abandoned", "published"] if point == "after_record_staged" else ["published"])
    assert rows(p.quarantine("t"), ["batch_id", "line"]) == [("b2.csv", 4)]


def test_a_lost_log_is_rebuilt_from_the_lineage_and_nothing_is_applied_twice(ws, spark):
    two_batches(ws)
    p = ws.pipeline(TABLE)
    assert p.run().ok
    spark.sql(f"DELETE FROM lf_test.{ws.control_namespace}.batches")
    result = p.run()
    assert result.ok and result.batches == []
    assert sorted(result.tables[0].recovered) == ["b1.csv", "b2.csv"]
    assert published_log(p) == [("b1.csv", "published"), ("b2.csv", "published")]
    assert target(p) == AFTER_B2


def test_a_failed_audit_publishes_nothing(ws, spark):
    ws.write("in/b1.csv", "id,v,ts\n1,a,2025-01-01 00:00:00\n")
    p = ws.pipeline(TABLE)
    assert p.run().ok
    # someone else writes a duplicate key into the target behind lakefresh's back
    spark.sql(
        f"INSERT INTO lf_test.{ws.namespace}.t "
        "SELECT id, v, ts, _lf_hash, _lf_updated_at, 'manual' FROM "
        f"lf_test.{ws.namespace}.t"
    )
    ws.write("in/b2.csv", "id,v,ts\n5,e,2025-01-02 00:00:00\n")
    p = ws.pipeline(TABLE, defaults="audit: {unique_keys: true}\n")
    result = p.run()
    batch = result.batches[0]
    assert batch.status == "audit_failed"
    assert "duplicate keys [(1,)]" in batch.error
    assert "b2.csv" not in lineage(ws, p)
    assert rows(p.table("t"), ["id"]) == [(1,), (1,)]


def test_publishing_refuses_a_staged_commit_whose_table_moved(ws, spark):
    ws.write("in/b1.csv", "id,v,ts\n1,a,2025-01-01 00:00:00\n")
    p = ws.pipeline(TABLE)
    assert p.run().ok
    backend, name = p.backend, f"{ws.namespace}.t"
    full = f"lf_test.{name}"
    staged = backend.stage(
        name,
        "manual-1",
        lambda: spark.sql(f"INSERT INTO {full} SELECT 8, v, ts, _lf_hash, _lf_updated_at, 'y' FROM {full}"),
    )
    spark.sql(f"INSERT INTO {full} SELECT 9, 'z', ts, _lf_hash, _lf_updated_at, 'x' FROM {full}")
    with pytest.raises(CommitConflictError):
        backend.publish(staged)
    assert "manual-1" not in backend.published_batches(name)


def test_the_batches_log_is_compacted_as_batches_go_and_keeps_every_record(ws, monkeypatch):
    """Each batch adds files to `batches` (its staged row, then the published update); past
    COMPACT_AT_FILES the table is rewritten into one file and its older snapshots expire, so a
    long-running pipeline does not slow down batch by batch. Nothing recorded is lost."""
    from lakefresh.state import control

    monkeypatch.setattr(control, "COMPACT_AT_FILES", 6)
    monkeypatch.setattr(control, "KEEP_VERSIONS", 2)
    for n in range(1, 6):
        ws.write(f"in/b{n}.csv", f"id,v,ts\n{n % 2},v{n},2025-01-0{n} 00:00:00\n")
    p = ws.pipeline(TABLE)
    assert p.run().ok

    batches = f"{ws.control_namespace}.batches"
    assert p.backend.file_count(batches) <= 6 + 3  # at most one batch's files past the threshold
    # 2 kept at the rewrite before b4, then b4's and b5's two commits each (13 without expiry)
    assert ws.version_counts([batches])[batches] <= 2 + 2 * 2
    assert [(r["batch_id"], r["status"], r["status_counts"]) for r in p.history("t")] == [
        ("b1.csv", "published", {"N": 1}),
        ("b2.csv", "published", {"N": 1}),
        ("b3.csv", "published", {"C": 1}),
        ("b4.csv", "published", {"C": 1}),
        ("b5.csv", "published", {"C": 1}),
    ]
    assert target(p) == [(0, "v4", "b4.csv"), (1, "v5", "b5.csv")]
    again = p.run()
    assert again.ok and again.batches == []


@pytest.mark.usefixtures("needs_record_in_commit")
def test_a_run_writes_the_log_once_and_a_crash_before_that_loses_no_count(ws, monkeypatch):
    """The lean commit path: the batches of a run are recorded in the log in
    one commit after the last publish (each batch's record travels in its own target commit), and
    a crash before that commit leaves a log the next run completes from those commits, counts
    and all."""
    from lakefresh.faults import SimulatedCrash

    ws.write("in/b1.csv", "id,v,ts\n1,a,2025-01-01 00:00:00\n2,b,2025-01-01 00:00:00\n")
    p = ws.pipeline(TABLE, defaults=ONE_BY_ONE)
    assert p.run().ok
    log = f"{ws.control_namespace}.batches"
    before = ws.version_counts([log])[log]
    for n in (2, 3, 4):
        ws.write(f"in/b{n}.csv", f"id,v,ts\n1,v{n},2025-01-0{n} 00:00:00\n{n + 1},n,2025-01-0{n} 00:00:00\n")
    result = p.run()
    assert result.ok and [b.status for b in result.batches] == ["published"] * 3
    assert ws.version_counts([log])[log] == before + 1

    expected = sorted(
        (r["batch_id"], r["attempt"], dict(r["status_counts"]), r["effective_count"], r["source_position"])
        for r in p.history("t")
    )
    assert [(e[0], e[2], e[3]) for e in expected] == [
        ("b1.csv", {"N": 2}, 1),
        ("b2.csv", {"C": 1, "N": 1}, 1),
        ("b3.csv", {"C": 1, "N": 1}, 1),
        ("b4.csv", {"C": 1, "N": 1}, 2),
    ]

    # the same batches again into a second table, crashing after the last publish
    q = ws.pipeline(TABLE.replace("name: t", "name: u"), defaults=ONE_BY_ONE, name="u.yml")
    monkeypatch.setenv("LAKEFRESH_FAULTS", "after_publish@b4.csv:crash")
    with pytest.raises(SimulatedCrash):
        q.run()
    monkeypatch.delenv("LAKEFRESH_FAULTS")
    assert [r["batch_id"] for r in q.history("u")] == []  # nothing logged yet
    again = q.run()
    assert (
        again.ok
        and again.batches == []
        and sorted(again.tables[0].recovered)
        == [
            "b1.csv",
            "b2.csv",
            "b3.csv",
            "b4.csv",
        ]
    )
    recovered = sorted(
        (r["batch_id"], dict(r["status_counts"]), r["effective_count"], r["status"]) for r in q.history("u")
    )
    assert recovered == [(e[0], e[2], e[3], "published") for e in expected]


def test_a_record_too_long_to_carry_is_written_as_a_staged_row_first(ws, monkeypatch):
    """The fallback of the lean path, as on an Iceberg before 1.12 (which drops the commit
    property) or for a batch of many files: the batch's row goes to the log `staged` before its
    publish, and the run's one MERGE marks it published."""
    import lakefresh.run.steps

    monkeypatch.setattr(lakefresh.run.steps, "MAX_CARRIED", 0)
    ws.write("in/b1.csv", "id,v,ts\n1,a,2025-01-01 00:00:00\n2,b,2025-01-01 00:00:00\n")
    p = ws.pipeline(TABLE, defaults=ONE_BY_ONE)
    assert p.run().ok
    log = f"{ws.control_namespace}.batches"
    before = ws.version_counts([log])[log]
    ws.write("in/b2.csv", "id,v,ts\n1,A,2025-01-02 00:00:00\n3,c,2025-01-02 00:00:00\n")
    ws.write("in/b3.csv", "id,v,ts\n3,C,2025-01-03 00:00:00\n")
    assert p.run().ok
    assert ws.version_counts([log])[log] == before + 3  # two staged rows, one MERGE
    assert sorted(
        (r["batch_id"], r["status"], dict(r["status_counts"]), r["effective_count"]) for r in p.history("t")
    ) == [
        ("b1.csv", "published", {"N": 2}, 1),
        ("b2.csv", "published", {"C": 1, "N": 1}, 1),
        ("b3.csv", "published", {"C": 1}, 1),
    ]


def test_maintenance_expires_nothing_while_a_batch_is_known_to_the_lineage_alone(ws, spark):
    """A batch whose record was lost (or whose run is still going) is known to its commit alone:
    expired unlogged, the next run would take its file again (an append table would hold its
    rows twice). Maintenance leaves the log to runs (it would abandon a running attempt)."""
    ws.write("in/b1.csv", "id,v\n1,a\n")
    ws.write("in/b2.csv", "id,v\n2,b\n")
    p = ws.pipeline(
        """
    - name: t
      source: {kind: files, path: in, format: csv}
      strategy: {kind: append}
      maintenance: {expire_after: 1ms, keep_snapshots: 1, remove_orphans_after: null}
    """,
        defaults=ONE_BY_ONE,
    )
    assert p.run().ok
    spark.sql(f"DELETE FROM lf_test.{ws.control_namespace}.batches")  # the records lost
    assert p.maintain().tables[0].unlogged == ["b1.csv", "b2.csv"]  # so nothing expires yet
    assert p.run().batches == []
    assert rows(p.table("t"), ["id", "v"]) == [(1, "a"), (2, "b")]
