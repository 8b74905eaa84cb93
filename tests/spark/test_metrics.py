"""Per-batch metrics in `lakefresh.batches`: counts, effective counts after later batches
supersede earlier ones, files, bytes and phase timings; and the upgrade of older control tables."""

from __future__ import annotations

import pytest

from lakefresh.errors import StateError

KEYED = """
- name: customers
  source:
    kind: files
    path: in
    format: csv
    schema: {id: int, city: string, updated_at: timestamp}
  strategy: {kind: key, keys: [id], date_column: updated_at}
"""


def effective(p, table):
    return {r["batch_id"]: r["effective_count"] for r in p.history(table) if r["status"] == "published"}


def test_key_effective_counts_follow_the_rows_later_batches_take_over(ws):
    ws.write("in/b1.csv", "id,city,updated_at\n1,Oslo,2025-01-01\n2,Rome,2025-01-01\n3,Kyiv,2025-01-01\n")
    ws.write("in/b2.csv", "id,city,updated_at\n1,Bergen,2025-01-02\n2,Rome,2025-01-01\n")
    ws.write("in/b3.csv", "id,city,updated_at\n3,Lviv,2025-01-03\n1,Oslo,2024-12-01\n")
    p = ws.pipeline(KEYED)
    result = p.run()
    assert result.ok, result.to_dict()
    assert [b.effective_count for b in result.batches] == [3, 1, 1]
    # b1's rows 1 and 3 were changed later (b2, b3); b2's unchanged row 2 stays b1's
    assert effective(p, "customers") == {"b1.csv": 1, "b2.csv": 1, "b3.csv": 1}


@pytest.mark.usefixtures("needs_record_in_commit")
def test_a_batch_that_takes_rows_from_earlier_runs_says_so_in_its_own_row_and_the_log_is_appended(ws):
    """Effective counts as deltas (state version 5): a batch's row holds what it wrote and, in
    `superseded`, what it took from batches of earlier runs; their rows are never rewritten, so
    the run's one write to the log is an append. History reads each count less what was taken,
    and equals a count of the target's rows by batch, before and after a rollback's recount."""
    p = ws.pipeline(KEYED)
    log = f"lf_test.{ws.control_namespace}.batches"

    def stored():
        got = ws.spark.sql(f"SELECT batch_id, status, effective_count, superseded FROM {log}").collect()
        return sorted((r[0], r[1], r[2], dict(r[3] or {})) for r in got)

    def last_log_commit():
        newest = f"SELECT operation FROM {log}.snapshots ORDER BY committed_at DESC LIMIT 1"
        return ws.spark.sql(newest).first()[0]

    def recounted():
        target = p.table("customers").groupBy("_lf_batch_id").count().collect()
        return {r[0]: r[1] for r in target}

    for batch, text in (
        ("b1", "1,Oslo,2025-01-01\n2,Rome,2025-01-01\n3,Kyiv,2025-01-01\n"),
        ("b2", "1,Bergen,2025-01-02\n4,Lima,2025-01-02\n"),  # 1 of b1's rows
        ("b3", "2,Paris,2025-01-03\n4,Quito,2025-01-03\n"),  # 1 of b1's, 1 of b2's
    ):
        ws.write(f"in/{batch}.csv", "id,city,updated_at\n" + text)
        assert p.run().ok
        assert last_log_commit() == "append"
    assert stored() == [
        ("b1.csv", "published", 3, {}),
        ("b2.csv", "published", 2, {"b1.csv": 1}),
        ("b3.csv", "published", 2, {"b1.csv": 1, "b2.csv": 1}),
    ]
    assert effective(p, "customers") == recounted() == {"b1.csv": 1, "b2.csv": 1, "b3.csv": 2}

    p.rollback("customers", "b2.csv")  # b3 unloaded: b1's id 2 and b2's id 4 are theirs again
    assert effective(p, "customers") == recounted() == {"b1.csv": 2, "b2.csv": 2}
    # a recount stores each count plus what published rows say was taken (b2's); b3 is unloaded
    # and the table holds none of its rows
    assert [r[1:3] for r in stored()] == [("published", 3), ("published", 2), ("unloaded", 0)]

    ws.write("in/b4.csv", "id,city,updated_at\n3,Rome,2025-01-04\n")
    assert p.run().ok
    assert last_log_commit() == "append"
    assert effective(p, "customers") == recounted() == {"b1.csv": 1, "b2.csv": 2, "b4.csv": 1}


