"""The strategy contract (tests/spark/test_contract_strategies.py) through Spark Connect: every
batch read, staged, audited, recorded and published by a Connect client, through the SQL road to
Iceberg (lakehouse/iceberg/sql.py) or to Delta (lakehouse/delta/sql.py, its log read here by
delta-rs) and Arrow's road to the files; a raise after the write and a crash at the last point
before the publish, then the faults after it, as the other Spark line and Delta take it. The
contract compares every table with the reference pipeline's run. On Delta, the control tables
are Delta tables too (tests/spark/test_delta.py's `key` contract): their rewrites are
idempotent writes whose transaction versions only the log says."""

from __future__ import annotations

import pytest

from tests.spark.test_contract_strategies import KINDS, check_contract
from tests.spark.test_delta import DELTA_ONLY

# one strategy through each format's road: `scd2` (a history's several statements) on Iceberg,
# `key` (a MERGE) on Delta; the example through Connect (test_connect_example.py) takes `key`
# tables on Iceberg
THROUGH_CONNECT = [(k, "iceberg") for k in KINDS if k.name == "scd2"]
THROUGH_CONNECT += [(k, "delta") for k in KINDS if k.name == "key"]


def test_the_session_is_a_connect_client(spark):
    from lakefresh.lakehouse.connect import is_connect

    assert is_connect(spark)
    import pyspark

    assert not hasattr(spark, "_jsparkSession") and pyspark.SparkContext._active_spark_context is None


@pytest.mark.parametrize(
    ("kind", "table_format"), THROUGH_CONNECT, ids=[f"{k.name}-{f}" for k, f in THROUGH_CONNECT]
)
def test_the_strategy_contract_holds_through_spark_connect(ws, monkeypatch, kind, table_format):
    if table_format == "delta":
        ws.catalog_extra = DELTA_ONLY
    check_contract(ws, monkeypatch, kind, table_format, every_point=False)
