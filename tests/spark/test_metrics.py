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
    for column in (*added, "config_fingerprint", "config", "rule_results"):
        ws.spark.sql(f"ALTER TABLE {batches} DROP COLUMN {column}")
    ws.spark.sql(f"ALTER TABLE {quarantine} DROP COLUMN resolved_by")
    for table in (batches, quarantine):
        ws.spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('lakefresh.state-version'='1')")
    ws.write("in/b2.csv", "id,city,updated_at\n1,Bergen,2025-01-02\n")

    stale = ws.pipeline(KEYED)
    with pytest.raises(StateError, match="state version 1, this lakefresh uses 4: run `lakefresh migrate"):
        stale.run()
    assert stale.migrate() == [
        f"{ws.control_namespace}.batches: version 1 -> 2",
        f"{ws.control_namespace}.batches: version 2 -> 3",
        f"{ws.control_namespace}.batches: version 3 -> 4",
        f"{ws.control_namespace}.quarantine: version 1 -> 2",
        f"{ws.control_namespace}.quarantine: version 2 -> 3",
        f"{ws.control_namespace}.quarantine: version 3 -> 4",
    ]
    result = stale.run()
    assert result.ok, result.to_dict()
    assert effective(stale, "customers") == {"b1.csv": 0, "b2.csv": 1}
    assert stale.migrate() == []
