"""The batch's key range bounds the target scans of `key` and `scd2` (the status lookup, the
MERGE's ON), so Iceberg can skip files whose keys lie elsewhere; results do not change."""

from __future__ import annotations

from datetime import datetime

from lakefresh.strategies.base import key_range
from tests.conftest import rows


def test_the_range_covers_each_orderable_key_and_round_trips_through_text(spark):
    batch = spark.createDataFrame(
        [(9, "o'k", datetime(2025, 1, 1, 10, 0, 0, 500000), True), (3, "a", datetime(2024, 12, 31), False)],
        "id bigint, code string, at timestamp, flag boolean",
    )
    within = key_range(batch, ["id", "code", "at", "flag"], alias="t")
    assert within == (
        "t.`id` >= CAST('3' AS bigint) AND t.`id` <= CAST('9' AS bigint) AND "
        "t.`code` >= CAST('a' AS string) AND t.`code` <= CAST('o''k' AS string) AND "
        "t.`at` >= CAST('2024-12-31 00:00:00' AS timestamp) AND "
        "t.`at` <= CAST('2025-01-01 10:00:00.5' AS timestamp)"
    )  # a boolean key gets no bound
    assert batch.alias("t").filter(within).count() == 2  # every batch row lies inside
    assert key_range(batch.limit(0), ["id"]) is None
    assert key_range(batch, ["flag"]) is None


def test_a_bounded_merge_gives_the_same_table(ws):
    ws.write("in/b1.csv", "id,v\n" + "".join(f"{i},a{i}\n" for i in range(1, 7)))
    ws.write("in/b2.csv", "id,v\n4,b4\n5,a5\n9,b9\n")
    p = ws.pipeline(
        """
        - name: t
          source: {kind: files, path: in, format: csv, schema: {id: int, v: string}}
          strategy: {kind: key, keys: [id]}
        """
    )
    assert [b.counts for b in p.run().batches] == [{"N": 6}, {"C": 1, "U": 1, "N": 1}]
    assert rows(p.table("t"), ["id", "v"]) == [
        (1, "a1"), (2, "a2"), (3, "a3"), (4, "b4"), (5, "a5"), (6, "a6"), (9, "b9")
    ]  # fmt: skip
