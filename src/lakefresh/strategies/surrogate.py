"""Surrogate keys, for the strategies that can be dimensions (`key`/`scd1`, `scd2`).

Both generators are deterministic functions of the staged data, so a retried batch or a
re-executed Spark task produces the same keys (uuid() or monotonically_increasing_id() would not):

- `hash`: xxhash64 of the natural key columns, each cast to text first (so widening a key from
  int to bigint keeps every key), and with scd2 of `valid_from` (one key per version). The same in
  every run and every rebuild. 64 bits: a collision is possible but negligible below ~10^8 keys
  (the unique-keys audit catches one).
- `sequence`: the largest key issued so far plus 1, 2, ... over the rows that need one, in
  natural key order (then `valid_from`). A batch staged again after a conflict numbers from the
  new maximum, which is the same unless another writer committed.

The largest key issued is not the table's largest key once a row is deleted (a hard delete, an
`scd2` version merged away): facts that still point to the deleted row's key would point to a new
row if the key were issued again. So each batch's commit carries the high-water mark it numbered
from (HIGH_WATER_PROPERTY, a commit property beside the batch's record); the next batch numbers
from the larger of the table's largest key and the newest mark in the lineage. The keys a commit
issues are in the table right after it, so the two together cover every key ever issued, as long
as every commit that deletes rows is a batch's (carrying its mark); a lookup's skeleton rows carry
the mark too. A runtime that drops commit properties (Iceberg before 1.12, the Spark 3.5 line's)
keeps the mark as a table property instead (the same name), raised before the batch's write: a
batch that then fails leaves a mark no higher than a key already issued, so the mark only ever
holds back keys that were issued; there a rollback does not lower it. A runtime whose commits
carry the mark reads that property too.

A row that has a key keeps it: updates carry the stored key, and a table that gains a
`surrogate_key` fills it as rows are next written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakefresh.lakehouse.sql import quote
from lakefresh.strategies.base import HIGH_WATER_PROPERTY, StageContext

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from lakefresh.config.strategies import SurrogateKeyConfig


# commits looked at first for the newest mark, past commits that carry no batch (a compaction):
# a batch's commit is normally the newest; the rest of the lineage only when these hold none
LOOK_BACK = 20


def largest_key(ctx: StageContext, config: SurrogateKeyConfig) -> int:
    """The largest `sequence` key issued so far (0 when none; 0 for `hash` keys, which need no
    start): the larger of the target's largest key and the lineage's high-water mark. Kept in
    `ctx.high_water`, which the batch's commit carries (or the table's property, on a runtime
    whose commits carry no property: the module's doc). Iceberg answers MAX from file statistics
    where it can (aggregate push-down), without reading data."""
    from pyspark.sql import functions as F

    if config.generator != "sequence" or not ctx.target_exists:
        return 0
    target = ctx.target()
    stored = 0
    if config.column in target.columns:
        stored = int(target.agg(F.max(F.col(quote(config.column)))).first()[0] or 0)  # type: ignore[index]
    # a table property of the same name: the mark on a runtime whose commits carry none, also
    # read on one that carries them (a warehouse that moved from the first to the second)
    kept = int(ctx.backend.properties(ctx.table).get(HIGH_WATER_PROPERTY) or 0)
    ctx.high_water = max(stored, kept)
    if ctx.backend.carries_commit_properties(ctx.table):
        ctx.high_water = max(ctx.high_water, high_water(ctx))
    elif ctx.high_water > kept:  # before the write: a delete in this batch may take the largest key
        ctx.backend.set_properties(ctx.table, {HIGH_WATER_PROPERTY: str(ctx.high_water)})
    return ctx.high_water


def high_water(ctx: StageContext) -> int:
    """The newest high-water mark in the target's lineage; 0 when the newest batch's commit
    carries none (made before marks, or on a runtime that drops commit properties)."""
    for limit in (LOOK_BACK, None):
        commits = ctx.backend.commits_after(ctx.table, None, limit)
        for commit in commits:
            found = commit.properties.get(HIGH_WATER_PROPERTY)
            if found is not None:
                return int(found)
            if commit.batch_id is not None:
                return 0
        if limit is not None and len(commits) < limit:
            return 0  # that was the whole lineage
    return 0


def with_surrogate_key(
    df: DataFrame,
    config: SurrogateKeyConfig,
    keys: list[str],
    existing: Column,
    needs: Column,
    start: int,
    also: tuple[str, ...] = (),
) -> DataFrame:
    """`df` with `config.column` set to `existing`, or where that is NULL and `needs` holds, to a
    new key from the generator. `also` are further identifying columns (scd2: valid_from)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if config.generator == "hash":
        new = F.xxhash64(*[F.col(quote(k)).cast("string") for k in keys], *[F.col(quote(c)) for c in also])
    else:
        wanted = (existing.isNull() & needs).cast("long")
        order = Window.orderBy(*[F.col(quote(c)) for c in [*keys, *also]]).rowsBetween(
            Window.unboundedPreceding, Window.currentRow
        )
        new = F.lit(start) + F.sum(wanted).over(order)
    return df.withColumn(config.column, F.coalesce(existing, F.when(needs, new)).cast("long"))


def skeleton_rows(
    ctx: StageContext, keys: list[str], sk: SurrogateKeyConfig | None, missing: DataFrame
) -> DataFrame:
    """A `key` dimension's target-shaped skeleton rows for natural keys (`keys`) the table lacks:
    `missing` holds the key columns and any default values. The hash and date are NULL, so the
    real record, whenever it comes, updates the row (status C) and keeps its surrogate key."""
    from pyspark.sql import functions as F

    from lakefresh.columns import BATCH_ID_COLUMN, HASH_COLUMN, UPDATED_AT_COLUMN

    assert sk is not None
    start = largest_key(ctx, sk)
    rows = with_surrogate_key(missing, sk, keys, F.lit(None), F.lit(True), start)
    return rows.select(
        *[F.col(quote(c)) for c in missing.columns if not c.startswith("_lf_")],
        F.col(quote(sk.column)),
        F.lit(True).alias(sk.inferred_column),
        F.lit(None).cast("binary").alias(HASH_COLUMN),
        F.lit(None).cast("timestamp").alias(UPDATED_AT_COLUMN),
        F.lit(None).cast("string").alias(BATCH_ID_COLUMN),
    )
