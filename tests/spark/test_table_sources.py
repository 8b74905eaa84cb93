"""Sources over catalog tables: `table_snapshot` (a full read per snapshot) and `table_changes`
(a change feed between snapshots, with the `loads` log and stale-start detection)."""

from __future__ import annotations

import pytest

from tests.conftest import CATALOG, rows


def source_table(ws, spark, name="src"):
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{ws.namespace}")
    spark.sql(f"CREATE TABLE {CATALOG}.{ws.namespace}.{name} (id int, city string) USING iceberg")
    return f"{CATALOG}.{ws.namespace}.{name}"


def sql(spark, text):
    spark.sql(text)


def copy_of(ws, strategy: str):
    """A pipeline with table `copy`, a table_snapshot of table `src`."""
    return ws.pipeline(
        f"""
        - name: copy
          source: {{kind: table_snapshot, table: {ws.namespace}.src}}
          strategy: {strategy}
        """
    )


CHANGES = """
- name: dst
  source: {{kind: table_changes, table: {ns}.src, keys: [id]}}
  strategy: {{kind: key, keys: [id]}}
"""


def loads(ws, spark):
    return [
        (r.start_snapshot_id is None, r.processed)
        for r in spark.sql(
            f"SELECT * FROM {CATALOG}.{ws.control_namespace}.loads ORDER BY opened_at"
        ).collect()
    ]


def test_table_snapshot_reads_each_new_snapshot_once_as_a_full_batch(ws, spark):
    src = source_table(ws, spark)
    sql(spark, f"INSERT INTO {src} VALUES (1, 'Oslo'), (2, 'Rome')")
    p = copy_of(ws, "{kind: full}")
    assert p.run().ok
    assert rows(p.table("copy")) == [(1, "Oslo"), (2, "Rome")]
    assert p.run().batches == []  # the same snapshot: nothing
    sql(spark, f"DELETE FROM {src} WHERE id = 1")
    result = p.run()
    assert [b.batch_id.split("@")[0] for b in result.batches] == [f"{ws.namespace}.src"]
    assert rows(p.table("copy")) == [(2, "Rome")]


def test_a_table_rolled_back_and_forward_again_is_followed_by_its_copy(ws, spark):
    """The target follows its source back and forth: the rolled-back table's current snapshot
    was taken once already, but the target holds a later one's rows; then the later snapshot is
    made current again."""
    src = source_table(ws, spark)
    sql(spark, f"INSERT INTO {src} VALUES (1, 'Oslo')")
    p = copy_of(ws, "{kind: key, keys: [id], full_snapshots: true}")  # the stored rows are newer
    assert p.run().ok
    first = p.backend.head(f"{ws.namespace}.src")
    sql(spark, f"UPDATE {src} SET city = 'Bern' WHERE id = 1")
    sql(spark, f"INSERT INTO {src} VALUES (2, 'Rome')")
    second = p.backend.head(f"{ws.namespace}.src")
    assert p.run().ok
    assert rows(p.table("copy"), ["id", "city"]) == [(1, "Bern"), (2, "Rome")]
    p.backend.roll_back_to(f"{ws.namespace}.src", first)
    result = p.run()
    assert [b.batch_id.split("#")[0] for b in result.batches] == [f"{ws.namespace}.src@{first}"]
    assert rows(p.table("copy"), ["id", "city"]) == [(1, "Oslo")]
    assert p.run().batches == []  # taken: nothing more
    sql(spark, f"CALL {CATALOG}.system.set_current_snapshot('{ws.namespace}.src', {second})")
    assert [b.batch_id.split("#")[0] for b in p.run().batches] == [f"{ws.namespace}.src@{second}"]
    assert rows(p.table("copy"), ["id", "city"]) == [(1, "Bern"), (2, "Rome")]
    assert p.run().batches == []


