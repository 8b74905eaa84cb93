"""Conformance of `scd2` with its peers: each test is a peer's own published example,
run through the options that reproduce it. Sources are cited per test; /work/notes/peers-scd2.md
was the digest they were transcribed from. Batch times are the files' modification times (UTC)."""

from __future__ import annotations

from datetime import datetime

from tests.conftest import rows


def table(strategy: str, schema: str, name: str = "t") -> str:
    return f"""
- name: {name}
  source: {{kind: files, path: in, format: csv, schema: {{{schema}}}}}
  strategy: {strategy}
"""


def counts(result, batch_id):
    return next(b.counts for b in result.batches if b.batch_id == batch_id)


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def epoch(text: str) -> float:
    return at(text + "+00:00").timestamp()


EPOCH = at("1970-01-01 00:00:00")


def test_sqlmesh_scd_type_2_by_time(ws):
    """SQLMesh, tests/core/engine_adapter/integration/test_integration.py::test_scd_type_2_by_time
    (invalidate_hard_deletes true, updated_at_as_valid_from false): a version opens only when
    updated_at moves forward; new keys open at 1970-01-01, on the first load and later; a key
    missing from the source closes at the run's time (2023-01-05)."""
    strategy = (
        "{kind: scd2, keys: [id], sequence_by: updated_at, change_detection: sequence,"
        " late_rows: ignore, first_valid_from: epoch, full_snapshots: true}"
    )
    p = ws.pipeline(table(strategy, "id: int, name: string, updated_at: timestamp"))
    ws.write(
        "in/l1.csv",
        "id,name,updated_at\n1,a,2022-01-01 00:00:00\n2,b,2022-01-02 00:00:00\n3,c,2022-01-03 00:00:00\n",
        mtime=epoch("2023-01-01 00:00:00"),
    )
    assert p.run().ok
    ws.write(
        "in/l2.csv",
        "id,name,updated_at\n1,x,2022-01-04 00:00:00\n3,c,2022-01-03 00:00:00\n4,d,2022-01-04 00:00:00\n",
        mtime=epoch("2023-01-05 00:00:00"),
    )
    result = p.run()
    assert result.ok, result.to_dict()
    assert counts(result, "l2.csv") == {"C": 1, "D": 1, "N": 1, "O": 1}
    assert rows(p.table("t"), ["id", "name", "updated_at", "valid_from", "valid_to"]) == [
        (1, "a", at("2022-01-01 00:00:00"), EPOCH, at("2022-01-04 00:00:00")),
        (1, "x", at("2022-01-04 00:00:00"), at("2022-01-04 00:00:00"), None),
        (2, "b", at("2022-01-02 00:00:00"), EPOCH, at("2023-01-05 00:00:00")),
        (3, "c", at("2022-01-03 00:00:00"), EPOCH, None),
        (4, "d", at("2022-01-04 00:00:00"), EPOCH, None),
    ]


def test_dbt_snapshot_timestamp_strategy(ws):
    """dbt, website/docs/docs/build/snapshots.md, "Sample results for the timestamp strategy"
    (docs.getdbt.com/docs/build/snapshots): the query's run time (11:00, 11:30) is used nowhere;
    dbt_valid_from and dbt_updated_at are the row's updated_at."""
    strategy = (
        "{kind: scd2, keys: [id], sequence_by: updated_at, change_detection: sequence,"
        " late_rows: ignore, valid_from_column: dbt_valid_from, valid_to_column: dbt_valid_to,"
        " valid_from_copy: dbt_updated_at}"
    )
    p = ws.pipeline(table(strategy, "id: int, status: string, updated_at: timestamp"))
    ws.write(
        "in/r1.csv",
        "id,status,updated_at\n1,pending,2024-01-01 10:47:00\n",
        mtime=epoch("2024-01-01 11:00:00"),
    )
    assert p.run().ok
    ws.write(
        "in/r2.csv",
        "id,status,updated_at\n1,shipped,2024-01-01 11:05:00\n",
        mtime=epoch("2024-01-01 11:30:00"),
    )
    assert p.run().ok
    columns = ["id", "status", "updated_at", "dbt_valid_from", "dbt_valid_to", "dbt_updated_at"]
    assert rows(p.table("t"), columns) == [
        (
            1,
            "pending",
            at("2024-01-01 10:47:00"),
            at("2024-01-01 10:47:00"),
            at("2024-01-01 11:05:00"),
            at("2024-01-01 10:47:00"),
        ),
        (1, "shipped", at("2024-01-01 11:05:00"), at("2024-01-01 11:05:00"), None, at("2024-01-01 11:05:00")),
    ]


