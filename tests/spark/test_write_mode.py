"""The write mode chosen from the pipeline (issue 18, item 4; config/write_mode.py): a target no
`table_changes` source of the pipeline reads is merge-on-read, one that feeds a change feed stays
copy-on-write (Iceberg's changelog cannot read merge-on-read commits), an explicit setting wins,
and a merge-on-read target is compacted once it holds `compact_at_delete_files` delete files."""

from __future__ import annotations

import json

from tests.conftest import rows

MODES = ("write.merge.mode", "write.update.mode", "write.delete.mode")

TABLES = """
- name: customers
  source: {{kind: files, path: in, format: csv, schema: {{id: int, city: string}}}}
  strategy: {{kind: key, keys: [id]}}
- name: customer_changes
  source: {{kind: table_changes, table: {ns}.customers, keys: [id]}}
  strategy: {{kind: key, keys: [id]}}
  depends_on: [customers]
- name: cities
  source: {{kind: files, path: in, format: csv, schema: {{id: int, city: string}}}}
  strategy: {{kind: key, keys: [id]}}
  write_mode: copy-on-write
- name: pinned
  source: {{kind: files, path: in, format: csv, schema: {{id: int, city: string}}}}
  strategy: {{kind: key, keys: [id]}}
  properties: {{write.merge.mode: copy-on-write}}
"""


def modes(p, table: str) -> dict[str, str | None]:
    found = p.backend.properties(f"{p.config.defaults.namespace}.{table}")
    return {m: found.get(m) for m in MODES}


def test_only_tables_no_change_feed_reads_are_merge_on_read_and_an_explicit_mode_wins(ws):
    ws.write("in/b1.csv", "id,city\n1,Oslo\n2,Rome\n")
    ws.write("in/b2.csv", "id,city\n1,Bergen\n")
    p = ws.pipeline(TABLES.format(ns=ws.namespace))
    result = p.run()
    assert result.ok, result.to_dict()

    assert modes(p, "customers") == dict.fromkeys(MODES, "copy-on-write")  # a change feed reads it
    assert modes(p, "customer_changes") == dict.fromkeys(MODES, "merge-on-read")
    assert modes(p, "cities") == dict.fromkeys(MODES, "copy-on-write")
    assert modes(p, "pinned") == {"write.merge.mode": "copy-on-write", **dict.fromkeys(MODES[1:])}
    for table in ("customers", "customer_changes", "cities", "pinned"):
        assert rows(p.table(table)) == [(1, "Bergen"), (2, "Rome")], table
    assert p.backend.delete_files(f"{ws.namespace}.customer_changes") == 0  # one load, no deletes
    assert p.backend.delete_files(f"{ws.namespace}.cities") == 0


def test_a_table_a_change_feed_starts_reading_goes_back_to_copy_on_write(ws):
    ws.write("in/b1.csv", "id,city\n1,Oslo\n")
    alone = ws.pipeline(TABLES.format(ns=ws.namespace).split("- name: customer_changes")[0])
    assert alone.run().ok
    assert modes(alone, "customers") == dict.fromkeys(MODES, "merge-on-read")

    ws.write("in/b2.csv", "id,city\n1,Bergen\n")
    p = ws.pipeline(TABLES.format(ns=ws.namespace))
    result = p.run(["customers", "customer_changes"])
    assert result.ok, result.to_dict()
    assert modes(p, "customers") == dict.fromkeys(MODES, "copy-on-write")
    assert rows(p.table("customer_changes")) == [(1, "Bergen")]


def test_a_merge_on_read_target_is_compacted_once_it_holds_enough_delete_files(ws):
    table = """
- name: t
  source: {kind: files, path: in, format: csv, schema: {id: int, v: int}}
  strategy: {kind: key, keys: [id]}
  maintenance: {compact_at_delete_files: 1}
"""
    ws.write("in/b0.csv", "id,v\n1,0\n2,0\n3,0\n")
    p = ws.pipeline(table)
    assert p.run().ok
    name = f"{ws.namespace}.t"
    assert p.backend.delete_files(name) == 0  # inserts only: nothing to compact
    assert [r for r in p.history("t") if r["status"] == "maintained"] == []

    ws.write("in/b1.csv", "id,v\n1,1\n")
    assert p.run().ok  # the update left a position delete, which reached the limit
    [upkeep] = [r for r in p.history("t") if r["status"] == "maintained"]
    done = json.loads(upkeep["replay"])["done"]
    assert done["rewritten_data_files"] >= 1 and "expired_snapshots" not in done
    assert rows(p.table("t")) == [(1, 1), (2, 0), (3, 0)]
    # the data files with deletes were rewritten with them applied (Iceberg drops the delete files
    # it then finds dangling, not always in the same commit)
    assert p.backend.delete_files(name) <= 1

    ws.write("in/b2.csv", "id,v\n3,3\n")
    result = p.run()  # the compaction is no rollback, and the next batch goes on top of it
    assert result.ok, result.to_dict()
    assert rows(p.table("t")) == [(1, 1), (2, 0), (3, 3)]
