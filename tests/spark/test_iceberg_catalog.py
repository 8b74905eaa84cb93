"""A table's facts asked of Iceberg's catalog through Java (lakehouse/iceberg_catalog.py) are
what Spark's SQL layer answers: whether it exists, its schema (SparkSchemaUtil, as Iceberg's
Spark table) and SHOW TBLPROPERTIES' properties, with a comment, nested types, a partition,
a sort order and identifier fields. A catalog that is not Iceberg's is asked through Spark."""

from __future__ import annotations

from lakefresh.lakehouse.iceberg import IcebergBackend
from lakefresh.lakehouse.iceberg_catalog import IcebergCatalog


def test_the_catalog_answers_as_spark_does(ws):
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
    ws.spark.sql(f"INSERT INTO {spark_name} VALUES (1, 'a', 1.5, current_timestamp(), NULL, NULL)")
    backend = IcebergBackend(ws.spark, "lf_test")

    shown = {r["key"]: r["value"] for r in ws.spark.sql(f"SHOW TBLPROPERTIES {spark_name}").collect()}
    assert backend.properties(name) == shown
    assert shown["sort-order"] == "id DESC NULLS LAST" and shown["identifier-fields"] == "[id]"
    assert backend.schema(name) == ws.spark.table(spark_name).schema
    assert backend.schema(name).json() == ws.spark.table(spark_name).schema.json()  # metadata too
    assert (
        backend.head(name)
        == ws.spark.sql(
            f"SELECT snapshot_id FROM {spark_name}.snapshots ORDER BY committed_at DESC LIMIT 1"
        ).first()[0]
    )
    assert backend.exists(name)
    assert not backend.exists(f"{ws.namespace}.missing")
    assert not backend.exists("no_such_namespace.facts")


def test_a_catalog_that_is_not_icebergs_is_asked_through_spark(ws):
    """Spark's own session catalog has no Iceberg catalog behind it."""
    catalog = IcebergCatalog(ws.spark, "spark_catalog")
    assert not catalog.exists("default.lakefresh_no_such_table")
    assert catalog._iceberg() is None
