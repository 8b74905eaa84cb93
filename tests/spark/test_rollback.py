"""`lakefresh rollback --table T --to-batch B`: the batches after B are undone
in one commit (Iceberg's rollback) and recorded as `unloaded`; the table then equals applying
the batches up to B, later runs never take the undone ones, and new batches land on top. A
commit after B by another writer refuses the rollback, changing nothing."""

from __future__ import annotations

import json

import pytest

from lakefresh.errors import ConfigError, TargetError
from tests.conftest import CATALOG, cli_in_process, rows

TABLE = """
- name: t
  source: {kind: files, path: in, format: csv, schema: {id: int, v: string, at: timestamp}}
  strategy: {kind: key, keys: [id], date_column: at, history: true}
"""


def batch(ws, name: str, *lines: str) -> None:
    ws.write(f"in/{name}", "id,v,at\n" + "".join(f"{line}\n" for line in lines))


def four_batches(ws) -> None:
    batch(ws, "b1.csv", "1,a,2025-01-01 00:00:00", "2,b,2025-01-01 00:00:00")
    batch(ws, "b2.csv", "2,B,2025-01-02 00:00:00", "3,c,2025-01-02 00:00:00")
    batch(ws, "b3.csv", "3,C,2025-01-03 00:00:00", "4,d,2025-01-03 00:00:00")
    batch(ws, "b4.csv", "1,A,2025-01-04 00:00:00")


def statuses(p, table: str = "t") -> list[tuple[str, str]]:
    return sorted((r["batch_id"], r["status"]) for r in p.history(table))


def test_rolling_back_to_a_batch_undoes_the_later_ones_in_the_table_and_its_history(ws):
    four_batches(ws)
    p = ws.pipeline(TABLE)
    assert p.run().ok

    done = cli_in_process(
        "rollback", "pipeline.yml", "--table", "t", "--to-batch", "b2.csv", "-o", "json", cwd=ws.root
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["unloaded"] == {
        "t": ["b4.csv", "b3.csv"],
        "t_history": ["b4.csv", "b3.csv"],
    }

    expected = [(1, "a", "b1.csv"), (2, "B", "b2.csv"), (3, "c", "b2.csv")]
    assert rows(p.table("t"), ["id", "v", "_lf_batch_id"]) == expected
    assert rows(p.table("t_history"), ["id", "v", "is_current"]) == [
        (1, "a", True),
        (2, "B", True),
        (2, "b", False),
        (3, "c", True),
    ]
    unloaded = [
        ("b1.csv", "published"),
        ("b2.csv", "published"),
        ("b3.csv", "unloaded"),
        ("b4.csv", "unloaded"),
    ]
    assert statuses(p) == statuses(p, "t_history") == unloaded
    effective = {r["batch_id"]: r["effective_count"] for r in p.history("t") if r["status"] == "published"}
    assert effective == {"b1.csv": 1, "b2.csv": 2}  # recounted: b1's id 1 counts again

    again = p.run()  # the undone batches are never taken again, and this is no rollback to report
    assert again.ok and again.batches == [], again.to_dict()
    batch(ws, "b5.csv", "5,e,2025-01-05 00:00:00")
    assert [b.batch_id for b in p.run().batches] == ["b5.csv", "b5.csv"]
    assert rows(p.table("t"), ["id", "v", "_lf_batch_id"]) == [*expected, (5, "e", "b5.csv")]


def test_a_commit_by_another_writer_after_the_batch_refuses_the_rollback(ws, spark):
    four_batches(ws)
    # one commit per batch (a backlog group is refused as a whole: tests/spark/test_backlog.py)
    p = ws.pipeline(TABLE.replace(", history: true", ""), defaults="backlog: {max_batches: 1}\n")
    assert p.run().ok
    spark.sql(
        f"INSERT INTO {CATALOG}.{ws.namespace}.t VALUES (9, 'z', TIMESTAMP '2025-01-09', NULL, NULL, NULL)"
    )
    before = rows(p.table("t"), ["id", "v"])

    with pytest.raises(TargetError, match=r"commits after it that are not lakefresh batches .*\(append\)"):
        p.rollback("t", "b2.csv")
    assert rows(p.table("t"), ["id", "v"]) == before
    assert ("b3.csv", "published") in statuses(p)

    with pytest.raises(ConfigError, match=r"batch 'b9\.csv' is not in the lineage of 't'"):
        p.rollback("t", "b9.csv")


def test_rolling_back_to_the_last_batch_changes_nothing(ws):
    batch(ws, "b1.csv", "1,a,2025-01-01 00:00:00")
    p = ws.pipeline(TABLE.replace(", history: true", ""))
    assert p.run().ok
    head = p.backend.head(f"{ws.namespace}.t")
    assert p.rollback("t", "b1.csv").unloaded == {"t": []}
    assert p.backend.head(f"{ws.namespace}.t") == head


def test_a_reset_unload_or_reload_after_the_batch_refuses_the_rollback(ws):
    """An unload settles the log as well (its batch `unloaded`): rolled back past, the table
    would hold the batch again while its log said `unloaded`."""
    four_batches(ws)
    p = ws.pipeline(TABLE.replace(", history: true", ""), defaults="backlog: {max_batches: 1}\n")
    assert p.run().ok
    p.unload("t", ["b3.csv"])
    before = rows(p.table("t"), ["id", "v"])

    with pytest.raises(
        ConfigError, match=r"the later commit 'lakefresh:unload:\w+' \(a reset, unload or reload\)"
    ):
        p.rollback("t", "b2.csv")
    assert rows(p.table("t"), ["id", "v"]) == before
    assert ("b3.csv", "unloaded") in statuses(p)


def test_rows_another_writer_stored_refuse_a_reset_even_after_their_commit_expired(ws, spark):
    """A reset rebuilds the table from its batches: rows no batch wrote would be lost. Their
    commit names the writer; once it expired, the rows themselves (no batch id) still refuse."""
    batch(ws, "b1.csv", "1,a,2025-01-01 00:00:00")
    p = ws.pipeline(TABLE.replace(", history: true", ""))
    assert p.run().ok
    values = "(9, 'z', TIMESTAMP '2025-01-09', NULL, NULL, NULL)"
    spark.sql(f"INSERT INTO {CATALOG}.{ws.namespace}.t VALUES {values}")
    with pytest.raises(TargetError, match=r"outside its batches \(version \d+ \(append\)"):
        p.reset("t")

    batch(ws, "b2.csv", "2,b,2025-01-02 00:00:00")
    assert p.run().ok
    spark.sql(
        f"CALL {CATALOG}.system.expire_snapshots(table => '{ws.namespace}.t', "
        "older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)"
    )
    with pytest.raises(TargetError, match=r"outside its batches \(rows that no batch wrote"):
        p.reset("t")
    assert rows(p.table("t"), ["id", "v"]) == [(1, "a"), (2, "b"), (9, "z")]
