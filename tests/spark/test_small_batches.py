"""A small batch runs without shuffles: its rows are read, numbered and
materialized in one partition, so that what groups them by key (its duplicates, its distinct
keys, a change set's window) is planned without an exchange, a stage less each. Large ones keep
their partitions. The stages of a `key` batch are listed in bench/README (bench_jobs.py)."""

from __future__ import annotations

from datetime import datetime

from lakefresh.strategies import materialize
from tests.conftest import rows


def exchanges(df) -> int:
    """How many shuffles Spark plans for this DataFrame."""
    return df._jdf.queryExecution().executedPlan().toString().count("Exchange hashpartitioning")


def test_few_rows_are_materialized_as_one_partition_and_grouped_without_a_shuffle(spark, monkeypatch):
    four = spark.range(10).repartition(4).selectExpr("id % 3 AS k", "id AS v")
    small = materialize.materialize(four)
    assert small.rdd.getNumPartitions() == 1
    assert exchanges(small.groupBy("k").count()) == 0
    assert rows(small.groupBy("k").count(), ["k", "count"]) == [(0, 4), (1, 3), (2, 3)]

    monkeypatch.setattr(materialize, "ONE_PARTITION_ROWS", 9)  # ten rows are now many
    large = materialize.materialize(four)
    assert large.rdd.getNumPartitions() == 4
    assert exchanges(large.groupBy("k").count()) == 1
    assert rows(large, ["k", "v"]) == rows(small, ["k", "v"])


def test_a_small_file_batch_is_numbered_in_one_task_across_its_files(ws):
    """Two files read as one batch (as a backlog group is) keep each file's own record and line
    numbers, a record over two lines included; the numbering plans no shuffle."""
    from lakefresh.sources import BatchRef, SourceContext, make_source

    ws.write("in/a.csv", 'id,v\n1,"two\nlines"\n2,b\n', mtime=1_736_000_000)
    ws.write("in/b.csv", "id,v\n3,c\nx,bad\n", mtime=1_736_003_600)
    source = f"{{kind: files, path: {ws.root / 'in'}, format: csv, schema: {{id: int, v: string}}}}"
    p = ws.pipeline(f"- name: t\n  source: {source}\n  strategy: {{kind: append}}\n")
    table = p.config.tables[0]
    source = make_source(table.source, SourceContext.of(p.config, p.backend, str(p.base_dir), table))
    files = tuple(str(ws.root / "in" / name) for name in ("a.csv", "b.csv"))
    read = source.read(BatchRef("b.csv", "b.csv", ("b.csv",), datetime(2025, 1, 1), files), None).rows
    assert exchanges(read) == 0
    numbered = [
        (r[0].rsplit("/", 1)[-1], *r[1:]) for r in rows(read, ["_lf_file", "_lf_record", "_lf_line", "id"])
    ]
    assert numbered == [("a.csv", 1, 2, 1), ("a.csv", 2, 4, 2), ("b.csv", 1, 2, 3), ("b.csv", 2, 3, None)]
