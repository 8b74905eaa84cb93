"""Errors carry their cause: whatever fails inside Spark, Iceberg or the JVM,
the user reads one line naming the root cause, never `Py4JJavaError: An error occurred while
calling o51.sql.` alone. Each case raises the real exception on the real session."""

from __future__ import annotations

import glob
import re
import sys

import pytest

from lakefresh.lakehouse.failures import describe, is_commit_conflict
from tests.conftest import CATALOG


def failure(action) -> BaseException:
    try:
        action()
    except Exception as exc:
        return exc
    raise AssertionError("nothing failed")


def one_line(text: str) -> str:
    assert "\n" not in text, text
    assert "An error occurred while calling" not in text, text
    return text


def iceberg_table(ws, spark, name="t"):
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{ws.namespace}")
    spark.sql(f"CREATE TABLE {CATALOG}.{ws.namespace}.{name} (id int, v string) USING iceberg")
    spark.sql(f"INSERT INTO {CATALOG}.{ws.namespace}.{name} VALUES (1, 'a')")
    return f"{ws.namespace}.{name}"


def test_an_iceberg_validation_failure_through_the_java_api_names_iceberg_s_exception(ws, spark):
    from lakefresh.lakehouse.iceberg import IcebergBackend

    table = iceberg_table(ws, spark)
    backend = IcebergBackend(spark, CATALOG)
    exc = failure(lambda: backend._iceberg_table(table).manageSnapshots().cherrypick(12345).commit())
    assert type(exc).__name__ == "Py4JJavaError"
    text = one_line(describe(exc))
    assert text.startswith("ValidationException: Cannot cherry-pick unknown snapshot ID: 12345"), text
    assert is_commit_conflict(exc)  # a commit refused for certain: safe to try again


def test_a_merge_matching_one_row_twice_says_so(ws, spark):
    table = iceberg_table(ws, spark)
    spark.createDataFrame([(1, "x"), (1, "y")], "id int, v string").createOrReplaceTempView("twice")
    exc = failure(
        lambda: spark.sql(
            f"MERGE INTO {CATALOG}.{table} t USING twice s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET t.v = s.v"
        )
    )
    text = one_line(describe(exc))
    assert "several change-set rows: the target or the batch holds a key more than once" in text, text
    assert not is_commit_conflict(exc)


def test_a_missing_class_names_the_class_and_the_jars(spark, tmp_path):
    exc = failure(lambda: spark.read.format("com.example.NoSuchFormat").load(str(tmp_path)))
    text = one_line(describe(exc))
    assert "com.example.NoSuchFormat" in text, text


def test_a_jdbc_url_without_a_driver_says_which_jar_is_missing(ws):
    p = ws.pipeline(
        """
        - name: t
          source:
            kind: jdbc
            url: jdbc:nosuchdb://127.0.0.1:9/db
            query: SELECT * FROM t WHERE m > {{ watermark }}
            watermark_column: m
            initial_watermark: 0
          strategy: {kind: key, keys: [id]}
        """
    )
    result = p.run()
    error = one_line(result.tables[0].error)
    assert "No suitable driver" in error and "spark.extra_jars" in error, error


def other_python() -> str | None:
    """An interpreter of another minor version than this one (pyenv's, on this machine kind)."""
    mine = f"{sys.version_info.major}.{sys.version_info.minor}"
    for found in sorted(glob.glob("/root/.pyenv/versions/3.1*/bin/python3")):
        if f"/{mine}." not in found:
            return found
    return None


@pytest.mark.skipif(other_python() is None, reason="needs a Python of another minor version")
def test_executors_on_another_python_than_the_driver_name_both(spark):
    from pyspark.sql import functions as F

    context = spark.sparkContext
    own = context.pythonExec
    context.pythonExec = other_python()
    try:
        exc = failure(lambda: spark.range(1).select(F.udf(lambda x: x)("id")).collect())
    finally:
        context.pythonExec = own
    text = one_line(describe(exc))
    driver = f"{sys.version_info.major}.{sys.version_info.minor}"
    # Spark 3.5 writes "driver 3.11", Spark 4 "driver: 3.11"
    assert "PYTHON_VERSION_MISMATCH" in text and re.search(rf"driver:? {driver}\b", text), text
    assert "spark.pyspark.python" in text, text
