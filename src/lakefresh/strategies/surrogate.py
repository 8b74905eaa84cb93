"""Surrogate keys, for the strategies that can be dimensions (`key`/`scd1`, `scd2`).

Both generators are deterministic functions of the staged data, so a retried batch or a
re-executed Spark task produces the same keys (uuid() or monotonically_increasing_id() would not):

- `hash`: xxhash64 of the natural key columns, each cast to text first (so widening a key from
  int to bigint keeps every key), and with scd2 of `valid_from` (one key per version). The same in
  every run and every rebuild. 64 bits: a collision is possible but negligible below ~10^8 keys
  (the unique-keys audit catches one).
- `sequence`: the largest key in the table plus 1, 2, ... over the rows that need one, in natural
  key order (then `valid_from`). Never reused while the row lives; a batch staged again after a
  conflict numbers from the new maximum, which is the same unless another writer committed.

A row that has a key keeps it: updates carry the stored key, and a table that gains a
`surrogate_key` fills it as rows are next written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakefresh.lakehouse.sql import quote
from lakefresh.strategies.base import StageContext

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from lakefresh.config.strategies import SurrogateKeyConfig


def largest_key(ctx: StageContext, column: str) -> int:
    """The largest surrogate key in the target (0 when there is none). Iceberg answers MAX from
    file statistics where it can (aggregate push-down), without reading data."""
    from pyspark.sql import functions as F

    if not ctx.target_exists:
        return 0
    target = ctx.target()
    if column not in target.columns:
        return 0
    value = target.agg(F.max(F.col(quote(column)))).first()[0]  # type: ignore[index]
    return int(value or 0)


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
