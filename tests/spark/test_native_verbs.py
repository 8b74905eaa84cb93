"""`freshness`, `status --pending`, `report` and `plan` list sources in local folders (`files`,
`synapse_link`) and change feeds of the warehouse's tables, and read the control tables and the
targets' lineage, without a JVM. A CLI process that does so never imports PySpark, and prints
what the Spark road prints on the same tables and folders; a source it cannot list sends the
whole command through Spark."""

from __future__ import annotations

import json
import logging
import re
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from lakefresh.lakehouse.native import SWITCH
from lakefresh.synapse_export import SynapseExport, entity_attributes
from tests.conftest import FORMATS, Workspace, cli_in_process, cli_process, pipeline_settings_kept

F1, F2, F3, F4 = (f"2025-03-01T{h:02d}.00.00Z" for h in (10, 11, 12, 13))
ACCOUNT = {"account": entity_attributes(("name", "string"))}

TABLES = """
- name: people
  source: {kind: files, path: in, format: csv, schema: {id: int, name: string}}
  strategy: {kind: key, keys: [id]}
  freshness: {warn_after: 1s, error_after: 10000d}
- name: days
  source:
    kind: files
    path: days
    format: csv
    layout: folder
    completion_marker: _SUCCESS
    schema: {id: int}
  strategy: {kind: append}
- name: accounts
  source: {kind: synapse_link, path: export, entity: account, look_back_interval: 1d}
  strategy: {kind: key, keys: [Id], date_column: SinkModifiedOn}
"""
# the people target's changes, read downstream: from its Iceberg snapshots, or its Delta versions
FEEDS = {
    "iceberg": "{{kind: table_changes, table: {namespace}.people, keys: [id]}}",
    "delta": "{{kind: delta_changes, path: {warehouse}/{namespace}/people, keys: [id]}}",
}
FEED = """
- name: people_changes
  source: {source}
  transform: {{sql: "SELECT *, _lf_change_type AS change FROM batch"}}
  strategy: {{kind: append}}
  depends_on: [people]
"""


def account(id_: str, name: str, hour: int) -> dict[str, Any]:
    at = datetime(2025, 3, 1, hour, 30)
    return {"Id": id_, "SinkCreatedOn": at, "SinkModifiedOn": at, "name": name, "versionnumber": 1}


