"""Which sources the reading verbs list without a JVM (sources/native_listing.py): a folder on this
machine is listed by a run's own listing code, named as Hadoop names files; a folder in an object
store, a table's snapshots and a JDBC query say so before anything is listed (NotNative), and the
verb takes the Spark road."""

from __future__ import annotations

import os
from datetime import datetime

import pytest

from lakefresh.config.models import PipelineConfig
from lakefresh.lakehouse.native import NativeTables, NotNative
from lakefresh.sources.native_listing import NativeListing
from lakefresh.state.loads import Load, loads_in


def listing(tmp_path, source: dict) -> tuple[NativeListing, PipelineConfig]:
    strategy = {"kind": "key", "keys": ["id"]} if source["kind"] == "table_changes" else {"kind": "append"}
    config = PipelineConfig.model_validate(
        {
            "catalog": {"name": "c", "warehouse": str(tmp_path / "warehouse")},
            "tables": [{"name": "t", "source": source, "strategy": strategy}],
        }
    )
    tables = NativeTables.of(config, str(tmp_path / "warehouse"))
    return NativeListing(config, str(tmp_path), tables), config


def test_a_local_folder_lists_its_batches_in_order_with_their_files_and_times(tmp_path):
    for name, at in (("b2.csv", 1_736_003_600), ("b1.csv", 1_736_000_000), ("_b0.csv", 1)):
        path = tmp_path / "in" / name
        path.parent.mkdir(exist_ok=True)
        path.write_text("id\n1\n", encoding="utf-8")
        os.utime(path, (at, at))
    native, config = listing(tmp_path, {"kind": "files", "path": "in", "format": "csv"})
    found = native.batches(config.tables[0])
    assert [(r.batch_id, r.files, r.batch_time) for r in found] == [
        ("b1.csv", (f"file:{tmp_path}/in/b1.csv",), datetime(2025, 1, 4, 14, 13, 20)),
        ("b2.csv", (f"file:{tmp_path}/in/b2.csv",), datetime(2025, 1, 4, 15, 13, 20)),
    ]


@pytest.mark.parametrize(
    ("source", "says"),
    [
        (
            {"kind": "files", "path": "s3a://bucket/in", "format": "csv"},
            "source in s3a:// is listed through Spark",
        ),
        ({"kind": "table_snapshot", "table": "ns.t"}, "a table_snapshot source is listed through Spark"),
        ({"kind": "table_changes", "table": "other.ns.t"}, "other.ns.t is not named namespace.table"),
    ],
)
def test_what_it_cannot_list_it_refuses_before_listing(tmp_path, source, says):
    native, config = listing(tmp_path, source)
    with pytest.raises(NotNative, match=says):
        native.batches(config.tables[0])


def test_a_readers_loads_come_oldest_first_as_the_log_orders_them():
    rows = [
        {"load_id": "r", "source_table": "ns.t", "start_snapshot_id": 1, "end_snapshot_id": 2,
         "batch_id": "b", "processed": False, "opened_at": datetime(2025, 1, 2)},
        {"load_id": "other", "source_table": "ns.t", "start_snapshot_id": None, "end_snapshot_id": 9,
         "batch_id": "x", "processed": True, "opened_at": datetime(2025, 1, 1)},
        {"load_id": "r", "source_table": "ns.t", "start_snapshot_id": None, "end_snapshot_id": 1,
         "batch_id": "a", "processed": True, "opened_at": datetime(2025, 1, 1)},
    ]  # fmt: skip
    assert loads_in(rows, "r") == [Load("r", "ns.t", None, 1, "a", True), Load("r", "ns.t", 1, 2, "b", False)]
