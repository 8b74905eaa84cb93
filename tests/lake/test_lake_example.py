"""The example pipeline (examples/orders) on the lake: its inputs uploaded to the S3 server and
read from `s3a://`, its Iceberg tables and control tables in the REST catalog (S3FileIO), its
Delta table on `s3://` through S3A. Its tables equal the local run's (`example_first_run`), row
for row."""

from __future__ import annotations

import json

from tests.conftest import cli_in_process
from tests.example_run import EXAMPLE, batch_key, contents, table_names
from tests.lake.servers import BUCKET, lake_pipeline, upload


def test_the_example_on_the_lake_equals_the_local_run(spark, lake, example_first_run, tmp_path, monkeypatch):
    data = f"s3a://{BUCKET}/example/data"
    upload(spark, example_first_run.data, data)
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
        for t in example_first_run.result["tables"]
    }
    taken = {t["table"]: [batch_key(b["batch_id"]) for b in t["batches"]] for t in result["tables"]}
    assert taken == local

    from lakefresh.api import load_pipeline

    pipeline = load_pipeline(tmp_path / "pipeline.yml", spark=spark)
    names = table_names(pipeline)
    assert sorted(names) == sorted(example_first_run.tables)
    differ = [n for n in names if contents(pipeline.table(n)) != example_first_run.tables[n]]
    assert differ == []
    # every table's files are objects of the S3 server
    stored = lake.s3.objects("warehouse/shop/")
    for name in names:
        assert any(k.startswith(f"warehouse/shop/{name}/") for k in stored), name