def test_dbt_hard_deletes_new_record(ws):
    """dbt-adapters, dbt-tests-adapter/.../simple_snapshot/new_record_timestamp_mode.py
    (test_snapshot_new_record_mode): a deleted key gets a deletion row that repeats its last
    values with dbt_is_deleted true (2 rows), never twice (still 2), is closed when the key comes
    back (3), and a second delete adds a second one (4). Adapted: the returning row's updated_at
    lies between the runs (the test's is in 2200), as lakefresh orders the run time of a
    deletion and the rows' updated_at on one line."""
    strategy = (
        "{kind: scd2, keys: [id], sequence_by: updated_at, change_detection: sequence,"
        " late_rows: ignore, full_snapshots: true, deletes: new_record,"
        " soft_delete_column: dbt_is_deleted}"
    )
    p = ws.pipeline(table(strategy, "id: int, first_name: string, updated_at: timestamp"))
    judith = "1,Judith,2015-12-24 12:19:28\n"
    arthur = "2,Arthur,2015-12-24 12:19:28\n"
    header = "id,first_name,updated_at\n"
    snapshots = [
        (header + judith + arthur, "2024-01-01 00:00:00"),
        (header + arthur, "2024-02-01 00:00:00"),  # id 1 deleted
        (header + arthur, "2024-03-01 00:00:00"),  # again: no second deletion row
        (header + "1,Judith,2024-04-01 12:00:00\n" + arthur, "2024-05-01 00:00:00"),  # back
        (header + arthur, "2024-06-01 00:00:00"),  # deleted again
    ]
    expected_rows_of_1 = [1, 2, 2, 3, 4]
    for i, ((text, when), n) in enumerate(zip(snapshots, expected_rows_of_1, strict=True)):
        ws.write(f"in/s{i}.csv", text, mtime=epoch(when))
        result = p.run()
        assert result.ok, result.to_dict()
        assert p.table("t").filter("id = 1").count() == n, i
    columns = ["id", "first_name", "updated_at", "valid_from", "valid_to", "dbt_is_deleted"]
    assert rows(p.table("t").filter("id = 1"), columns) == [
        (1, "Judith", at("2015-12-24 12:19:28"), at("2015-12-24 12:19:28"), at("2024-02-01 00:00:00"), False),
        (1, "Judith", at("2015-12-24 12:19:28"), at("2024-02-01 00:00:00"), at("2024-04-01 12:00:00"), True),
        (1, "Judith", at("2024-04-01 12:00:00"), at("2024-04-01 12:00:00"), at("2024-06-01 00:00:00"), False),
        (1, "Judith", at("2024-04-01 12:00:00"), at("2024-06-01 00:00:00"), None, True),
    ]


def test_dlt_scd2_merge_key_scopes_the_retirements_to_the_batch_partitions(ws):
    """dlt, docs/website/docs/general-usage/merge-loading.md, scd2 with merge_key "date" (the
    "partition" example), and tests/load/pipeline/test_scd2.py::test_merge_key_partition: a
    load of 2024-01-02 retires nothing of 2024-01-01; a later load of 2024-01-01 retires b."""
    strategy = "{kind: scd2, keys: [date, name], full_snapshots: true, snapshot_scope: [date]}"
    p = ws.pipeline(table(strategy, "date: date, name: string"))
    loads = [
        ("date,name\n2024-01-01,a\n2024-01-01,b\n", "2024-01-02 03:03:35"),
        ("date,name\n2024-01-02,c\n2024-01-02,d\n", "2024-01-03 03:01:11"),
        ("date,name\n2024-01-01,a\n2024-01-01,bb\n", "2024-01-03 10:30:05"),
    ]
    for i, (text, when) in enumerate(loads):
        ws.write(f"in/l{i}.csv", text, mtime=epoch(when))
        assert p.run().ok
    t1, t2, t3 = (at(w) for _, w in loads)
    got = rows(p.table("t"), ["name", "valid_from", "valid_to"])
    assert got == [("a", t1, None), ("b", t1, t3), ("bb", t3, None), ("c", t2, None), ("d", t2, None)]


