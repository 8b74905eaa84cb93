"""Delta Lake targets: the same strategies, the same exactly-once contract.

A table with `format: delta` lives at `<warehouse>/<namespace>/<table>` as a Delta table; each
batch's commit carries the batch id in its `userMetadata` and an idempotent-write transaction
(`txnAppId`/`txnVersion`), so the table's own history says which batches it holds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import rows, settings_kept
from tests.spark import test_contract_strategies as contract
from tests.spark import test_overlapping_runs as overlapping

pytestmark = pytest.mark.lease

KEYED = """
- name: customers
  format: delta
  source: {{kind: files, path: {folder}, format: csv, schema: {{id: int, city: string, updated_at: date}}}}
  strategy: {{kind: key, keys: [id], date_column: updated_at}}
"""


def history(ws, p, table: str) -> list[tuple]:
    """(version, operation, batch) of a Delta table's history, oldest first."""
    found = ws.spark.sql(f"DESCRIBE HISTORY {p.backend.qualified(f'{ws.namespace}.{table}')}").collect()
    out = []
    for r in sorted(found, key=lambda r: r["version"]):
        batch = json.loads(r["userMetadata"]).get("lakefresh.batch") if r["userMetadata"] else None
        out.append((r["version"], r["operation"], batch))
    return out


def test_a_key_table_on_delta_takes_each_batch_once_and_its_history_names_them(ws):
    ws.write("in/b1.csv", "id,city,updated_at\n1,Oslo,2025-01-01\n2,Rome,2025-01-01\n", mtime=1_736_000_000)
    ws.write("in/b2.csv", "id,city,updated_at\n1,Kyiv,2025-01-03\n2,Lima,2024-12-31\n", mtime=1_736_003_600)
    p = ws.pipeline(KEYED.format(folder=ws.root / "in"))
    result = p.run()
    assert result.ok, result.to_dict()
    assert [(b.batch_id, b.counts) for b in result.batches] == [
        ("b1.csv", {"N": 2}),
        ("b2.csv", {"C": 1, "O": 1}),  # Lima is older than Rome: kept out
    ]
    assert rows(p.table("customers"), ["id", "city"]) == [(1, "Kyiv"), (2, "Rome")]
    carried = [h for h in history(ws, p, "customers") if h[2]]
    assert carried == [(1, "WRITE", "b1.csv"), (2, "MERGE", "b2.csv")]  # version 0 created it
    assert p.run().batches == []  # nothing new
    logged = sorted((r["batch_id"], r["status"]) for r in p.history("customers"))
    assert logged == [("b1.csv", "published"), ("b2.csv", "published")]
    # the file count compaction looks at is DESCRIBE DETAIL's, read from the version's checksum
    name = f"{ws.namespace}.customers"
    detail = ws.spark.sql(f"DESCRIBE DETAIL {p.backend.qualified(name)}").first()["numFiles"]
    assert p.backend.file_count(name) == detail > 0


def test_a_batch_that_changes_nothing_is_still_a_version_of_its_own(ws):
    """A MERGE that changes no row commits nothing on Delta; the batch's version is then an
    empty append (its rows built without a Python worker), which carries the batch like any."""
    ws.write("in/b1.csv", "id,city,updated_at\n1,Oslo,2025-01-01\n", mtime=1_736_000_000)
    ws.write("in/b2.csv", "id,city,updated_at\n1,Oslo,2025-01-01\n", mtime=1_736_003_600)
    p = ws.pipeline(KEYED.format(folder=ws.root / "in"))
    result = p.run()
    assert result.ok, result.to_dict()
    assert [(b.batch_id, b.counts) for b in result.batches] == [("b1.csv", {"N": 1}), ("b2.csv", {"U": 1})]
    assert [h for h in history(ws, p, "customers") if h[2]] == [
        (1, "WRITE", "b1.csv"),
        (2, "WRITE", "b2.csv"),
    ]
    assert rows(p.table("customers"), ["id", "city"]) == [(1, "Oslo")]


