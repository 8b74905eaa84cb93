"""The example pipeline (examples/orders) through the CLI, as `make demo` runs it, but in-process
on the test run's shared session: the CLI joins a running session and adds the example's catalog
to it (starting a JVM per command made this one test a quarter of the suite); its `plan` in a
process of its own too, which starts no JVM. Its first run is
the shared fixture `example_first_run` (tests/example_run.py): the cluster test compares its
tables with the same pipeline's on a Spark cluster."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from lakefresh.lakehouse.native import SWITCH
from lakefresh.synapse_export import SynapseExport
from tests.conftest import cli_in_process, cli_process, pipeline_settings_kept
from tests.example_run import EXAMPLE


@pytest.fixture
def session_settings_restored(spark: Any) -> Iterator[None]:
    """The CLI sets the example's runtime settings (catalog, shuffle partitions) on the session it
    joins; put the shared session's own back afterwards."""
    with pipeline_settings_kept(spark, EXAMPLE / "pipeline.yml"):
        yield


def test_the_example_runs_once_and_reports_per_batch_counts(
    example_first_run, spark, session_settings_restored
):
    example, result = example_first_run.folder, example_first_run.result
    assert result["ok"]
    batches = {t["table"]: t["batches"] for t in result["tables"]}
    assert [(b["batch_id"], b["counts"], b["quarantined"]) for b in batches["customers"]] == [
        ("customers_001.csv", {"N": 5}, 0),
        ("customers_002.csv", {"C": 1, "U": 1, "N": 1}, 2),
        ("customers_003.csv", {"O": 1, "C": 1, "D": 1}, 0),
        ("customers_004.csv", {"S": 1, "N": 1}, 0),
    ]
    assert [b["counts"] for b in batches["customers_history"]] == [
        {"N": 5},
        {"C": 1, "U": 1, "N": 1},
        {"L": 1, "C": 1, "D": 1},
        {"U": 1, "N": 1, "C": 1},
    ]
    assert [(b["counts"], b["skeletons"]) for b in batches["sales"]] == [
        ({"N": 2, "K": 0}, 0),
        ({"N": 2, "K": 0}, 1),  # customer 42 is not known yet
    ]
    # one load of the customers table's changes: 5 inserts, then C+N, C+D, and N (S changes nothing)
    assert [b["counts"] for b in batches["customer_changes"]] == [{"N": 10}]
    # Synapse Link: a column added in the second folder, a delete in the third, the fourth waits
    assert [(b["batch_id"], b["counts"], b["quarantined"]) for b in batches["crm_accounts"]] == [
        ("2025-01-01T10.00.00Z", {"N": 3}, 0),
        ("2025-01-01T11.00.00Z", {"C": 1, "N": 1}, 1),
        ("2025-01-01T12.00.00Z", {"C": 1, "D": 1}, 0),
    ]
    assert [b["batch_id"] for b in batches["orders"]] == ["2025-01-01", "2025-01-02", "2025-01-03"]
    assert [b["counts"] for b in batches["products"]] == [{"N": 2}, {"N": 2}]
    assert [b["counts"] for b in batches["stock_changes"]] == [
        {"+A": 2},
        {"-C": 1, "+C": 1, "+A": 1},
        {"-R": 1, "-C": 1, "+C": 1},
        {},
    ]
    # the stock as a Delta Lake table, and its change data feed in one load: 2 inserts, then one
    # commit for the backlog of the three later days (A-1 changed, C-3 new at its last quantity)
    assert [b["counts"] for b in batches["stock_levels"]] == [
        {"N": 2},
        {"C": 1, "S": 1, "N": 1},
        {"C": 1, "S": 1},
        {"S": 2},
    ]
    assert [b["counts"] for b in batches["stock_level_changes"]] == [{"N": 4}]
    assert [(b["counts"], b["range_start"], b["range_end"]) for b in batches["traffic"]] == [
        ({"N": 4, "D": 0}, "2025-01-01 09:00:00.000000", "2025-01-01 11:00:00.000000"),
        ({"N": 3, "D": 3}, "2025-01-01 10:00:00.000000", "2025-01-01 12:00:00.000000"),
        ({"N": 2, "D": 1}, "2025-01-01 09:00:00.000000", "2025-01-01 09:00:00.000000"),
    ]

    # the next run takes only what is new: customer 42, whose sale came early, arrives
    (example / "data" / "customers" / "customers_005.csv").write_text(
        "customer_id,name,email,city,updated_at,is_deleted\n"
        "42,Zoe Park,zoe@example.com,Graz,2025-01-04 09:00:00,false\n",
        encoding="utf-8",
    )
    # and Synapse starts a new folder: the fourth is complete now
    SynapseExport(example / "data" / "synapse").set_current("2025-01-01T14.00.00Z")
    # the plan of that run, made without a JVM, is the one made through Spark
    for output in ("text", "json"):
        native = cli_process("plan", "pipeline.yml", "-o", output, cwd=example)
        assert native.stderr.strip().endswith("pyspark imported: False"), native.stderr
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(SWITCH, "0")
            assert native.stdout == cli_in_process("plan", "pipeline.yml", "-o", output, cwd=example).stdout
    planned = {t["table"]: [b["batch_id"] for b in t["take"]] for t in json.loads(native.stdout)["tables"]}
    assert {t: ids for t, ids in planned.items() if ids} == {
        "customers": ["customers_005.csv"],
        "customers_history": ["customers_005.csv"],
        "dim_customer": ["customers_005.csv"],
        "crm_accounts": ["2025-01-01T13.00.00Z"],
    }
    again = cli_in_process("run", "pipeline.yml", "--output", "json", cwd=example)
    assert again.returncode == 0, again.stderr
    new = {t["table"]: [b["batch_id"] for b in t["batches"]] for t in json.loads(again.stdout)["tables"]}
    assert {t: ids for t, ids in new.items() if ids} == {
        "customers": ["customers_005.csv"],
        "customers_history": ["customers_005.csv"],
        "dim_customer": ["customers_005.csv"],
        "customer_changes": [new["customer_changes"][0]],
        "crm_accounts": ["2025-01-01T13.00.00Z"],
    }
    assert new["customer_changes"][0].startswith("shop.customers@")
    # the skeleton made for the early sale was upgraded in place: same surrogate key
    dim = spark.read.format("iceberg").load(str(example / "warehouse" / "shop" / "dim_customer"))
    sales = spark.read.format("iceberg").load(str(example / "warehouse" / "shop" / "sales"))
    assert [(r.customer_sk, r.name, r.is_inferred) for r in dim.where("customer_id = 42").collect()] == [
        (9, "Zoe Park", False)
    ]
    assert [r.customer_sk for r in sales.where("customer_id = 42").collect()] == [9]

    history = json.loads(
        cli_in_process("history", "pipeline.yml", "customers", "-o", "json", cwd=example).stdout
    )
    assert [(h["batch_id"], h["status"], h["quarantined_count"]) for h in history] == [
        ("customers_001.csv", "published", 0),
        ("customers_002.csv", "published", 2),
        ("customers_003.csv", "published", 0),
        ("customers_004.csv", "published", 0),
        ("customers_005.csv", "published", 0),
    ]
    status = json.loads(
        cli_in_process("status", "pipeline.yml", "-o", "json", "--pending", cwd=example).stdout
    )
    assert [(s["table"], s["batches_published"], s["rows"], s["pending"]) for s in status] == [
        ("customers", 5, 7, 0),
        ("customers_history", 5, 12, 0),
        ("dim_customer", 5, 9, 0),
        ("sales", 2, 4, 0),
        ("customer_changes", 2, 11, 0),
        ("crm_accounts", 4, 4, 0),
        ("orders", 3, 5, 0),
        ("products", 2, 2, 0),
        ("stock_changes", 4, 8, 0),
        ("traffic", 3, 5, 0),
        ("stock_levels", 4, 3, 0),
        ("stock_level_changes", 1, 4, 0),
    ]
    traffic = json.loads(
        cli_in_process("history", "pipeline.yml", "traffic", "-o", "json", cwd=example).stdout
    )
    assert [
        (h["effective_count"], [(r["start"][11:16], r["end"][11:16]) for r in h["effective_ranges"]])
        for h in traffic
    ] == [
        (0, [("09:00", "10:00")]),  # (09:00, 10:00): 09:00 re-sent by the third, 10-11 by the second
        (3, [("10:00", "12:00")]),
        (2, [("09:00", "09:00")]),
    ]
    table = cli_in_process("history", "pipeline.yml", "traffic", cwd=example)
    assert table.returncode == 0, table.stderr
    assert "effective" in table.stdout
