"""The write mode chosen from the pipeline (config/write_mode.py): a target no
`table_changes` source of the pipeline reads is merge-on-read, one that feeds a change feed stays
copy-on-write (Iceberg's changelog cannot read merge-on-read commits), an explicit setting wins,
and a merge-on-read target is compacted once enough of its stored rows are deleted
(`compact_at_deleted_ratio`) or it holds `compact_at_delete_files` delete files."""

from __future__ import annotations

import json

import pytest

from tests.conftest import FORMATS, rows

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
    assert p.backend.deletes(f"{ws.namespace}.customer_changes").files == 0  # one load, no deletes
    assert p.backend.deletes(f"{ws.namespace}.cities").files == 0


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
    assert p.backend.deletes(name).files == 0  # inserts only: nothing to compact
    assert [r for r in p.history("t") if r["status"] == "maintained"] == []

    ws.write("in/b1.csv", "id,v\n1,1\n")
    assert p.run().ok  # the update left a position delete, which reached the limit
    [upkeep] = [r for r in p.history("t") if r["status"] == "maintained"]
    done = json.loads(upkeep["replay"])["done"]
    assert done["rewritten_data_files"] >= 1 and "expired_snapshots" not in done
    assert rows(p.table("t")) == [(1, 1), (2, 0), (3, 0)]
    # the data files with deletes were rewritten with them applied (Iceberg drops the delete files
    # it then finds dangling, not always in the same commit)
    assert p.backend.deletes(name).files <= 1

    ws.write("in/b2.csv", "id,v\n3,3\n")
    result = p.run()  # the compaction is no rollback, and the next batch goes on top of it
    assert result.ok, result.to_dict()
    assert rows(p.table("t")) == [(1, 1), (2, 0), (3, 3)]


@pytest.mark.parametrize("table_format", FORMATS)
def test_a_merge_on_read_target_is_compacted_once_enough_of_its_rows_are_deleted(ws, table_format):
    """Iceberg keeps at most one position-delete file per data file, so a count of delete files
    says how many files a run touched, not what readers skip: the deleted rows against the stored
    rows do (Iceberg's snapshot summary; Delta's deletion vectors)."""
    table = f"""
- name: t
  format: {table_format}
  source: {{kind: files, path: in, format: csv, schema: {{id: int, v: int}}}}
  strategy: {{kind: key, keys: [id]}}
  maintenance: {{compact_at_deleted_ratio: 0.3, compact_min_deleted_rows: 1}}
"""
    ws.write("in/b0.csv", "id,v\n" + "".join(f"{i},0\n" for i in range(10)))
    p = ws.pipeline(table)
    assert p.run().ok
    ws.write("in/b1.csv", "id,v\n0,1\n1,1\n")  # two updates: 2 of 12 stored rows deleted
    assert p.run().ok
    name = f"{ws.namespace}.t"
    deletes = p.backend.deletes(name)
    assert (deletes.rows, deletes.stored) == (2, 12)
    assert [r for r in p.history("t") if r["status"] == "maintained"] == []
    assert p.plan().tables[0].maintenance == []

    ws.write("in/b2.csv", "id,v\n2,2\n3,2\n4,2\n")  # 5 of 15: past 0.3, compacted after the run
    result = p.run()
    assert result.ok, result.to_dict()
    [upkeep] = [r for r in p.history("t") if r["status"] == "maintained"]
    assert json.loads(upkeep["replay"])["done"]
    deletes = p.backend.deletes(name)
    assert (deletes.rows, deletes.stored) == (0, 10)
    expected = [(i, 1 if i < 2 else 2 if i < 5 else 0) for i in range(10)]
    assert rows(p.table("t")) == expected