def test_a_versions_rows_come_from_its_checksum_as_from_a_replay_of_the_log(ws, monkeypatch):
    """A Delta version's row count (the audit's) is read from the version's checksum, where
    Delta lists a small table's files, without a Spark job: it equals what a replay of the log
    counts, with a deletion vector too; when the checksum lists no files (here: a limit of 0
    files) the count is Delta's own."""
    from lakefresh.lakehouse.delta import DeltaBackend
    from lakefresh.lakehouse.delta.log import records_in

    backend, name = DeltaBackend(ws.spark, str(ws.warehouse)), f"{ws.namespace}.t"
    df = ws.spark.createDataFrame([(i, f"v{i}") for i in range(6)], "id int, v string")
    from lakefresh.lakehouse.backend import Layout

    backend.create(name, df.schema, Layout(write_mode="merge-on-read"))  # deletion vectors
    merge = (
        f"MERGE INTO {backend.qualified(name)} t USING (SELECT 2 AS id) s ON t.id = s.id "
        "WHEN MATCHED THEN DELETE"
    )
    with monkeypatch.context() as patched:  # no read of the table: the checksum answers
        patched.setattr(backend, "read", lambda *_: pytest.fail("the count replayed the log"))
        first = backend.stage(name, "b1", lambda: backend.append(name, df))
        second = backend.stage(name, "b2", lambda: ws.spark.sql(merge))
    assert (first.live_records, second.live_records) == (6, 5)
    assert backend.deletes(name).rows == 1  # the delete is a deletion vector
    replayed = ws.spark.read.format("delta").load(backend.location(name)).count()
    assert records_in(backend._checksum(name, second.version)) == 5 == replayed

    limit = "spark.databricks.delta.allFilesInCrc.thresholdNumFiles"
    with settings_kept(ws.spark, [limit]):
        ws.spark.conf.set(limit, "0")
        third = backend.stage(name, "b3", lambda: backend.append(name, df.limit(1)))
        assert records_in(backend._checksum(name, third.version)) is None
        assert third.live_records == 6


def test_the_history_kept_and_read_on_from_the_commit_files_is_describe_historys(ws, monkeypatch):
    """A Delta table's history is read whole (DESCRIBE HISTORY, Spark jobs) once; after that the
    commits since are read from their files in `_delta_log` and put before the entries kept. After
    each kind of commit the history so kept is DESCRIBE HISTORY's, entry for entry: version,
    time, operation, parameters, metrics and the commit's metadata. A young table's history
    (a log of fewer than ten commits) is read from its files the first time too, the same."""
    from lakefresh.lakehouse.backend import with_settings
    from lakefresh.lakehouse.delta import DeltaBackend
    from lakefresh.lakehouse.delta import backend as delta_backend
    from lakefresh.lakehouse.delta.log import history

    whole: list[str] = []
    monkeypatch.setattr(delta_backend, "history", lambda spark, q: whole.append(q) or history(spark, q))
    monkeypatch.setattr(delta_backend, "YOUNG_LOG", 0)  # read whole first, as an older table is
    backend, name = DeltaBackend(ws.spark, str(ws.warehouse)), f"{ws.namespace}.t"
    t = backend.qualified(name)
    vectors = "TBLPROPERTIES ('delta.enableDeletionVectors' = true)"
    create = f"CREATE TABLE {t} (id int, v string) USING delta {vectors}"
    ws.spark.sql(create)
    assert backend.head(name) is None and len(whole) == 1
    statements = [
        f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')",
        f"MERGE INTO {t} t USING (SELECT 2 AS id, 'B' AS v UNION ALL SELECT 3, 'c') s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        f"UPDATE {t} SET v = 'A' WHERE id = 1",
        f"DELETE FROM {t} WHERE id = 3",
        f"ALTER TABLE {t} SET TBLPROPERTIES ('lakefresh.x' = 'y')",
        f"OPTIMIZE {t}",
        f"RESTORE TABLE {t} TO VERSION AS OF 2",
    ]
    for statement in statements:
        ws.spark.sql(statement)
        assert backend._history(name) == history(ws.spark, t), statement
    # two commits at once, the first carrying a batch in its metadata
    metadata = {"spark.databricks.delta.commitInfo.userMetadata": json.dumps({"lakefresh.batch": "b9"})}
    with_settings(ws.spark, metadata, lambda: ws.spark.sql(f"INSERT INTO {t} VALUES (9, 'z')"))
    ws.spark.sql(f"INSERT INTO {t} VALUES (10, 'y')")
    assert backend._history(name) == history(ws.spark, t)
    assert backend.published_batches(name) == {"b9": 8}
    assert len(whole) == 1  # every commit since the first read came from its file

    monkeypatch.setattr(delta_backend, "YOUNG_LOG", 10)
    young = DeltaBackend(ws.spark, str(ws.warehouse))  # versions 0 to 9: all from their files
    assert young._history(name) == history(ws.spark, t) and len(whole) == 1


