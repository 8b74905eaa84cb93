"""The native reader's rows are PySpark's: a map a dict, a struct a dict, bytes a bytearray, an aware
timestamp a naive one in this process's local time; a hadoop catalog's table is read from its newest
metadata file; what it cannot reach says so before reading."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pytest

from lakefresh.config.models import PipelineConfig
from lakefresh.lakehouse.native import NativeTables, NotNative, _newest_metadata, spark_rows
from tests.conftest import machine_zone


def test_arrow_rows_become_what_pyspark_collects():
    schema = pa.schema(
        [
            ("counts", pa.map_(pa.string(), pa.int64())),
            ("ranges", pa.list_(pa.struct([("start", pa.string()), ("end", pa.string())]))),
            ("at", pa.timestamp("us", tz="UTC")),
            ("naive", pa.timestamp("us")),
            ("raw", pa.binary()),
        ]
    )
    at = datetime(2025, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    data = pa.table(
        {
            "counts": [[("N", 2)], [], None],
            "ranges": [[{"start": "a", "end": "b"}], [], None],
            "at": [at, None, at],
            "naive": [datetime(2025, 1, 1), None, None],
            "raw": [b"\x00", None, b""],
        },
        schema=schema,
    )
    with machine_zone("Europe/Oslo"):  # PySpark gives local time: 04:04 in Oslo that winter
        rows = spark_rows(data)
    assert rows == [
        {
            "counts": {"N": 2},
            "ranges": [{"start": "a", "end": "b"}],
            "at": datetime(2025, 1, 2, 4, 4, 5, 6),
            "naive": datetime(2025, 1, 1),
            "raw": bytearray(b"\x00"),
        },
        {"counts": {}, "ranges": [], "at": None, "naive": None, "raw": None},
        {
            "counts": None,
            "ranges": None,
            "at": datetime(2025, 1, 2, 4, 4, 5, 6),
            "naive": None,
            "raw": bytearray(),
        },
    ]


def test_the_newest_metadata_file_is_the_highest_version(tmp_path):
    metadata = tmp_path / "t" / "metadata"
    metadata.mkdir(parents=True)
    for name in ("v1.metadata.json", "v10.metadata.json", "v9.gz.metadata.json", "version-hint.text"):
        (metadata / name).write_text("{}", encoding="utf-8")
    assert _newest_metadata(tmp_path / "t") == metadata / "v10.metadata.json"
    assert _newest_metadata(tmp_path / "none") is None


def config(**catalog: str) -> PipelineConfig:
    return PipelineConfig.model_validate(
        {
            "catalog": {"name": "c", **catalog},
            "tables": [
                {
                    "name": "t",
                    "source": {"kind": "files", "path": "in", "format": "csv", "schema": {"id": "int"}},
                    "strategy": {"kind": "append"},
                }
            ],
        }
    )


def test_what_it_cannot_read_it_refuses_before_reading(tmp_path, monkeypatch):
    with pytest.raises(NotNative, match="not a local folder"):
        NativeTables.of(config(), "s3a://bucket/warehouse")
    rest = NativeTables.of(config(type="rest"), str(tmp_path))
    with pytest.raises(NotNative, match="not a hadoop catalog"):
        rest.exists("lakefresh.batches")
    delta = NativeTables.of(config(type="rest", control_format="delta"), f"file://{tmp_path}")
    assert delta.location("lakefresh.batches") == tmp_path / "lakefresh" / "batches"
    assert not delta.exists("lakefresh.batches")
    monkeypatch.setenv("LAKEFRESH_NATIVE_READS", "0")
    with pytest.raises(NotNative):
        NativeTables.of(config(), str(tmp_path))
