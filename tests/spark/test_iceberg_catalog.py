"""A table's facts asked of Iceberg's catalog through Java (lakehouse/iceberg/catalog.py) are
what Spark's SQL layer answers: whether it exists, its schema (SparkSchemaUtil, as Iceberg's
Spark table), its head and SHOW TBLPROPERTIES' properties (unredacted), with a comment, nested
types, a partition, a sort order and identifier fields; each asked again after the table
changed. A catalog that is not Iceberg's is asked through Spark."""

from __future__ import annotations

import threading

import pytest

from lakefresh.lakehouse.backend import Layout
from lakefresh.lakehouse.iceberg import IcebergBackend
from lakefresh.lakehouse.iceberg.catalog import IcebergCatalog
from tests.conftest import settings_kept


def shown(spark, name: str) -> dict[str, str]:
    return {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {name}").collect()}


def main_head(spark, name: str) -> int:
    return spark.sql(f"SELECT snapshot_id FROM {name}.refs WHERE name = 'main'").first()[0]


def test_the_catalog_answers_as_spark_does_and_sees_each_change(ws):
    name = f"{ws.namespace}.facts"
    spark_name = f"lf_test.{name}"
    ws.spark.sql(
        f"CREATE TABLE {spark_name} (id bigint NOT NULL, name string COMMENT 'a name', "
        "amount decimal(10,2), at timestamp, local timestamp_ntz, "
        "nested array<struct<x: int, y: map<string, date>>>) USING iceberg PARTITIONED BY (days(at)) "
        "TBLPROPERTIES ('format-version'='2', 'write.wap.enabled'='true')"
    )
    ws.spark.sql(f"ALTER TABLE {spark_name} WRITE ORDERED BY id DESC")
    ws.spark.sql(f"ALTER TABLE {spark_name} SET IDENTIFIER FIELDS id")
    ws.spark.sql(f"COMMENT ON TABLE {spark_name} IS 'a table'")
    backend = IcebergBackend(ws.spark, "lf_test")
    assert backend.head(name) is None
    ws.spark.sql(f"INSERT INTO {spark_name} VALUES (1, 'a', 1.5, current_timestamp(), NULL, NULL)")
    first = backend.head(name)
    ws.spark.sql(f"INSERT INTO {spark_name} VALUES (2, 'b', 2.5, current_timestamp(), NULL, NULL)")

    assert backend.properties(name) == shown(ws.spark, spark_name)
    assert shown(ws.spark, spark_name)["sort-order"] == "id DESC NULLS LAST"
    assert backend.schema(name).json() == ws.spark.table(spark_name).schema.json()  # metadata too
    assert backend.head(name) == main_head(ws.spark, spark_name) != first
    ws.spark.sql(f"CALL lf_test.system.rollback_to_snapshot('{name}', {first})")
    assert backend.head(name) == main_head(ws.spark, spark_name) == first

    ws.spark.sql(f"ALTER TABLE {spark_name} SET TBLPROPERTIES ('write.merge.mode'='merge-on-read')")
    ws.spark.sql(f"ALTER TABLE {spark_name} ADD COLUMNS (more string)")
    assert backend.properties(name)["write.merge.mode"] == "merge-on-read"
    assert backend.properties(name) == shown(ws.spark, spark_name)
    assert backend.schema(name).json() == ws.spark.table(spark_name).schema.json()

    assert backend.exists(name)
    assert not backend.exists(f"{ws.namespace}.missing")
    assert not backend.exists("no_such_namespace.facts")
    with pytest.raises(Exception, match="missing"):
        backend.schema(f"{ws.namespace}.missing")


def test_a_sort_order_on_a_column_spark_redacts_is_read_as_set(ws):
    """SHOW TBLPROPERTIES redacts a property whose value looks like a secret (`url`): the order
    read back redacted was never the one asked for, and was set again at every run."""
    name = f"{ws.namespace}.links"
    ws.spark.sql(f"CREATE TABLE lf_test.{name} (id bigint, url string) USING iceberg")
    backend = IcebergBackend(ws.spark, "lf_test")
    assert backend.lay_out(name, Layout(sort_by=("url",))) == ["sort_by"]
    assert "redacted" in shown(ws.spark, f"lf_test.{name}")["sort-order"]
    assert backend.properties(name)["sort-order"] == "url ASC NULLS FIRST"
    assert backend.lay_out(name, Layout(sort_by=("url",))) == []  # as it is: no commit


def test_a_catalog_that_is_not_icebergs_is_asked_through_spark(ws):
    """Spark's own session catalog (in the tests, not Iceberg's)."""
    catalog = IcebergCatalog(ws.spark, "spark_catalog")
    assert catalog._iceberg() is None
    assert not catalog.exists("default.lakefresh_no_such_table")


def test_a_catalog_that_caches_tables_still_sees_another_writers_commit(ws):
    """Iceberg's `SparkCatalog` caches tables by default (`cache-enabled`, for 30 s): a session
    lakefresh did not build (a platform's), or a pipeline whose `catalog.properties` turn the
    cache on, would answer lineage questions from a table loaded before another writer's commit.
    The look-ups drop the table from the cache first, so each is loaded fresh."""
    cached = "lf_cached"
    settings = {
        f"spark.sql.catalog.{cached}": "org.apache.iceberg.spark.SparkCatalog",
        f"spark.sql.catalog.{cached}.type": "hadoop",
        f"spark.sql.catalog.{cached}.warehouse": str(ws.warehouse),
        f"spark.sql.catalog.{cached}.cache-enabled": "true",
    }
    with settings_kept(ws.spark, list(settings)):
        for key, value in settings.items():
            ws.spark.conf.set(key, value)
        name = f"{ws.namespace}.shared"
        ws.spark.sql(f"CREATE TABLE lf_test.{name} (id bigint) USING iceberg")
        ws.spark.sql(f"INSERT INTO lf_test.{name} VALUES (1)")
        backend = IcebergBackend(ws.spark, cached)
        assert backend.head(name) == main_head(ws.spark, f"lf_test.{name}")
        assert backend.properties(name).get("steward") is None

        # another writer, through a catalog of its own over the same warehouse
        ws.spark.sql(f"INSERT INTO lf_test.{name} VALUES (2)")
        ws.spark.sql(f"ALTER TABLE lf_test.{name} SET TBLPROPERTIES ('steward'='them')")

        assert backend._tables._iceberg() is not None  # asked of Iceberg's catalog, not Spark's SQL
        assert backend.head(name) == main_head(ws.spark, f"lf_test.{name}")
        assert backend.properties(name)["steward"] == "them"
        assert sorted(r[0] for r in ws.spark.table(f"{cached}.{name}").collect()) == [1, 2]
        ws.spark.sql(f"DROP TABLE lf_test.{name}")
        assert not backend.exists(name)


def test_a_catalog_first_asked_for_from_another_thread_is_found(ws):
    """A catalog set on the session and not used yet, first asked for from a thread other than
    the session's (a worker's, a scheduler's: it has no active session of its own), as a run in
    a thread asks. Spark's catalog manager loads a catalog with the settings of the thread's
    active session; lakefresh makes the pipeline's session that one first."""
    fresh = f"lf_thread_{ws.namespace}"
    settings = {
        f"spark.sql.catalog.{fresh}": "org.apache.iceberg.spark.SparkCatalog",
        f"spark.sql.catalog.{fresh}.type": "hadoop",
        f"spark.sql.catalog.{fresh}.warehouse": str(ws.warehouse),
    }
    with settings_kept(ws.spark, list(settings)):
        for key, value in settings.items():
            ws.spark.conf.set(key, value)
        found: dict[str, object] = {}

        def ask() -> None:
            try:
                found["exists"] = IcebergCatalog(ws.spark, fresh).exists(f"{ws.namespace}.none")
            except Exception as exc:  # CATALOG_NOT_FOUND, without the session made active
                found["error"] = exc

        worker = threading.Thread(target=ask)
        worker.start()
        worker.join(120)
        assert found == {"exists": False}