# every target and the control tables on Delta: a pipeline that needs no Iceberg at all
DELTA_ONLY = "  format: delta\n  control_format: delta\n"

# The strategies whose writes reach every write of the table-format seam on Delta: a MERGE (`key`,
# its tombstones beside it, and `scd2` with its appended versions), an append (`append`), a
# replacement (`full`) and a delete then an append (`timestamp`). Above the seam a strategy's
# statements do not depend on the format, so each other strategy runs the contract on Iceberg
# (tests/spark/test_contract_strategies.py, on both Spark lines), and its own behaviour tests on
# both formats; here Delta's side of each write is tested once per kind of write.
ON_DELTA = ("key", "key_tombstones", "scd2", "append", "full", "timestamp")
DELTA_KINDS = [k for k in contract.KINDS if k.name in ON_DELTA]
# On Delta the race is caught before any strategy writes: its writes commit at once, so the run
# that read the table before the other's commit finds the head moved when it shapes the target
# (lakehouse/commit.py, `Transaction.shape`), on either path; one strategy takes both.
DELTA_RACES = [(k, p) for k, p in overlapping.CASES if k.name == "key"]


@pytest.mark.parametrize("kind", DELTA_KINDS, ids=[k.name for k in DELTA_KINDS])
def test_the_strategy_contract_holds_on_delta(ws, monkeypatch, kind):
    """tests/spark/test_contract_strategies.py's suite on Delta tables. For `key`, the control
    tables are Delta tables too (`catalog.control_format: delta`, at <warehouse>/<namespace>/...):
    every fault point with the `batches` and `quarantine` logs on Delta, on the default Spark line
    (on 3.5, where `make test` runs this case for Iceberg 1.10's row-lineage rule, which would
    fail an UPDATE of a Delta control table, the two faults every other case takes). The other
    strategies keep their logs in the Iceberg catalog, as every other test does, and take a raise
    after their write (a RESTORE) and a crash before it (`contract.faults_before_publishing`)."""
    every_point = kind.name == "key" and contract.DEFAULT_LINE
    on_delta = kind.name == "key"
    if on_delta:
        ws.catalog_extra = DELTA_ONLY
    contract.check_contract(ws, monkeypatch, kind, table_format="delta", every_point=every_point)
    if on_delta:
        p = ws.pipeline(contract.table_yaml(kind, str(ws.root / "in"), "delta"), name="reference.yml")
        assert p.backend.qualified(f"{ws.control_namespace}.batches").startswith("delta.")
        assert (ws.warehouse / ws.control_namespace / "batches" / "_delta_log").is_dir()


@pytest.mark.parametrize(("kind", "path"), DELTA_RACES, ids=[f"{k.name}-{p}" for k, p in DELTA_RACES])
def test_overlapping_runs_apply_every_batch_once_on_delta(ws, monkeypatch, kind, path):
    """tests/spark/test_overlapping_runs.py's race on Delta tables: their writes commit at once,
    so the run that read the table before the other's commit finds the head moved."""
    overlapping.check_overlap(ws, monkeypatch, kind, "delta", path)


def test_the_verbs_on_delta_rollback_is_a_restore_and_unload_reload_rebuild_in_one_commit(ws):
    ws.write("in/b1.csv", "id,city,updated_at\n1,Oslo,2025-01-01\n2,Rome,2025-01-01\n", mtime=1_736_000_000)
    ws.write("in/b2.csv", "id,city,updated_at\n1,Kyiv,2025-01-03\n", mtime=1_736_003_600)
    ws.write("in/b3.csv", "id,city,updated_at\n2,Lima,2025-01-04\n", mtime=1_736_007_200)
    p = ws.pipeline(KEYED.format(folder=ws.root / "in"), defaults="backlog: {max_batches: 1}\n")
    assert p.run().ok
    name = f"{ws.namespace}.customers"

    p.rollback("customers", "b2.csv")  # a RESTORE of b2's version
    assert rows(p.table("customers"), ["id", "city"]) == [(1, "Kyiv"), (2, "Rome")]
    assert history(ws, p, "customers")[-1][1] == "RESTORE"
    assert sorted(p.backend.published_batches(name)) == ["b1.csv", "b2.csv"]
    assert p.run().batches == []  # b3 is unloaded: never taken again, and no rollback to report

    p.unload("customers", ["b2.csv"])  # as if b2 had never been loaded
    assert rows(p.table("customers"), ["id", "city"]) == [(1, "Oslo"), (2, "Rome")]
    p.reload("customers", ["b3.csv"])  # b3 back in its place
    assert rows(p.table("customers"), ["id", "city"]) == [(1, "Oslo"), (2, "Lima")]
    logged = sorted(
        (r["batch_id"], r["status"]) for r in p.history("customers") if "lakefresh:" not in r["batch_id"]
    )
    assert logged == [
        ("b1.csv", "published"),
        ("b2.csv", "unloaded"),
        ("b3.csv", "published"),
        ("b3.csv", "reloaded"),
    ]
    assert p.run().batches == []


