"""`status`, `history` and `quarantine` read the control tables without a JVM: Iceberg tables of
a hadoop catalog through pyiceberg, Delta tables through the `deltalake` package. A CLI process
that reads so never imports PySpark, and prints what the Spark road prints on the same tables."""

from __future__ import annotations

import json
import logging

import pytest

from lakefresh.lakehouse.native import SWITCH
from tests.conftest import FORMATS, cli_in_process, cli_process, pipeline_settings_kept

TABLES = """
- name: people
  source: {{kind: files, path: {folder}, format: csv, schema: {{id: int, name: string}}}}
  strategy: {{kind: key, keys: [id]}}
"""


@pytest.mark.parametrize("fmt", FORMATS)
def test_reads_need_no_jvm_and_say_what_the_spark_road_says(ws, fmt, monkeypatch):
    if fmt == "delta":  # the targets and the control tables
        ws.catalog_extra = "  format: delta\n  control_format: delta\n"
    ws.write("in/b1.csv", "id,name\n1,Ann\n2,Bob\n", mtime=1_736_000_000)
    ws.write("in/b2.csv", "id,name\n2,Bea\nx,Cid\n3,Cid\n", mtime=1_736_003_600)  # x: quarantined
    p = ws.pipeline(TABLES.format(folder=ws.root / "in"))
    assert p.run().ok
    commands = [
        ("status", "pipeline.yml", "-o", "json"),
        ("status", "pipeline.yml"),
        ("history", "pipeline.yml", "people", "-o", "json"),
        ("history", "pipeline.yml", "people"),
        ("quarantine", "pipeline.yml", "-o", "json"),
        ("quarantine", "pipeline.yml", "--table", "people", "--batch", "b2.csv"),
    ]
    said = {}
    for command in commands:
        native = cli_process(*command, cwd=ws.root)
        assert native.returncode == 0, native.stderr
        assert native.stderr.strip().endswith("pyspark imported: False"), native.stderr
        monkeypatch.setenv(SWITCH, "0")  # the same command through Spark (the shared session)
        with pipeline_settings_kept(ws.spark, p.path):
            spark = cli_in_process(*command, cwd=ws.root)
        monkeypatch.delenv(SWITCH)
        assert spark.returncode == 0, spark.stderr
        assert native.stdout == spark.stdout, command
        said[command] = native.stdout

    status = json.loads(said[commands[0]])
    shown = [(s["table"], s["batches_published"], s["rows"], s["counts"], s["quarantined"]) for s in status]
    assert shown == [("people", 2, 3, {"C": 1, "N": 3}, 1)]
    found = json.loads(said[commands[4]])
    assert [(r["batch_id"], r["line"], r["raw"]) for r in found] == [("b2.csv", 3, '{"id":"x","name":"Cid"}')]
    history = json.loads(said[commands[2]])
    assert [(h["batch_id"], h["status"], h["effective_count"]) for h in history] == [
        ("b1.csv", "published", 1),  # b2 took Bob's row
        ("b2.csv", "published", 2),
    ]


def test_a_catalog_it_cannot_read_goes_through_spark(ws, caplog):
    """Another catalog type than hadoop: the Spark road, with the same answer."""
    ws.write("in/b1.csv", "id,name\n1,Ann\n", mtime=1_736_000_000)
    p = ws.pipeline(TABLES.format(folder=ws.root / "in"))
    assert p.run().ok
    rest = p.config.catalog.model_copy(update={"type": "rest"})  # not a folder of metadata files
    p.config = p.config.model_copy(update={"catalog": rest})
    with caplog.at_level(logging.DEBUG, logger="lakefresh"):
        assert [(s.table, s.batches_published, s.rows) for s in p.status()] == [("people", 1, 1)]
    assert "reading through Spark: " in caplog.text