DATABRICKS_CDF = """\
userId,name,city,operation,sequenceNum
124,Raul,Oaxaca,INSERT,1
123,Isabel,Monterrey,INSERT,1
125,Mercedes,Tijuana,INSERT,2
126,Lily,Cancun,INSERT,2
123,,,DELETE,6
125,Mercedes,Guadalajara,UPDATE,6
125,Mercedes,Mexicali,UPDATE,5
123,Isabel,Chihuahua,UPDATE,5
"""


def test_databricks_auto_cdc_scd2_and_track_history_except(ws):
    """Databricks, "The AUTO CDC APIs" (docs.databricks.com/aws/en/ldp/cdc), "Examples: SCD type 1
    and SCD type 2 processing with CDF source data": stored as SCD type 2, then with TRACK
    HISTORY ON * EXCEPT (city), where a city change updates the version in place."""
    schema = "userId: int, name: string, city: string, operation: string, sequenceNum: int"
    base = (
        "kind: scd2, keys: [userId], sequence_by: sequenceNum, delete: {condition: \"operation = 'DELETE'\"}"
    )
    ws.write("in/b1.csv", DATABRICKS_CDF)
    p = ws.pipeline(
        table("{" + base + ", track_except: [operation]}", schema, "history")
        + table("{" + base + ", track_except: [operation, city]}", schema, "history_except_city")
    )
    assert p.run().ok
    columns = ["userId", "name", "city", "valid_from", "valid_to"]
    visible = "valid_from < valid_to OR valid_to IS NULL"  # (lakefresh keeps no tombstone here)
    assert rows(p.table("history").filter(visible), columns) == [
        (123, "Isabel", "Chihuahua", 5, 6),
        (123, "Isabel", "Monterrey", 1, 5),
        (124, "Raul", "Oaxaca", 1, None),
        (125, "Mercedes", "Guadalajara", 6, None),
        (125, "Mercedes", "Mexicali", 5, 6),
        (125, "Mercedes", "Tijuana", 2, 5),
        (126, "Lily", "Cancun", 2, None),
    ]
    assert rows(p.table("history_except_city").filter(visible), columns) == [
        (123, "Isabel", "Chihuahua", 1, 6),
        (124, "Raul", "Oaxaca", 1, None),
        (125, "Mercedes", "Guadalajara", 2, None),
        (126, "Lily", "Cancun", 2, None),
    ]


def test_late_rows_error_refuses_the_batch_and_names_the_keys(ws):
    """lakefresh's own rule (batches older than the last one: error, skip or apply): with
    late_rows: error a row at or before its key's latest event refuses the batch."""
    strategy = "{kind: scd2, keys: [id], sequence_by: d, late_rows: error}"
    p = ws.pipeline(table(strategy, "id: int, v: string, d: int"))
    ws.write("in/b1.csv", "id,v,d\n1,a,5\n")
    assert p.run().ok
    ws.write("in/b2.csv", "id,v,d\n1,b,4\n2,c,1\n")
    result = p.run()
    batch = next(b for b in result.batches if b.batch_id == "b2.csv")
    assert (
        batch.status == "refused"
        and "(1,)" in (batch.error or "")
        and "--skip-batch b2.csv" in (batch.error or "")
    )
    assert rows(p.table("t"), ["id", "v", "valid_from", "valid_to"]) == [(1, "a", 5, None)]