def test_what_a_rolled_back_batch_took_is_not_taken_from_the_batches_applied_again(ws):
    """b2 took one of b1's rows in a run of its own, as a delta in b2's row. Someone rolls the
    target back before both, and both are applied again: b2's old row, rolled back, took nothing,
    so b1 counts the row its new b2 took once, not twice."""
    p = ws.pipeline(KEYED)
    for batch, text in (
        ("b0", "9,Oslo,2025-01-01\n"),
        ("b1", "1,Rome,2025-01-02\n2,Kyiv,2025-01-02\n"),
        ("b2", "1,Lima,2025-01-03\n"),
    ):
        ws.write(f"in/{batch}.csv", "id,city,updated_at\n" + text)
        assert p.run().ok
    snapshot = p.backend.published_batches(f"{ws.namespace}.customers")["b0.csv"]
    ws.spark.sql(f"CALL lf_test.system.rollback_to_snapshot('{ws.namespace}.customers', {snapshot})")

    result = p.run(rolled_back="reapply")
    assert result.ok, result.to_dict()
    assert [b.batch_id for b in result.batches] == ["b1.csv", "b2.csv"]
    assert effective(p, "customers") == {"b0.csv": 1, "b1.csv": 1, "b2.csv": 1}


def test_full_batches_keep_no_effective_rows_once_replaced(ws):
    tables = KEYED.replace("{kind: key, keys: [id], date_column: updated_at}", "{kind: full}")
    ws.write("in/b1.csv", "id,city,updated_at\n1,Oslo,2025-01-01\n2,Rome,2025-01-01\n")
    ws.write("in/b2.csv", "id,city,updated_at\n3,Kyiv,2025-01-01\n")
    p = ws.pipeline(tables)
    assert p.run().ok
    assert effective(p, "customers") == {"b1.csv": 0, "b2.csv": 1}


@pytest.mark.parametrize("kind", ["append", "ledger"])
def test_append_only_strategies_keep_what_they_wrote(ws, kind):
    strategy = "{kind: append}" if kind == "append" else "{kind: ledger, keys: [id]}"
    tables = KEYED.replace("{kind: key, keys: [id], date_column: updated_at}", strategy)
    ws.write("in/b1.csv", "id,city,updated_at\n1,Oslo,2025-01-01\n2,Rome,2025-01-01\n")
    ws.write("in/b2.csv", "id,city,updated_at\n2,Rome,2025-01-01\n3,Kyiv,2025-01-01\n")
    p = ws.pipeline(tables)
    assert p.run().ok
    assert effective(p, "customers") == {"b1.csv": 2, "b2.csv": 2 if kind == "append" else 1}


def test_every_batch_records_files_bytes_timings_and_its_strategy(ws):
    ws.write("in/b1.csv", "id,city,updated_at\n1,Oslo,2025-01-01\nx,Rome,2025-01-01\n")
    p = ws.pipeline(KEYED)
    assert p.run().ok
    [row] = p.history("customers")
    assert row["strategy"] == "key"
    assert (row["record_count"], row["quarantined_count"], row["effective_count"]) == (2, 1, 1)
    assert row["status_counts"] == {"N": 1}
    assert row["files_written"] == 1 and row["bytes_written"] > 0
    for phase in ("read", "stage", "publish"):
        assert row[f"{phase}_seconds"] > 0
    assert row["audit_seconds"] >= 0  # a row-count audit reads only snapshot metadata


def test_control_tables_of_an_older_version_are_upgraded_by_migrate(ws):
    ws.write("in/b1.csv", "id,city,updated_at\n1,Oslo,2025-01-01\n")
    p = ws.pipeline(KEYED)
    assert p.run().ok
    batches = f"lf_test.{ws.control_namespace}.batches"
    quarantine = f"lf_test.{ws.control_namespace}.quarantine"
    added = ("strategy", "effective_count", "range_start", "range_end", "effective_ranges")
    for column in (*added, "config_fingerprint", "config", "rule_results", "superseded"):
        ws.spark.sql(f"ALTER TABLE {batches} DROP COLUMN {column}")
    ws.spark.sql(f"ALTER TABLE {quarantine} DROP COLUMN resolved_by")
    for table in (batches, quarantine):
        ws.spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('lakefresh.state-version'='1')")
    ws.write("in/b2.csv", "id,city,updated_at\n1,Bergen,2025-01-02\n")

    stale = ws.pipeline(KEYED)
    with pytest.raises(StateError, match="state version 1, this lakefresh uses 5: run `lakefresh migrate"):
        stale.run()
    assert stale.migrate() == [
        f"{ws.control_namespace}.batches: version 1 -> 2",
        f"{ws.control_namespace}.batches: version 2 -> 3",
        f"{ws.control_namespace}.batches: version 3 -> 4",
        f"{ws.control_namespace}.batches: version 4 -> 5",
        f"{ws.control_namespace}.quarantine: version 1 -> 2",
        f"{ws.control_namespace}.quarantine: version 2 -> 3",
        f"{ws.control_namespace}.quarantine: version 3 -> 4",
        f"{ws.control_namespace}.quarantine: version 4 -> 5",
    ]
    result = stale.run()
    assert result.ok, result.to_dict()
    assert effective(stale, "customers") == {"b1.csv": 0, "b2.csv": 1}
    assert stale.migrate() == []
