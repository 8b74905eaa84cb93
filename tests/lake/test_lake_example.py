"""The example pipeline (examples/orders) on the lake: its inputs uploaded to the S3 server and
read from `s3a://`, its Iceberg tables and control tables in the REST catalog (S3FileIO), its
Delta table on `s3://` through S3A. Its tables equal the local run's (`example_first_run_kept`), row
for row, but for a change log's system time: a batch's arrival, the newest modification time of
its files, which on the S3 server is their upload (an object keeps no other time)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.conftest import cli_in_process
from tests.example_run import EXAMPLE, VOLATILE, batch_key, contents, table_names
from tests.lake.servers import BUCKET, lake_pipeline, upload

ARRIVAL = "system_time"  # a change log's system time (config/change_log.py)


def local_now() -> datetime:
    """Now, as PySpark gives a timestamp it reads: naive, in this machine's time zone."""
    return datetime.now(UTC).astimezone().replace(tzinfo=None)


def without(df: Any, rows: list[tuple[Any, ...]], column: str) -> list[tuple[Any, ...]]:
    """`contents` rows of `df`'s table without one of its columns, sorted again."""
    columns = sorted(c for c in df.columns if c not in VOLATILE)
    if column not in columns:
        return rows
    n = columns.index(column)
    return sorted((r[:n] + r[n + 1 :] for r in rows), key=lambda t: tuple((x is None, str(x)) for x in t))


def test_the_example_on_the_lake_equals_the_local_run(
    spark, lake, example_first_run_kept, tmp_path, monkeypatch
):
    data = f"s3a://{BUCKET}/example/data"
    began = local_now().replace(microsecond=0) - timedelta(seconds=1)  # S3 keeps whole seconds
    upload(spark, example_first_run_kept.data, data)
    uploaded = local_now()
    warehouse = lake.catalog.warehouse
    monkeypatch.setenv("DEMO_WAREHOUSE", warehouse)  # the Delta table's folder, and its feed's
    text = lake_pipeline((EXAMPLE / "pipeline.yml").read_text(encoding="utf-8"), lake, "lake", data)
    (tmp_path / "pipeline.yml").write_text(text, encoding="utf-8")

    run = cli_in_process("run", "pipeline.yml", "--output", "json", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    result = json.loads(run.stdout)
    assert result["ok"], result
    local = {
        t["table"]: [batch_key(b["batch_id"]) for b in t["batches"]]
        for t in example_first_run_kept.result["tables"]
    }
    taken = {t["table"]: [batch_key(b["batch_id"]) for b in t["batches"]] for t in result["tables"]}
    assert taken == local

    from lakefresh.api import load_pipeline

    pipeline = load_pipeline(tmp_path / "pipeline.yml", spark=spark)
    names = table_names(pipeline)
    assert sorted(names) == sorted(example_first_run_kept.tables)
    differ, arrivals = [], []
    for name in names:
        df = pipeline.table(name)
        ours, theirs = contents(df), example_first_run_kept.tables[name]
        if without(df, ours, ARRIVAL) != without(df, theirs, ARRIVAL):
            differ.append(name)
        if ARRIVAL in df.columns:
            arrivals += [r[0] for r in df.select(ARRIVAL).collect()]
    assert differ == []
    # the change log's (stock_changes') system times are the uploads' times
    assert arrivals and all(began <= t <= uploaded for t in arrivals), (began, arrivals, uploaded)
    # every table's files are objects of the S3 server
    stored = lake.s3.objects("warehouse/shop/")
    for name in names:
        assert any(k.startswith(f"warehouse/shop/{name}/") for k in stored), name