@pytest.fixture(scope="module", params=FORMATS)
def pipeline(request: Any, spark: Any, warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One pipeline per table format, run once; then batches arrive that no run took: a file
    (after another that only `people` took, whose commit its change feed has not read), a day
    folder still without its marker beside a complete one, a finished export folder."""
    ws = Workspace(tmp_path_factory.mktemp(f"native_{request.param}"), spark, warehouse, lease=True)
    if request.param == "delta":  # the targets and the control tables
        ws.catalog_extra = "  format: delta\n  control_format: delta\n"
    ws.write("in/b1.csv", "id,name\n1,Ann\n2,Bob\n", mtime=1_736_000_000)
    ws.write("in/b2.csv", "id,name\n2,Bea\nx,Cid\n", mtime=1_736_003_600)  # x: quarantined
    ws.write("days/2025-01-01/part.csv", "id\n1\n", mtime=1_736_000_000)
    ws.write("days/2025-01-01/_SUCCESS", "")
    export = SynapseExport(ws.folder("export"))
    export.write_folder(F1, ACCOUNT, {"account": {"2025.csv": [account("a", "Ann", 10)]}})
    export.write_folder(F2, ACCOUNT, {"account": {"2025.csv": [account("b", "Bob", 11)]}})
    export.set_current(F2)  # F2 is still being written
    feed = FEEDS[request.param].format(namespace=ws.namespace, warehouse=warehouse)
    p = ws.pipeline(TABLES + FEED.format(source=feed))
    assert p.run().ok
    ws.write("in/b3.csv", "id,name\n3,Cy\n", mtime=1_736_007_200)
    assert p.run(["people"]).ok  # a commit that people_changes has not read
    published = time.time()
    ws.write("in/b4.csv", "id,name\n4,Dee\n", mtime=1_736_010_800)
    ws.write("days/2025-01-02/part.csv", "id\n2\n", mtime=1_736_086_400)
    ws.write("days/2025-01-02/_SUCCESS", "")
    ws.write("days/2025-01-03/part.csv", "id\n3\n", mtime=1_736_172_800)  # no marker yet
    export.write_folder(F3, ACCOUNT, {"account": {"2025.csv": [account("c", "Cy", 12)]}})
    export.set_current(F4)  # F2 and F3 are finished
    # people's last batch is older than its warn_after (1 s) before any command reads its
    # freshness: both roads then say `warn`, however fast the first one runs
    time.sleep(max(0.0, published + 1.5 - time.time()))
    return p


def spark_road(p: Any, *command: str) -> Any:
    """The command through Spark, in this process, on the shared session."""
    with pytest.MonkeyPatch.context() as patch, pipeline_settings_kept(p.spark, p.path):
        patch.setenv(SWITCH, "0")
        return cli_in_process(*command, cwd=p.path.parent)


def both_roads(p: Any, *command: str) -> tuple[str, str]:
    """The command's output without a JVM (a process that never imports PySpark) and through
    Spark."""
    native, spark = cli_process(*command, cwd=p.path.parent), spark_road(p, *command)
    assert native.returncode == spark.returncode == 0, native.stderr + spark.stderr
    assert native.stderr.strip().endswith("pyspark imported: False"), native.stderr
    return native.stdout, spark.stdout


def test_freshness_status_and_report_need_no_jvm_and_say_what_the_spark_road_says(pipeline):
    root = pipeline.path.parent
    said = {}
    for command in (
        ("status", "pipeline.yml", "--pending", "-o", "json"),
        ("status", "pipeline.yml", "--pending"),
        ("freshness", "pipeline.yml", "-o", "json"),
    ):
        native, spark = both_roads(pipeline, *command)
        if command[0] == "freshness":  # the ages grow between the two reads
            assert without_ages(native) == without_ages(spark)
        else:
            assert native == spark, command
        said[command[0], command[-1]] = native

    native = cli_process("report", "pipeline.yml", "-f", "native.html", cwd=root)
    assert native.stderr.strip().endswith("pyspark imported: False"), native.stderr
    assert spark_road(pipeline, "report", "pipeline.yml", "-f", "spark.html").returncode == 0
    assert page(root / "native.html") == page(root / "spark.html")

    status = json.loads(said["status", "json"])
    assert [(s["table"], s["batches_published"], s["pending"]) for s in status] == [
        ("people", 3, 1),  # b4.csv
        ("days", 1, 1),  # 2025-01-02 (2025-01-03 has no marker yet)
        ("accounts", 1, 2),  # F2 and F3 (F4, the newest, may still be written)
        ("people_changes", 1, 1),  # the load of b3.csv's commit
    ]
    fresh = json.loads(said["freshness", "json"])
    assert [(f["table"], f["status"], f["pending"], f["source_newest"]) for f in fresh] == [
        ("people", "warn", 1, "2025-01-04T17:13:20"),
        ("days", "none", 1, "2025-01-05T14:13:20"),
        ("accounts", "none", 2, "2025-03-01T12:00:00"),
        ("people_changes", "none", None, None),  # a change feed: its source holds no files
    ]


def test_a_source_it_cannot_list_goes_through_spark(pipeline, caplog):
    """A table source (another table's snapshots) is listed through Spark, with the same answer."""
    root = pipeline.path.parent
    snapshot = pipeline.config.qualified(pipeline.config.tables[0])
    (root / "snapshot.yml").write_text(
        (root / "pipeline.yml").read_text(encoding="utf-8")
        + f"  - name: people_copy\n    source: {{kind: table_snapshot, table: {snapshot}}}\n"
        "    strategy: {kind: full}\n",
        encoding="utf-8",
    )
    from lakefresh.api import load_pipeline

    p = load_pipeline(root / "snapshot.yml", spark=pipeline.spark)
    with caplog.at_level(logging.DEBUG, logger="lakefresh"):
        found = [(s.table, s.pending) for s in p.status(pending=True)]
    assert found == [("people", 1), ("days", 1), ("accounts", 2), ("people_changes", 1), ("people_copy", 1)]
    assert "reading through Spark: a table_snapshot source is listed through Spark" in caplog.text


def test_a_plan_needs_no_jvm_and_says_what_the_spark_road_says(pipeline):
    """What waits after the runs: a file, a complete day folder (beside one without its marker),
    two finished export folders, the change feed's load of a commit it has not read."""
    for output in ("text", "json"):
        native, spark = both_roads(pipeline, "plan", "pipeline.yml", "-o", output)
        assert native == spark, output
    planned = json.loads(native)["tables"]
    assert [
        (t["table"], [b["batch_id"] for b in t["take"]], t["commits"], t["unknown"]) for t in planned[:3]
    ] == [
        ("people", ["b4.csv"], 1, []),
        ("days", ["2025-01-02"], 1, []),
        ("accounts", [F2, F3], 1, []),
    ]
    assert [(len(t["take"]), t["commits"], t["unknown"]) for t in planned[3:]] == [
        (1, 1, [])
    ]  # its next load


def test_a_plan_of_a_changed_configuration_needs_no_jvm_and_says_what_the_spark_road_says(pipeline):
    root = pipeline.path.parent
    text = (root / "pipeline.yml").read_text(encoding="utf-8")
    changed = text.replace("strategy: {kind: key, keys: [id]}", "strategy: {kind: key, keys: [id, name]}", 1)
    (root / "changed.yml").write_text(changed, encoding="utf-8")
    native, spark = both_roads(pipeline, "plan", "changed.yml", "--table", "people", "-o", "json")
    assert native == spark
    [people] = json.loads(native)["tables"]
    assert people["config_changes"] == ["strategy.keys: ['id'] -> ['id', 'name']"]
    assert people["stops"].startswith("the configuration changed since batch b3.csv")


def test_a_plan_of_a_rolled_back_table_needs_no_jvm_and_says_what_the_spark_road_says(pipeline):
    """The people target rolled back past its last batch (by hand, not by lakefresh): the plan
    stops it until the operator decides, on both roads. (It changes the module's tables: last.)"""
    name = pipeline.config.qualified(pipeline.config.tables[0])
    pipeline.backend.roll_back_to(name, pipeline.backend.published_batches(name)["b2.csv"])
    native, spark = both_roads(pipeline, "plan", "pipeline.yml", "-o", "json")
    assert native == spark
    people = json.loads(native)["tables"][0]
    assert people["stops"].startswith(
        "1 published batch(es) are no longer in its lineage (rolled back: b3.csv)"
    )
    assert [b["batch_id"] for b in people["take"]] == ["b3.csv", "b4.csv"]


def without_ages(text: str) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k not in ("age", "source_age")} for r in json.loads(text)]


def page(path: Path) -> str:
    """A report without what differs between two writes of it: the minute it was written, the
    ids plotly draws for its charts."""
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}", "", text)
    return re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "", text)
