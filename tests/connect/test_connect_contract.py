"""The strategy contract (tests/spark/test_contract_strategies.py) through Spark Connect: every
batch read, staged, audited, recorded and published by a Connect client, through the SQL road to
Iceberg (lakehouse/iceberg/sql.py) and Arrow's road to the files; a raise after the write and a
crash at the last point before the publish, then the faults after it, as the other Spark line
and Delta take it. The contract compares every table with the reference pipeline's run."""

from __future__ import annotations

import pytest

from tests.spark.test_contract_strategies import KINDS, check_contract

THROUGH_CONNECT = [k for k in KINDS if k.name in ("key", "scd2")]


def test_the_session_is_a_connect_client(spark):
    from lakefresh.lakehouse.connect import is_connect

    assert is_connect(spark)
    import pyspark

    assert not hasattr(spark, "_jsparkSession") and pyspark.SparkContext._active_spark_context is None


@pytest.mark.parametrize("kind", THROUGH_CONNECT, ids=[k.name for k in THROUGH_CONNECT])
def test_the_strategy_contract_holds_through_spark_connect(ws, monkeypatch, kind):
    check_contract(ws, monkeypatch, kind, "iceberg", every_point=False)
