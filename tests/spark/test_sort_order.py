"""A target's write order (`sort_by`): Iceberg's `WRITE ORDERED BY` on a new
target and on an existing one before its next batch, kept by compaction. With its files holding
key ranges, a copy-on-write MERGE of recent keys rewrites only the file that holds them
(bench/README, `bench_pruning.py`: 2.3x at 1 M rows, 4.3x at 5 M)."""

from __future__ import annotations

import pytest

from lakefresh.lakehouse.backend import Layout
from tests.conftest import rows, settings_kept

TABLE = """
- name: events
  source: {{kind: files, path: in, format: csv, schema: {{id: int, v: string}}}}
  strategy: {{kind: key, keys: [id]}}
  write_mode: {mode}
  properties: {{write.distribution-mode: range}}
{extra}"""


def latest_summary(ws, table: str) -> dict[str, str]:
    row = ws.spark.sql(
        f"SELECT summary FROM lf_test.{ws.namespace}.{table}.snapshots ORDER BY committed_at DESC LIMIT 1"
    ).first()
    return dict(row[0])


@pytest.fixture
def two_write_tasks(spark):
    """A write of the range distribution in two tasks, so two files (a CLI test that joined the
    shared session may have left adaptive execution on, which coalesces them into one)."""
    pinned = {"spark.sql.adaptive.enabled": "false", "spark.sql.shuffle.partitions": "2"}
    with settings_kept(spark, list(pinned)):
        for key, value in pinned.items():
            spark.conf.set(key, value)
        yield


def test_a_sorted_target_rewrites_only_the_file_that_holds_the_recent_keys(ws, two_write_tasks):
    """Given 40 ids sorted into two files, an update of id 40 and a new id 41 rewrite one file."""
    ws.write("in/b1.csv", "id,v\n" + "".join(f"{i},a\n" for i in range(40, 0, -1)))
    p = ws.pipeline(TABLE.format(mode="copy-on-write", extra="  sort_by: [id]"))
    assert p.run().ok
    name = f"{ws.namespace}.events"
    assert p.backend.properties(name)["sort-order"] == "id ASC NULLS FIRST"
    files = ws.spark.sql(f"SELECT lower_bounds, upper_bounds FROM lf_test.{name}.files").count()
    assert files == 2  # the range distribution over the tests' two shuffle partitions

    ws.write("in/b2.csv", "id,v\n40,b\n41,b\n")
    result = p.run()
    assert result.ok, result.to_dict()
    assert latest_summary(ws, "events")["deleted-data-files"] == "1"
    assert rows(p.table("events")) == sorted(
        [(i, "a") for i in range(1, 40)] + [(40, "b"), (41, "b")], key=lambda t: str(t[0])
    )


def test_a_sort_order_added_to_an_existing_target_orders_its_next_writes(ws):
    ws.write("in/b1.csv", "id,v\n2,a\n1,a\n")
    p = ws.pipeline(TABLE.format(mode="copy-on-write", extra=""))
    assert p.run().ok
    name = f"{ws.namespace}.events"
    assert "sort-order" not in p.backend.properties(name)

    ws.write("in/b2.csv", "id,v\n3,b\n")
    p = ws.pipeline(TABLE.format(mode="copy-on-write", extra="  sort_by: [v desc, id]"))
    result = p.run()
    assert result.ok, result.to_dict()  # the order does not change results: no config change
    assert p.backend.properties(name)["sort-order"] == "v DESC NULLS LAST, id ASC NULLS FIRST"
    as_it_is = Layout(sort_by=("v DESC NULLS LAST", "id ASC NULLS FIRST"))
    assert p.backend.lay_out(name, as_it_is) == []  # nothing to change
    assert rows(p.table("events")) == [(1, "a"), (2, "a"), (3, "b")]


def test_compaction_of_a_sorted_merge_on_read_target_keeps_its_rows_and_applies_deletes(ws):
    ws.write("in/b1.csv", "id,v\n1,a\n2,a\n3,a\n")
    ws.write("in/b2.csv", "id,v\n2,b\n")
    extra = "  sort_by: [id]\n  maintenance: {compact_at_delete_files: 1}"
    p = ws.pipeline(TABLE.format(mode="merge-on-read", extra=extra))
    result = p.run()
    assert result.ok, result.to_dict()
    name = f"{ws.namespace}.events"
    assert p.backend.deletes(name).files == 0  # compacted after the run, by the sort strategy
    assert rows(p.table("events")) == [(1, "a"), (2, "b"), (3, "a")]


def test_a_distribution_mode_the_table_sets_is_kept_beside_its_sort_order(ws):
    """Iceberg's WRITE ORDERED BY also sets write.distribution-mode to range; the table's own
    setting wins (here `none`: each task sorts its own rows)."""
    ws.write("in/b1.csv", "id,v\n2,a\n1,a\n")
    table = TABLE.format(mode="copy-on-write", extra="  sort_by: [id]").replace(
        "write.distribution-mode: range", "write.distribution-mode: none"
    )
    p = ws.pipeline(table)
    assert p.run().ok
    found = p.backend.properties(f"{ws.namespace}.events")
    assert (found["sort-order"], found["write.distribution-mode"]) == ("id ASC NULLS FIRST", "none")
    assert p.run().ok  # nothing new: the order is not set again
    assert rows(p.table("events")) == [(1, "a"), (2, "a")]
