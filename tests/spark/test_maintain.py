"""`lakefresh maintain`: compaction, snapshot expiry and orphan file removal
by each table's policy, never expiring what a downstream change-feed reader still needs
(Iceberg's `rewrite_data_files`, `expire_snapshots` and `remove_orphan_files` procedures)."""

from __future__ import annotations

import json
import os
import time

from tests.conftest import CATALOG, rows

TABLES = """
- name: customers
  source: {{kind: files, path: in, format: csv, schema: {{id: int, city: string}}}}
  strategy: {{kind: key, keys: [id]}}
  maintenance: {{expire_after: 1ms, keep_snapshots: 1, remove_orphans_after: 1d}}
- name: customer_changes
  source: {{kind: table_changes, table: {ns}.customers, keys: [id]}}
  strategy: {{kind: key, keys: [id]}}
  depends_on: [customers]
  maintenance: {{after_runs: true, remove_orphans_after: null}}
"""


def snapshots(ws, table: str) -> list[int]:
    return [
        r[0]
        for r in ws.spark.sql(
            f"SELECT snapshot_id FROM {CATALOG}.{ws.namespace}.{table}.snapshots ORDER BY committed_at"
        ).collect()
    ]


def test_maintenance_compacts_expires_and_removes_orphans_but_keeps_a_readers_next_start(ws):
    for n in range(1, 4):
        ws.write(f"in/b{n}.csv", f"id,city\n{n},c{n}\n")
    p = ws.pipeline(TABLES.format(ns=ws.namespace))
    assert p.run().ok  # customer_changes reads the three commits in one load
    start = snapshots(ws, "customers")[-1]  # where its next load starts
    for n in range(4, 7):
        ws.write(f"in/b{n}.csv", f"id,city\n{n},c{n}\n")
    assert p.run(["customers"]).ok  # three more commits the reader has not taken
    orphan = ws.warehouse / ws.namespace / "customers" / "data" / "not-referenced.parquet"
    orphan.write_bytes(b"PAR1 left by a write that died two days ago")
    os.utime(orphan, (time.time() - 2 * 86400,) * 2)

    [done] = p.maintain(["customers"]).tables
    assert done.done["rewritten_data_files"] == 6 and done.done["added_data_files"] == 1
    assert done.done["removed_orphan_files"] == 1 and not orphan.exists()
    assert done.kept_for == ["customer_changes"]
    kept = snapshots(ws, "customers")
    assert kept[0] == start  # the two before it expired; it and every later one stay
    assert done.done["expired_snapshots"] == 2
    assert rows(p.table("customers")) == [(n, f"c{n}") for n in range(1, 7)]

    ws.write("in/b7.csv", "id,city\n1,Oslo\n")
    result = p.run()  # the compaction is no rollback; the reader's load starts where it ended
    assert result.ok, result.to_dict()
    assert [(b.table.split(".")[-1], b.counts) for b in result.batches] == [
        ("customers", {"C": 1}),
        ("customer_changes", {"N": 3, "C": 1}),
    ]
    assert rows(p.table("customer_changes")) == [(1, "Oslo")] + [(n, f"c{n}") for n in range(2, 7)]
    logged = [r for r in p.history("customer_changes") if r["status"] == "maintained"]
    assert len(logged) == 2  # after_runs: after each of its two runs that published
    assert set(json.loads(logged[0]["replay"])["done"]) == {
        "rewritten_data_files",
        "added_data_files",
        "rewritten_delete_files",
        "expired_snapshots",
    }


def test_nothing_expires_while_a_reader_has_not_taken_its_first_load(ws):
    ws.write("in/b1.csv", "id,city\n1,a\n")
    ws.write("in/b2.csv", "id,city\n2,b\n")
    p = ws.pipeline(TABLES.format(ns=ws.namespace))
    assert p.run(["customers"]).ok
    before = snapshots(ws, "customers")
    [done] = p.maintain(["customers"]).tables
    assert (done.expired_before, done.done.get("expired_snapshots", 0)) == (None, 0)
    assert snapshots(ws, "customers")[: len(before)] == before
    assert p.run().ok and rows(p.table("customer_changes")) == [(1, "a"), (2, "b")]
