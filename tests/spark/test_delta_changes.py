"""Source `delta_changes`: a Delta table's change data feed, load by load.

A load identifier per reader, start and end versions with a
processed flag (the `loads` log), the end fixed when the load begins, dedupe by key, deletes that
delete, and a clear error when the versions a load needs were vacuumed, the feed was off, or the
table was restored below the position. The source table is written with plain Spark SQL, as
another team's table would be; a row is updated by a MERGE: in a session with Iceberg's SQL
extensions, Iceberg 1.10 (the Spark 3.5 line's) fails an UPDATE statement on a Delta table (a
`scala.MatchError` in its row-lineage rule, apache/iceberg#15040).
"""

from __future__ import annotations

import pytest

from tests.conftest import CATALOG, rows, run_paused

READER = """
- name: dst
  source: {{kind: delta_changes, path: {path}, keys: [id]{more}}}
  strategy: {{kind: key, keys: [id]}}
"""


def delta_source(ws, feed: bool = True) -> str:
    """A Delta table of its own at a path, with its change data feed on (or not)."""
    path = ws.root / "upstream" / "src"
    props = " TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')" if feed else ""
    ws.spark.sql(f"CREATE TABLE delta.`{path}` (id int, city string) USING delta{props}")
    return str(path)


def sql(ws, path: str, text: str) -> None:
    ws.spark.sql(text.replace("SRC", f"delta.`{path}`"))


def update(ws, path: str, key: int, city: str) -> None:
    """UPDATE SRC SET city = `city` WHERE id = `key`, as a MERGE (the module's doc)."""
    matched = f"WHEN MATCHED THEN UPDATE SET city = '{city}'"
    sql(ws, path, f"MERGE INTO SRC t USING (SELECT {key} AS id) s ON t.id = s.id {matched}")


def loads(ws) -> list[tuple]:
    found = ws.spark.sql(f"SELECT * FROM {CATALOG}.{ws.control_namespace}.loads ORDER BY opened_at").collect()
    return [(r.start_snapshot_id, r.end_snapshot_id, r.processed) for r in found]


def test_changes_flow_load_by_load_and_a_delete_deletes(ws):
    path = delta_source(ws)
    sql(ws, path, "INSERT INTO SRC VALUES (1, 'Oslo'), (2, 'Rome')")  # version 1
    p = ws.pipeline(READER.format(path=path, more=""))
    first = p.run()
    assert [(b.batch_id, b.counts) for b in first.batches] == [(f"{path}@first..1", {"N": 2})]
    update(ws, path, 1, "Kyiv")  # 2
    sql(ws, path, "DELETE FROM SRC WHERE id = 2")  # 3
    sql(ws, path, "INSERT INTO SRC VALUES (3, 'Lima')")  # 4
    second = p.run()
    assert second.batches[0].counts == {"C": 1, "D": 1, "N": 1}  # three commits, one load
    assert rows(p.table("dst"), ["id", "city"]) == [(1, "Kyiv"), (3, "Lima")]
    assert p.run().batches == []  # nothing new
    assert loads(ws) == [(None, 1, True), (1, 4, True)]


def test_two_readers_with_their_own_load_ids_and_the_first_version_after_the_feed_was_turned_on(ws):
    path = delta_source(ws, feed=False)
    sql(ws, path, "INSERT INTO SRC VALUES (1, 'Oslo')")  # 1: before the feed
    sql(ws, path, "ALTER TABLE SRC SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')")  # 2
    sql(ws, path, "INSERT INTO SRC VALUES (2, 'Rome')")  # 3
    tables = READER.format(path=path, more=", load_id: a") + READER.replace("dst", "dst2").format(
        path=path, more=", load_id: b, dedupe: true"
    )
    p = ws.pipeline(tables)
    assert p.run().ok
    # the feed has nothing before version 2: each reader starts there
    assert rows(p.table("dst"), ["id", "city"]) == rows(p.table("dst2"), ["id", "city"]) == [(2, "Rome")]
    update(ws, path, 2, "Pisa")
    update(ws, path, 2, "Bari")
    assert p.run(["dst2"]).batches[0].counts == {"C": 1}  # deduped: the last change only
    assert rows(p.table("dst2"), ["id", "city"]) == [(2, "Bari")]
    assert rows(p.table("dst"), ["id", "city"]) == [(2, "Rome")]  # reader a has not run
    assert p.run(["dst"]).batches[0].counts == {"C": 1}  # both changes; the key keeps the last
    assert rows(p.table("dst"), ["id", "city"]) == [(2, "Bari")]


def test_a_commit_during_a_load_waits_for_the_next_load(ws, monkeypatch):
    path = delta_source(ws)
    sql(ws, path, "INSERT INTO SRC VALUES (1, 'Oslo')")
    p = ws.pipeline(READER.format(path=path, more=""))
    # a commit to the source while the load is being read
    result = run_paused(
        p,
        monkeypatch,
        "after_read",
        ws.root / "go",
        lambda: sql(ws, path, "INSERT INTO SRC VALUES (2, 'Rome')"),
    )
    monkeypatch.delenv("LAKEFRESH_FAULTS")
    # the load's end was fixed before the commit: it is the next load's, listed after the publish
    assert [(b.batch_id, b.counts) for b in result.batches] == [
        (f"{path}@first..1", {"N": 1}),
        (f"{path}@1..2", {"N": 1}),
    ]
    assert rows(p.table("dst"), ["id", "city"]) == [(1, "Oslo"), (2, "Rome")]
    assert loads(ws) == [(None, 1, True), (1, 2, True)]


def errors(result) -> str:
    return " ".join(e for e in [t.error for t in result.tables] + [b.error for b in result.batches] if e)


@pytest.mark.parametrize("how", ["vacuumed", "restored", "feed off"])
def test_a_load_that_cannot_be_read_fails_naming_why_and_takes_nothing(ws, how):
    path = delta_source(ws, feed=how != "feed off")
    sql(ws, path, "INSERT INTO SRC VALUES (1, 'Oslo')")  # 1
    sql(ws, path, "INSERT INTO SRC VALUES (2, 'Rome')")  # 2
    p = ws.pipeline(READER.format(path=path, more=""))
    if how == "feed off":
        result = p.run()
        assert not result.ok and "its change data feed was off" in errors(result)
        assert not p.backend.exists(f"{ws.namespace}.dst")  # nothing taken
        return
    assert p.run().ok
    if how == "vacuumed":
        ws.spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
        try:
            update(ws, path, 1, "Kyiv")  # 3
            update(ws, path, 1, "Lima")  # 4
            sql(ws, path, "VACUUM SRC RETAIN 0 HOURS")
        finally:
            ws.spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
        message = "VACUUM removed files they need"
    else:
        sql(ws, path, "RESTORE TABLE SRC TO VERSION AS OF 1")  # 3: below the last load's end
        message = "start after version 2, which is no longer in its current history"
    result = p.run()
    assert not result.ok and message in errors(result)
    assert rows(p.table("dst"), ["id", "city"]) == [(1, "Oslo"), (2, "Rome")]  # nothing taken
