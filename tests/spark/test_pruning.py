"""A batch's key range (strategies/pruning.py): the `key` strategy reads and merges only the
target's files that may hold the batch's keys.

Shown by taking away a data file whose keys lie outside the batch's range: a run that read it
would fail on the missing file."""

from __future__ import annotations

import shutil

from tests.conftest import CATALOG, rows

KEYED = """
- name: t
  source: {kind: files, path: in, format: csv, schema: {id: int, city: string}}
  strategy: {kind: key, keys: [id]}
"""


def batch(ids: range, city: str) -> str:
    return "id,city\n" + "".join(f"{i},{city}\n" for i in ids)


def data_file_of(spark, table: str, key: int) -> str:
    """The path of the data file that holds the row of `key`."""
    found = spark.sql(f"SELECT file_path, readable_metrics.id AS id FROM {table}.files").collect()
    paths = [r["file_path"] for r in found if r["id"]["lower_bound"] <= key <= r["id"]["upper_bound"]]
    assert len(paths) == 1, paths
    return paths[0].removeprefix("file:")


def test_a_batch_reads_no_file_outside_its_key_range(ws, spark, tmp_path):
    """Three batches of new keys are three appended files with disjoint ranges (1-100, 101-200,
    201-300); the file of keys 1-100 is then missing while a batch of keys 250-310 runs."""
    for n, (ids, city) in enumerate([(range(1, 101), "a"), (range(101, 201), "b"), (range(201, 301), "c")]):
        ws.write(f"in/b{n}.csv", batch(ids, city), mtime=1_736_000_000 + n)
    p = ws.pipeline(KEYED)
    assert p.run().ok
    table = f"{CATALOG}.{ws.namespace}.t"
    first = data_file_of(spark, table, 1)

    ws.write("in/b3.csv", batch(range(250, 311), "d"), mtime=1_736_000_100)  # 51 updates, 10 new keys
    aside = tmp_path / "aside.parquet"
    shutil.move(first, aside)
    try:
        result = p.run()
    finally:
        shutil.move(aside, first)
    assert result.ok, result.to_dict()
    assert result.batches[0].counts == {"C": 51, "N": 10}
    assert rows(p.table("t").groupBy("city").count()) == [("a", 100), ("b", 100), ("c", 49), ("d", 61)]