def test_sqlmesh_scd_type_2_by_column(ws):
    """SQLMesh, tests/core/engine_adapter/integration/test_integration.py::test_scd_type_2_by_column
    (check_columns [name, status], execution_time_as_valid_from false): the first (truncate) load
    opens every key at 1970-01-01; later, a change opens a version at the run's time (2023-01-05),
    a missing key closes then, and the new key 5 opens then, not at 1970-01-01."""
    strategy = (
        "{kind: scd2, keys: [id], track: [name, status], full_snapshots: true,"
        " first_valid_from: epoch_on_first_load}"
    )
    p = ws.pipeline(table(strategy, "id: int, name: string, status: string"))
    ws.write(
        "in/l1.csv",
        "id,name,status\n1,a,active\n2,b,inactive\n3,c,active\n4,d,active\n",
        mtime=epoch("2023-01-01 00:00:00"),
    )
    assert p.run().ok
    ws.write(
        "in/l2.csv",
        "id,name,status\n1,x,active\n3,c,active\n4,d,inactive\n5,e,inactive\n",
        mtime=epoch("2023-01-05 00:00:00"),
    )
    result = p.run()
    assert result.ok, result.to_dict()
    run = at("2023-01-05 00:00:00")
    assert rows(p.table("t"), ["id", "name", "status", "valid_from", "valid_to"]) == [
        (1, "a", "active", EPOCH, run),
        (1, "x", "active", run, None),
        (2, "b", "inactive", EPOCH, run),
        (3, "c", "active", EPOCH, None),
        (4, "d", "active", EPOCH, run),
        (4, "d", "inactive", run, None),
        (5, "e", "inactive", run, None),
    ]


def test_sqlmesh_a_returning_key_never_starts_before_its_deletion(ws):
    """SQLMesh, docs/concepts/models/model_kinds.md, "Example of SCD Type 2 By Time in Action"
    (invalidate_hard_deletes true): Cheeseburger, deleted by the run at 2020-01-02 11:00, comes
    back "with it's original updated at timestamp of 2020-01-01 00:00:00": its valid_from is
    2020-01-02 11:00, the deleted version's valid_to (valid_from = max(updated_at, valid_to) in
    sqlmesh/core/engine_adapter/base.py::_scd_type_2); in lakefresh one microsecond later, so
    the deletion stays in the history. Without the rule the row would be late (O)."""
    strategy = (
        "{kind: scd2, keys: [id], sequence_by: updated_at, change_detection: sequence,"
        " late_rows: ignore, first_valid_from: epoch, full_snapshots: true}"
    )
    p = ws.pipeline(table(strategy, "id: int, name: string, price: double, updated_at: timestamp"))
    header = "id,name,price,updated_at\n"
    ws.write(
        "in/l1.csv",
        header + "1,Chicken Sandwich,10.99,2020-01-01 00:00:00\n2,Cheeseburger,8.99,2020-01-01 00:00:00\n"
        "3,French Fries,4.99,2020-01-01 00:00:00\n",
        mtime=epoch("2020-01-01 00:00:00"),
    )
    ws.write(
        "in/l2.csv",
        header + "1,Chicken Sandwich,12.99,2020-01-02 00:00:00\n3,French Fries,4.99,2020-01-01 00:00:00\n",
        mtime=epoch("2020-01-02 11:00:00"),
    )
    ws.write(
        "in/l3.csv",
        header + "1,Chicken Sandwich,12.99,2020-01-02 00:00:00\n2,Cheeseburger,8.99,2020-01-01 00:00:00\n"
        "3,French Fries,4.99,2020-01-01 00:00:00\n",
        mtime=epoch("2020-01-03 00:00:00"),
    )
    result = p.run()
    assert result.ok, result.to_dict()
    deleted = at("2020-01-02 11:00:00")
    assert rows(p.table("t").filter("id = 2"), ["name", "updated_at", "valid_from", "valid_to"]) == [
        ("Cheeseburger", at("2020-01-01 00:00:00"), EPOCH, deleted),
        ("Cheeseburger", at("2020-01-01 00:00:00"), at("2020-01-02 11:00:00.000001"), None),
    ]