def test_scd2_over_a_change_feed_keeps_a_version_per_commit_by_the_commit_time(ws, spark):
    """One load spans three commits of the source. Sequenced by the change feed's commit time,
    each commit's change of the key is a version of its own, from when it was committed (without
    a sequence, a load's changes of a key share the batch time: one version per load)."""
    src = source_table(ws, spark)
    sql(spark, f"INSERT INTO {src} VALUES (1, 'Oslo')")
    sql(spark, f"UPDATE {src} SET city = 'Rome' WHERE id = 1")
    sql(spark, f"UPDATE {src} SET city = 'Lima' WHERE id = 1")
    p = ws.pipeline(
        f"""
        - name: hist
          source: {{kind: table_changes, table: {ws.namespace}.src, keys: [id]}}
          transform: {{sql: "SELECT *, _lf_commit_timestamp AS changed_at FROM batch"}}
          strategy: {{kind: scd2, keys: [id], sequence_by: changed_at}}
        """
    )
    assert p.run().ok
    name = f"{ws.namespace}.src"
    at = [p.backend.committed_at(name, c.version) for c in reversed(p.backend.commits_after(name, None))]
    assert rows(p.table("hist"), ["id", "city", "valid_from", "valid_to"]) == [
        (1, "Lima", at[2], None),
        (1, "Oslo", at[0], at[1]),
        (1, "Rome", at[1], at[2]),
    ]


def test_changes_flow_into_a_keyed_target_load_by_load(ws, spark):
    src = source_table(ws, spark)
    # one data file: the update of key 1 rewrites key 2 unchanged, which is no change of key 2
    sql(spark, f"INSERT INTO {src} SELECT /*+ COALESCE(1) */ * FROM VALUES (1, 'Oslo'), (2, 'Rome')")
    p = ws.pipeline(CHANGES.format(ns=ws.namespace))
    assert p.run().batches[0].counts == {"N": 2}
    sql(spark, f"UPDATE {src} SET city = 'Kyiv' WHERE id = 1")
    sql(spark, f"DELETE FROM {src} WHERE id = 2")
    sql(spark, f"INSERT INTO {src} VALUES (3, 'Lima')")
    result = p.run()
    assert result.batches[0].counts == {"C": 1, "D": 1, "N": 1}  # three commits, one load
    assert rows(p.table("dst")) == [(1, "Kyiv"), (3, "Lima")]
    assert p.run().batches == []
    assert loads(ws, spark) == [(True, True), (False, True)]  # the second starts where the first ended


def test_a_failed_load_is_retried_with_the_same_end_and_a_concurrent_write_waits(ws, spark, monkeypatch):
    src = source_table(ws, spark)
    sql(spark, f"INSERT INTO {src} VALUES (1, 'Oslo')")
    p = ws.pipeline(CHANGES.format(ns=ws.namespace))
    monkeypatch.setenv("LAKEFRESH_FAULTS", "after_stage")
    first = p.run()
    assert not first.ok
    monkeypatch.delenv("LAKEFRESH_FAULTS")
    sql(spark, f"INSERT INTO {src} VALUES (2, 'Rome')")  # committed while the load was open
    result = p.run()
    assert result.batches[0].batch_id == first.batches[0].batch_id  # the same load
    assert [b.counts for b in result.batches] == [{"N": 1}, {"N": 1}]  # then the next one
    assert rows(p.table("dst")) == [(1, "Oslo"), (2, "Rome")]


@pytest.mark.parametrize("how", ["expired", "rolled back"])
def test_a_stale_start_snapshot_stops_with_the_way_out(ws, spark, how):
    src = source_table(ws, spark)
    sql(spark, f"INSERT INTO {src} VALUES (1, 'Oslo')")
    before = spark.sql(f"SELECT snapshot_id FROM {src}.snapshots").first()[0]
    sql(spark, f"INSERT INTO {src} VALUES (2, 'Rome')")
    p = ws.pipeline(CHANGES.format(ns=ws.namespace))
    assert p.run().ok  # the load ends at the second snapshot
    if how == "expired":
        sql(spark, f"INSERT INTO {src} VALUES (3, 'Lima')")
        sql(
            spark,
            f"CALL {CATALOG}.system.expire_snapshots(table => '{ws.namespace}.src', "
            "older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)",
        )
        expected = "which was expired"
    else:
        sql(spark, f"CALL {CATALOG}.system.rollback_to_snapshot('{ws.namespace}.src', {before})")
        sql(spark, f"INSERT INTO {src} VALUES (4, 'Bern')")
        expected = "no longer in its current history"
    result = p.run()
    assert not result.ok
    error = result.tables[0].error
    assert expected in error and "table_snapshot" in error and "lakefresh reset-load" in error
    assert rows(p.table("dst")) == [(1, "Oslo"), (2, "Rome")]  # nothing skipped, nothing re-read
    p.reset_load("dst")
    assert p.run().batches == []  # restarted at the current snapshot


