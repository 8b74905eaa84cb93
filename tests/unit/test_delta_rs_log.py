"""A Delta table's log read on a Spark Connect client's side (lakehouse/delta/rs_log.py): a
location as Hadoop spells it is one delta-rs reads, and a table delta-rs writes answers the
questions the Connect road asks of it. No JVM."""

from __future__ import annotations

import json

import pytest

from lakefresh.lakehouse.backend import Deletes
from lakefresh.lakehouse.delta import rs_log
from lakefresh.lakehouse.delta.log import CommitFile, entries_after, history_entry
from lakefresh.lakehouse.storage import arrow_uri, local_path


@pytest.mark.parametrize(
    ("location", "read_as"),
    [
        ("/wh/ns/t", "/wh/ns/t"),
        ("file:/wh/ns/t", "/wh/ns/t"),
        ("file:///wh/ns/t", "/wh/ns/t"),
        ("s3a://bucket/wh/ns/t", "s3://bucket/wh/ns/t"),
        ("abfss://c@account.dfs.core.windows.net/t", "abfss://c@account.dfs.core.windows.net/t"),
    ],
)
def test_a_location_as_hadoop_spells_it_is_read_by_delta_rs_and_arrow(location, read_as):
    """The same rule names a path of this machine (read by delta-rs with no credentials to find)."""
    assert arrow_uri(location) == read_as
    assert (local_path(location) is not None) == ("://" not in read_as)


def test_a_tables_version_transactions_files_and_rows_come_from_its_log(tmp_path):
    """Two commits, the second an idempotent write of application `app` number 3: the newest
    version, the application's number, the live files and rows; no table where there is none."""
    import pyarrow as pa
    from deltalake import CommitProperties, Transaction, write_deltalake

    location = f"file:{tmp_path}/t"
    write_deltalake(str(tmp_path / "t"), pa.table({"id": [1, 2]}))
    txn = CommitProperties(app_transactions=[Transaction(app_id="app", version=3)])
    write_deltalake(str(tmp_path / "t"), pa.table({"id": [3]}), mode="append", commit_properties=txn)

    table = rs_log.load(location)
    assert table is not None and rs_log.newest(table).version == 1
    assert rs_log.transaction_version(table, "app") == 3 and rs_log.transaction_version(table, "other") == -1
    assert (rs_log.file_count(table), rs_log.records(table)) == (2, 3)
    assert rs_log.deletes(table) == Deletes()  # no deletion-vector feature: none
    first = rs_log.load(location, 0)
    assert first is not None and rs_log.records(first) == 2
    assert rs_log.is_delta_table(location) and not rs_log.is_delta_table(f"{tmp_path}/none")
    assert rs_log.load(f"{tmp_path}/none") is None and rs_log.file_count(None) == 0


def commit_file(version: int, modified: int, operation: str = "WRITE", **info: object) -> CommitFile:
    action = {"commitInfo": {"timestamp": modified - 5, "operation": operation, **info}}
    return CommitFile(version, modified, '{"protocol": {}}\n' + json.dumps(action) + "\n")


def test_the_commits_since_the_newest_entry_kept_are_read_as_describe_history_gives_them():
    """The commits after the newest entry kept (its own commit comes first, and must be that
    entry's), newest first: a commit's time is its file's, made a millisecond later than the one
    before when it is not later (DESCRIBE HISTORY does the same), or its in-commit timestamp;
    a first file that is not the kept entry's commit (the table was made anew), or a commit
    without its `commitInfo`, sends the caller to DESCRIBE HISTORY."""
    kept = history_entry({"version": 4, "timestamp": 1_000, "operation": "WRITE"})
    files = [
        commit_file(4, 1_000),
        commit_file(5, 1_000, "MERGE", userMetadata='{"lakefresh.batch": "b5"}'),  # same second
        commit_file(6, 900, "UPDATE"),  # an earlier clock
        commit_file(7, 5_000, "OPTIMIZE", inCommitTimestamp=4_321),
    ]
    found = entries_after(kept, files)
    assert found is not None
    assert [(v.version, v.millis, v.operation, v.batches) for v in found] == [
        (7, 4_321, "OPTIMIZE", ()),
        (6, 1_002, "UPDATE", ()),
        (5, 1_001, "MERGE", ("b5",)),
    ]
    assert entries_after(kept, [commit_file(4, 2_000), *files[1:]]) is None  # made anew since
    assert entries_after(kept, [files[0], CommitFile(5, 1_000, '{"protocol": {}}\n')]) is None


def test_a_whole_young_log_is_read_from_its_files_from_version_0():
    """With no entry kept, the files are the log from its first commit: every one is an entry."""
    files = [commit_file(0, 1_000, "CREATE TABLE"), commit_file(1, 1_000), commit_file(2, 3_000)]
    found = entries_after(None, files)
    assert found is not None
    assert [(v.version, v.millis, v.operation) for v in found] == [
        (2, 3_000, "WRITE"),
        (1, 1_001, "WRITE"),
        (0, 1_000, "CREATE TABLE"),
    ]