@pytest.mark.e2e
def test_a_delta_only_pipeline_needs_no_iceberg_and_a_kill_after_its_commit_is_finished_later(ws):
    """A process of its own, with none of Iceberg's jars, killed (SIGKILL) right after b2's Delta
    commit and before its record: the next run finds b2 in the table's history and records it."""
    from lakefresh.api import load_pipeline

    ws.catalog_extra = DELTA_ONLY
    ws.write("in/b1.csv", "id,city,updated_at\n1,Oslo,2025-01-01\n2,Rome,2025-01-01\n", mtime=1_736_000_000)
    ws.write("in/b2.csv", "id,city,updated_at\n1,Kyiv,2025-01-03\n", mtime=1_736_003_600)
    tables = KEYED.format(folder=ws.root / "in").replace("  format: delta\n", "")  # the catalog's
    path = ws.root / "pipeline.yml"
    path.write_text(ws.pipeline_yaml(tables) + "run: {lease_ttl: 3s}\n", encoding="utf-8")
    settings = load_pipeline(path).spark_settings()
    assert [k for k, v in settings.items() if "iceberg" in f"{k}={v}".lower()] == []
    env = {**os.environ, "LAKEFRESH_FAULTS": "after_publish@b2.csv:kill"}
    run = [sys.executable, "-m", "lakefresh.cli", "run", str(path)]
    proc = subprocess.run(run, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == -9, proc.stderr[-3000:]  # killed after the commit, not failed before

    p = load_pipeline(path, spark=ws.spark)
    assert rows(p.table("customers"), ["id", "city"]) == [(1, "Kyiv"), (2, "Rome")]  # b2 committed
    result = p.run(wait=60)  # once the killed run's lease expired
    assert result.ok and result.batches == [], result.to_dict()  # nothing taken twice
    logged = sorted((r["batch_id"], r["status"]) for r in p.history("customers"))
    assert logged == [("b1.csv", "published"), ("b2.csv", "published")]
    assert [h[2] for h in history(ws, p, "customers") if h[2]] == ["b1.csv", "b2.csv"]


def test_a_failed_batch_whose_undo_fails_stays_whole_with_its_quarantined_rows(ws, monkeypatch):
    """Delta commits at the write, so a batch that fails after it is undone (RESTORE). When the
    undo itself fails, the batch stays in the table, the run says so, and the next run records
    it: with its quarantined row. The failure used to be recorded before the undo, which deleted
    the attempt's quarantine rows; the batch was then recorded with a quarantined row that the
    quarantine no longer held."""
    ws.write("in/b1.csv", "id,city,updated_at\n1,Oslo,2025-01-01\n", mtime=1_736_000_000)
    ws.write("in/b2.csv", "id,city,updated_at\n2,Rome,2025-01-02\nx,Lima,2025-01-02\n", mtime=1_736_003_600)
    p = ws.pipeline(KEYED.format(folder=ws.root / "in"))

    def cannot_undo(*args):
        raise RuntimeError("the RESTORE met another writer's commit")

    monkeypatch.setattr(p.backend, "undo_since", cannot_undo)
    monkeypatch.setenv("LAKEFRESH_FAULTS", "after_write@b2.csv:raise")
    failed = p.run()
    monkeypatch.delenv("LAKEFRESH_FAULTS")
    monkeypatch.undo()
    assert not failed.ok
    assert "could not be undone" in failed.tables[0].error, failed.to_dict()
    assert rows(p.table("customers"), ["id", "city"]) == [(1, "Oslo"), (2, "Rome")]  # b2 stayed
    assert rows(p.quarantine("customers"), ["batch_id", "line"]) == [("b2.csv", 3)]

    again = p.run()
    assert again.ok, again.to_dict()
    assert again.batches == [] and again.tables[0].recovered == ["b2.csv"]
    published = {
        r["batch_id"]: r["quarantined_count"] for r in p.history("customers") if r["status"] == "published"
    }
    assert published == {"b1.csv": 0, "b2.csv": 1}
    assert rows(p.quarantine("customers"), ["batch_id", "line"]) == [("b2.csv", 3)]


def test_a_restore_to_a_timestamp_by_anyone_is_a_rollback_like_any(ws):
    """`RESTORE ... TO TIMESTAMP AS OF` records no version in the table's history (null): the
    lineage read failed on it (a version of null) in every later run. It is followed to the newest
    version committed at that time, and reported as a rollback."""
    ws.write("in/b1.csv", "id,city,updated_at\n1,Oslo,2025-01-01\n", mtime=1_736_000_000)
    ws.write("in/b2.csv", "id,city,updated_at\n1,Kyiv,2025-01-03\n", mtime=1_736_003_600)
    p = ws.pipeline(KEYED.format(folder=ws.root / "in"))
    assert p.run().ok
    table = p.backend.qualified(f"{ws.namespace}.customers")
    b1 = next(version for version, _, batch in history(ws, p, "customers") if batch == "b1.csv")
    at = (
        ws.spark.sql(f"DESCRIBE HISTORY {table}")
        .where(f"version = {b1}")
        .selectExpr("CAST(timestamp AS STRING)")
        .first()[0]
    )
    ws.spark.sql(f"RESTORE TABLE {table} TO TIMESTAMP AS OF '{at}'")
    assert rows(p.table("customers"), ["id", "city"]) == [(1, "Oslo")]

    result = p.run()
    assert not result.ok
    assert "the table was rolled back (b2.csv)" in result.tables[0].error, result.to_dict()
    again = p.run(rolled_back="reapply")
    assert again.ok, again.to_dict()
    assert rows(p.table("customers"), ["id", "city"]) == [(1, "Kyiv")]


def test_a_control_table_s_rows_read_by_delta_rs_are_what_spark_s_collect_gives(ws):
    """The `leases` table is read twice a run; on Delta, by delta-rs from one replay of its log
    (lakehouse/delta/backend.py `read_rows`), without a Spark job: every type a control table has,
    binary too, NULLs, empty collections and New York's daylight-saving jumps read as PySpark's
    `collect()` gives them, with the idempotent-write version the same version holds; after a
    delete kept as a deletion vector too."""
    from lakefresh.lakehouse.backend import Layout
    from lakefresh.lakehouse.delta import DeltaBackend
    from lakefresh.lakehouse.session import parse_schema
    from tests.conftest import machine_zone
    from tests.spark.test_literals import EDGES, ROW, SCHEMA, _without_a_job

    backend, name = DeltaBackend(ws.spark, str(ws.warehouse)), f"{ws.namespace}.rows"
    schema = parse_schema(SCHEMA)
    rows = [ROW, *EDGES]

    def spark_read():
        found = ws.spark.read.format("delta").load(backend.location(name)).collect()
        return sorted((r.asDict(recursive=True) for r in found), key=lambda r: r["i"])

    with machine_zone("America/New_York"):
        backend.create(name, schema, Layout(write_mode="merge-on-read"))  # deletion vectors
        assert _without_a_job(ws.spark, lambda: backend.read_rows(name)) == (-1, [])
        backend.replace_rows(name, rows, schema, None)
        marker, got = _without_a_job(ws.spark, lambda: backend.read_rows(name))
        assert marker == 0
        assert sorted(got, key=lambda r: r["i"]) == spark_read()
        assert sorted(got, key=lambda r: r["i"])[0] == {k: ROW.get(k) for k in schema.names} | {
            "raw": bytearray(ROW["raw"])
        }
        ws.spark.sql(f"DELETE FROM {backend.qualified(name)} WHERE i = 2")
        assert backend.deletes(name).rows == 1
        marker, got = _without_a_job(ws.spark, lambda: backend.read_rows(name))
        assert marker == 0 and sorted(got, key=lambda r: r["i"]) == spark_read()
