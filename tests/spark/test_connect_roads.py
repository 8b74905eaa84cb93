"""The roads a Spark Connect session takes (lakehouse/connect.py) give what the classic session's
JVM roads give, asked in one classic session side by side: Iceberg through SQL and its metadata
tables (lakehouse/iceberg/sql.py) against Iceberg's Java API, Delta through SQL and its log read
by delta-rs (lakehouse/delta/sql.py) against Delta's Java API, and files through Arrow's file
systems against Hadoop's (lakehouse/storage.py). tests/connect/ runs pipelines through a real
Connect server."""

from __future__ import annotations

import gzip

import pytest

from lakefresh.lakehouse.delta import DeltaBackend
from lakefresh.lakehouse.delta import backend as delta_backend
from lakefresh.lakehouse.delta.sql import DeltaSqlBackend
from lakefresh.lakehouse.failures import is_commit_conflict
from lakefresh.lakehouse.iceberg import IcebergBackend
from lakefresh.lakehouse.iceberg.sql import IcebergSqlBackend
from lakefresh.lakehouse.session import parse_schema
from lakefresh.lakehouse.storage import ArrowStorage, HadoopStorage
from tests.spark.test_delta import DELTA_ONLY

pytestmark = pytest.mark.lease

KEYED = """
- name: customers
  source:
    kind: files
    path: in
    format: csv
    schema: {id: int, city: string, updated_at: timestamp}
  strategy: {kind: key, keys: [id], date_column: updated_at, history: true}
"""


def answers(backend, table: str) -> dict:
    """Everything the lineage side of the seam says of a table."""
    lineage = backend.lineage(table)
    versions = sorted(lineage.retained)
    first = min(lineage.ancestors) if lineage.ancestors else None
    return {
        "exists": backend.exists(table),
        "head": backend.head(table),
        "latest": backend.latest(table),
        "follows": backend.follows(table, first),
        "lineage": lineage,
        "published": backend.published_batches(table),
        "published since": backend.published_batches(table, since=first),
        "commits": backend.commits_after(table, None),
        "commits after": backend.commits_after(table, first, limit=2),
        "states": [backend.version_state(table, v) for v in versions],
        "times": [backend.committed_at(table, v) for v in versions],
        "live": [backend.live_records(table, v) for v in versions],
        "properties of commits": [backend.commit_properties(table, v) for v in versions],
        "schema": backend.schema(table).json(),
        "properties": backend.properties(table),
        "files": backend.file_count(table),
        "deletes": backend.deletes(table),
        "carries": backend.carries_commit_properties(table),
    }


def test_iceberg_through_sql_answers_as_through_java(ws):
    """After a pipeline's batches and a rollback, every lineage question about the target, its
    history table and the control tables has the same answer on both roads."""
    ws.write("in/b1.csv", "id,city,updated_at\n1,Oslo,2025-01-01\n2,Rome,2025-01-01\n")
    ws.write("in/b2.csv", "id,city,updated_at\n1,Bergen,2025-01-02\n3,Lima,2025-01-02\n")
    ws.write("in/b3.csv", "id,city,updated_at\n2,Paris,2025-01-03\n")
    p = ws.pipeline(KEYED)
    assert p.run().ok
    p.rollback("customers", "b2.csv")

    java, sql = IcebergBackend(ws.spark, "lf_test"), IcebergSqlBackend(ws.spark, "lf_test")
    tables = [f"{ws.namespace}.customers", f"{ws.namespace}.customers_history"]
    tables += [f"{ws.control_namespace}.batches", f"{ws.control_namespace}.leases"]
    for table in tables:
        assert answers(sql, table) == answers(java, table), table
    assert not sql.exists(f"{ws.namespace}.missing")
    ws.spark.sql(f"CREATE TABLE lf_test.{ws.namespace}.empty (id int) USING iceberg")
    assert sql.head(f"{ws.namespace}.empty") is java.head(f"{ws.namespace}.empty") is None  # no snapshot
    with pytest.raises(Exception, match="no longer exists"):
        sql.committed_at(tables[0], 1)