def test_a_first_load_over_a_table_whose_oldest_snapshots_expired_stops_with_the_way_out(ws, spark):
    """A reader's first load reads the changes from the table's first snapshot. Iceberg's
    changelog over what is left reads only the snapshots still kept: Oslo, written in an expired
    one, never arrived, and the run succeeded."""
    src = source_table(ws, spark)
    sql(spark, f"INSERT INTO {src} VALUES (1, 'Oslo')")
    sql(spark, f"INSERT INTO {src} VALUES (2, 'Rome')")
    sql(
        spark,
        f"CALL {CATALOG}.system.expire_snapshots(table => '{ws.namespace}.src', "
        "older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)",
    )
    p = ws.pipeline(CHANGES.format(ns=ws.namespace))
    result = p.run()
    assert not result.ok
    error = result.tables[0].error
    assert "first version, which was expired" in error and "table_snapshot" in error, error
    assert "lakefresh reset-load" in error
    p.reset_load("dst")  # after a full load from a table_snapshot source: changes from here on
    sql(spark, f"INSERT INTO {src} VALUES (3, 'Lima')")
    assert p.run().ok
    assert rows(p.table("dst")) == [(3, "Lima")]


def test_a_failed_load_whose_end_was_rolled_back_is_opened_anew_and_reads_no_lost_row(ws, spark, monkeypatch):
    """the source is rolled back below a failed load's fixed end."""
    src = source_table(ws, spark)
    sql(spark, f"INSERT INTO {src} VALUES (1, 'Oslo')")
    p = ws.pipeline(CHANGES.format(ns=ws.namespace))
    assert p.run().ok
    kept = p.backend.head(f"{ws.namespace}.src")
    sql(spark, f"INSERT INTO {src} VALUES (2, 'Lost')")
    monkeypatch.setenv("LAKEFRESH_FAULTS", "after_stage")
    assert not p.run().ok  # the load up to the 'Lost' snapshot is open, not processed
    monkeypatch.delenv("LAKEFRESH_FAULTS")
    spark.sql(f"CALL {CATALOG}.system.rollback_to_snapshot('{ws.namespace}.src', {kept})")
    sql(spark, f"INSERT INTO {src} VALUES (3, 'Lima')")

    result = p.run()
    assert result.ok, result.to_dict()
    assert rows(p.table("dst")) == [(1, "Oslo"), (3, "Lima")]
    head = p.backend.head(f"{ws.namespace}.src")
    assert [b.batch_id for b in result.batches] == [f"{ws.namespace}.src@{kept}..{head}"]
    assert p.run().batches == []


def test_reapplying_a_change_feeds_rolled_back_loads_reads_them_again(ws, spark):
    """`--rolled-back reapply` applies the batches a rollback of the target removed again, in
    order. A change feed's loads stayed processed in its load log, so its next load started
    after them: their rows were never read again."""
    src = source_table(ws, spark)
    p = ws.pipeline(CHANGES.format(ns=ws.namespace))
    loaded = []
    for i, city in enumerate(["Oslo", "Rome", "Lima"], start=1):
        sql(spark, f"INSERT INTO {src} VALUES ({i}, '{city}')")
        result = p.run()
        assert result.ok, result.to_dict()
        loaded += [b.batch_id for b in result.batches]
    first = p.backend.published_batches(f"{ws.namespace}.dst")[loaded[0]]
    sql(spark, f"CALL {CATALOG}.system.rollback_to_snapshot('{ws.namespace}.dst', {first})")
    assert not p.run().ok  # stopped until the operator decides

    result = p.run(rolled_back="reapply")
    assert result.ok, result.to_dict()
    assert [b.batch_id for b in result.batches] == loaded[1:]
    assert rows(p.table("dst")) == [(1, "Oslo"), (2, "Rome"), (3, "Lima")]
    assert p.run().batches == []
