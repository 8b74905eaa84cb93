"""`key`'s deleting rows: tombstones (`soft_delete_column`), stored keys a full snapshot lacks
(R) and stored keys a truncate marker erases (E), each as a change-set row that deletes its key
(with the batch that wrote it, whose effective rows drop)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakefresh.columns import BATCH_ID_COLUMN, HASH_COLUMN, STATUS_COLUMN, UPDATED_AT_COLUMN
from lakefresh.lakehouse.functions import utc_timestamp
from lakefresh.lakehouse.sql import quote
from lakefresh.strategies.base import StageContext, absent_from_snapshot, spare
from lakefresh.strategies.truncate import Truncation, erased

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from lakefresh.config.strategies import KeyStrategyConfig

REMOVES = ("D", "R", "E")  # the codes whose rows delete their key


def tombstones(cfg: KeyStrategyConfig, joined: DataFrame, columns: list[str]) -> DataFrame:
    """With `soft_delete_column`: a deleting row (D, R, E, or T) becomes its key's tombstone, with
    NULL values and no hash (so any newer row changes it); other rows are live."""
    from pyspark.sql import functions as F

    soft = cfg.soft_delete_column
    assert soft is not None
    dead = F.col(STATUS_COLUMN).isin(*REMOVES, "T")
    values = [c for c in columns if c not in cfg.keys]
    out = joined.withColumn(soft, dead)
    for c in [*values, HASH_COLUMN]:
        out = out.withColumn(c, F.when(~dead, F.col(quote(c))))
    return out


def retired(
    cfg: KeyStrategyConfig, ctx: StageContext, batch: DataFrame, target: DataFrame, rows: DataFrame
) -> DataFrame:
    """With `full_snapshots`: the stored live keys the batch lacks, each as a row that deletes
    it (R), at the batch time (a numeric date: the batch's highest), with the batch that
    wrote it."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    skeleton, carry = _carried(cfg)
    live = _live(cfg, target)
    retired = absent_from_snapshot(
        target, batch, list(cfg.keys), live, skeleton, cfg.snapshot_scope, carry, ctx.quarantined
    )
    at = utc_timestamp(ctx.batch_time).cast("timestamp")
    if isinstance(rows.schema[UPDATED_AT_COLUMN].dataType, T.NumericType):
        at = F.lit(rows.agg(F.max(UPDATED_AT_COLUMN)).first()[0])  # type: ignore[index]
    return _deleting(cfg, ctx, retired, at, "R")


def _carried(cfg: KeyStrategyConfig) -> tuple[str | None, tuple[str, ...]]:
    """The skeleton flag, and the stored columns a deleting row carries."""
    sk = cfg.surrogate_key
    return (sk.inferred_column, (sk.column, BATCH_ID_COLUMN)) if sk else (None, (BATCH_ID_COLUMN,))


def _live(cfg: KeyStrategyConfig, target: DataFrame) -> Column:
    """Stored rows that are not tombstones."""
    from pyspark.sql import functions as F

    soft = cfg.soft_delete_column
    if soft and soft in target.columns:
        return ~F.coalesce(F.col(quote(soft)), F.lit(False))
    return F.lit(True)


def truncated(
    cfg: KeyStrategyConfig, ctx: StageContext, rows: DataFrame, truncation: Truncation
) -> DataFrame:
    """With `truncate`: the stored keys the batch's latest marker deletes (E), at its date."""
    from pyspark.sql import functions as F

    target = ctx.target()
    skeleton, carry = _carried(cfg)
    gone = erased(target, rows, list(cfg.keys), _live(cfg, target), skeleton, truncation.at, carry)
    gone = spare(gone, list(cfg.keys), ctx.quarantined)
    return _deleting(cfg, ctx, gone, F.lit(truncation.at), "E")


def _deleting(cfg: KeyStrategyConfig, ctx: StageContext, keys: DataFrame, at: Column, code: str) -> DataFrame:
    """Stored keys (with the batch that wrote each) as change-set rows that delete them."""
    from pyspark.sql import functions as F

    out = keys.withColumnRenamed(BATCH_ID_COLUMN, "_lf_t_batch").select(
        "*",
        at.alias(UPDATED_AT_COLUMN),
        F.lit(ctx.batch_id).alias(BATCH_ID_COLUMN),
        F.lit(code).alias(STATUS_COLUMN),
    )
    if cfg.soft_delete_column:
        out = out.withColumn(cfg.soft_delete_column, F.lit(True))
    return out