def test_delta_through_sql_and_its_log_answers_as_through_java(ws, monkeypatch):
    """On Delta, with the control tables on Delta too: after a merge-on-read target's batches (with
    updates) and a rollback (a RESTORE), every lineage question about the
    target, its history table and the control tables has the same answer on both roads, and so
    have a control table's rows with their idempotent-write marker; a table dropped is gone."""
    ws.write("in/b1.csv", "id,city,updated_at\n1,Oslo,2025-01-01\n2,Rome,2025-01-01\n")
    ws.write("in/b2.csv", "id,city,updated_at\n1,Bergen,2025-01-02\n3,Lima,2025-01-02\n")
    ws.write("in/b3.csv", "id,city,updated_at\n2,Paris,2025-01-03\n")
    ws.catalog_extra = DELTA_ONLY
    p = ws.pipeline(KEYED + "  write_mode: merge-on-read\n")
    assert p.run().ok
    p.rollback("customers", "b3.csv")

    java, sql = DeltaBackend(ws.spark, str(ws.warehouse)), DeltaSqlBackend(ws.spark, str(ws.warehouse))
    target = f"{ws.namespace}.customers"
    tables = [target, f"{target}_history", f"{ws.control_namespace}.batches"]
    for table in tables:
        assert answers(sql, table) == answers(java, table), table
    leases = f"{ws.control_namespace}.leases"
    assert sql.read_rows(leases) == java.read_rows(leases)
    with monkeypatch.context() as patched:  # a young log: its commits read from their files
        patched.setattr(delta_backend, "history", lambda *_: pytest.fail("DESCRIBE HISTORY"))
        young = DeltaSqlBackend(ws.spark, str(ws.warehouse))
        assert young._history(target) == java._history(target)
    missing = f"{ws.namespace}.missing"
    assert not sql.exists(missing) and sql.latest(missing) is None and sql.file_count(missing) == 0
    sql.drop(target)
    assert not java.exists(target)


def test_a_control_tables_rewrite_through_sql_is_a_compare_and_swap(ws):
    """`replace_rows` from the version the caller read: the first writer commits, a second that
    read the same version is refused as a commit conflict (retried by the callers), as on the
    Java road."""
    table = f"{ws.namespace}.small"
    ws.spark.sql(f"CREATE TABLE lf_test.{table} (k string, v bigint) USING iceberg")
    schema = parse_schema("k string, v bigint")
    backend = IcebergSqlBackend(ws.spark, "lf_test")
    since, rows = backend.read_rows(table)
    assert (since, rows) == (None, [])
    backend.replace_rows(table, [{"k": "a", "v": 1}], schema, since)
    with pytest.raises(Exception) as refused:  # read before the first write
        backend.replace_rows(table, [{"k": "b", "v": 2}], schema, since)
    assert is_commit_conflict(refused.value)
    read, rows = backend.read_rows(table)
    assert rows == [{"k": "a", "v": 1}]
    backend.replace_rows(table, [{"k": "c", "v": 3}], schema, read)
    with pytest.raises(Exception) as refused:
        backend.replace_rows(table, [], schema, read)
    assert is_commit_conflict(refused.value)
    assert backend.read_rows(table)[1] == [{"k": "c", "v": 3}]


def listed(storage, folder: str) -> list[tuple]:
    """A folder's entries, a folder's size left out (what a file system says of it differs)."""
    return [
        (e.path, e.name, e.is_dir, None if e.is_dir else e.size, e.modified) for e in storage.list(folder)
    ]


def test_files_through_arrow_are_what_hadoop_lists_and_reads(ws):
    """A folder's entries (names, kinds, sizes, times to the millisecond, paths as Spark spells
    them), a file's modification time, a file's URI with a space in its name, its bytes (a gzip
    file decompressed), its text, a copy, and what does not exist."""
    ws.write("in/a b.csv", "id\n1\n")
    ws.write("in/sub/c.csv", "id\n2\n")
    (ws.root / "in" / "d.csv.gz").write_bytes(gzip.compress(b"id\n3\n"))
    folder = str(ws.root / "in")
    hadoop, arrow = HadoopStorage(ws.spark), ArrowStorage()

    assert listed(arrow, folder) == listed(hadoop, folder)
    assert [e.name for e in arrow.list(folder)] == ["a b.csv", "d.csv.gz", "sub"]
    for entry in arrow.list(folder):
        assert arrow.uri(entry.path) == hadoop.uri(entry.path)
        assert arrow.exists(entry.path) and hadoop.exists(entry.path)
        if not entry.is_dir:
            assert arrow.size(entry.path) == hadoop.size(entry.path)
            assert arrow.modified_millis(entry.path) == hadoop.modified_millis(entry.path)
            with arrow.chunks(entry.path, 2) as mine, hadoop.chunks(entry.path) as theirs:
                assert b"".join(mine) == b"".join(theirs)
    assert arrow.read_text(f"{folder}/a b.csv") == hadoop.read_text(f"{folder}/a b.csv") == "id\n1\n"
    arrow.copy(f"{folder}/sub/c.csv", f"{ws.root}/copied/c.csv")
    assert hadoop.read_text(f"{ws.root}/copied/c.csv") == "id\n2\n"
    assert not arrow.exists(f"{folder}/missing.csv")
    with pytest.raises(FileNotFoundError):
        arrow.modified_millis(f"{folder}/missing.csv")
    assert listed(arrow, f"file:{folder}/sub") == listed(hadoop, f"file:{folder}/sub")
