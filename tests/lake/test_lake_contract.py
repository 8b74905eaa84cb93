"""The strategy contract (tests/spark/test_contract_strategies.py) on the lake: targets and
control tables in the REST catalog with their files on the S3 server, the batches read from
`s3a://`. The same suite, another workspace (tests/lake/conftest.py); a raise after the write and
a crash at the last point before the publish, then the faults after it, as the other Spark line
and Delta take it."""

from __future__ import annotations

import pytest

from tests.spark.test_contract_strategies import KINDS, check_contract

# `key`, the strategy most tables take; the example on the lake (test_lake_example.py) takes
# `scd2`, `ledger`, `snapshot`, `timestamp`, `append` and `full` tables there
ON_THE_LAKE = [k for k in KINDS if k.name == "key"]


@pytest.mark.parametrize("kind", ON_THE_LAKE, ids=[k.name for k in ON_THE_LAKE])
def test_the_strategy_contract_holds_on_object_storage_through_a_rest_catalog(ws, monkeypatch, kind):
    check_contract(ws, monkeypatch, kind, "iceberg", every_point=False)
    # the tables' files are objects of the S3 server, under the REST catalog's warehouse
    stored = ws.lake.s3.objects("warehouse/")
    for namespace in (ws.namespace, f"{ws.namespace}_f", f"{ws.control_namespace}_f"):
        assert any(k.startswith(f"warehouse/{namespace}/") and k.endswith(".parquet") for k in stored), (
            namespace
        )
    assert ws.lake.s3.objects(ws.prefix.split("/", 3)[3] + "/in/")  # and so are the batches