def test_dlt_scd2_identity_by_row_hash(ws):
    """dlt, tests/load/pipeline/test_scd2.py::test_core_functionality (docs: general-usage/
    merge-loading.md, "scd2 strategy": "A row hash is stored in _dlt_id and used as a surrogate
    key"): no natural key; a changed row retires its old hash and opens the new one; a row
    missing from the extract is retired; a new row opens at its load's time."""
    strategy = "{kind: scd2, row_hash: _dlt_id, full_snapshots: true}"
    p = ws.pipeline(table(strategy, "nk: int, c1: string, c2: string"))
    loads = [
        "1,foo,foo\n2,bar,bar\n",
        "1,foo,foo_updated\n2,bar,bar\n",
        "1,foo,foo_updated\n",
        "1,foo,foo_updated\n3,baz,baz\n",
    ]
    ts = [epoch(f"2024-01-0{i + 1} 00:00:00") for i in range(4)]
    for i, body in enumerate(loads):
        ws.write(f"in/l{i + 1}.csv", "nk,c1,c2\n" + body, mtime=ts[i])
    result = p.run()
    assert result.ok, result.to_dict()
    day = [at(f"2024-01-0{i + 1} 00:00:00") for i in range(4)]
    assert rows(p.table("t"), ["nk", "c2", "valid_from", "valid_to"]) == [
        (1, "foo", day[0], day[1]),
        (1, "foo_updated", day[1], None),
        (2, "bar", day[0], day[2]),
        (3, "baz", day[3], None),
    ]
    hashes = p.table("t").select("_dlt_id").distinct().count()
    assert hashes == 4 and len(p.table("t").first()["_dlt_id"]) == 32  # hex of 16 bytes


def test_dbt_snapshot_check_strategy_ignores_unchecked_columns(ws):
    """dbt, website/docs/docs/build/snapshots.md, "Check strategy" (check_cols: only these columns
    are compared; dbt never updates a snapshot row but for dbt_valid_to): a change of an
    unchecked column neither opens a version nor changes the current one."""
    strategy = "{kind: scd2, keys: [id], track: [status], untracked: ignore}"
    p = ws.pipeline(table(strategy, "id: int, status: string, note: string"))
    times = [epoch(f"2024-01-0{i} 00:00:00") for i in (1, 2, 3)]
    for i, body in enumerate(["1,pending,a\n", "1,pending,b\n", "1,shipped,c\n"]):
        ws.write(f"in/r{i + 1}.csv", "id,status,note\n" + body, mtime=times[i])
    result = p.run()
    assert result.ok, result.to_dict()
    assert [b.counts for b in result.batches] == [{"N": 1}, {"U": 1}, {"C": 1}]
    day1, day3 = at("2024-01-01 00:00:00"), at("2024-01-03 00:00:00")
    assert rows(p.table("t"), ["id", "status", "note", "valid_from", "valid_to"]) == [
        (1, "pending", "a", day1, day3),
        (1, "shipped", "c", day3, None),
    ]


def test_a_column_that_appears_later_is_tracked_without_a_config_change(ws):
    """(dlt and SQLMesh `columns *` track every column the source has): a column
    that first appears in a later batch is tracked at once: its first value opens a version (the
    earlier versions hold NULL there), and its next change opens another."""
    p = ws.pipeline(table("{kind: scd2, keys: [id]}", "id: int, name: string, tier: string"))
    times = [epoch(f"2024-02-0{i} 00:00:00") for i in (1, 2, 3)]
    ws.write("in/r1.csv", "id,name\n1,ann\n", mtime=times[0])
    ws.write("in/r2.csv", "id,name,tier\n1,ann,gold\n", mtime=times[1])
    ws.write("in/r3.csv", "id,name,tier\n1,ann,silver\n", mtime=times[2])
    result = p.run()
    assert result.ok, result.to_dict()
    assert [b.counts for b in result.batches] == [{"N": 1}, {"C": 1}, {"C": 1}]
    d = [at(f"2024-02-0{i} 00:00:00") for i in (1, 2, 3)]
    assert rows(p.table("t"), ["id", "tier", "valid_from", "valid_to"]) == [
        (1, "gold", d[1], d[2]),
        (1, "silver", d[2], None),
        (1, None, d[0], d[1]),
    ]
