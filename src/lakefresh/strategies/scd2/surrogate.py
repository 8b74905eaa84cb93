"""Surrogate keys of `scd2` versions, which follow a version through re-cuts so that facts
holding one keep pointing at a live row."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakefresh.columns import STATUS_COLUMN
from lakefresh.lakehouse.sql import quote
from lakefresh.strategies.surrogate import largest_key, with_surrogate_key

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from lakefresh.config.strategies import Scd2StrategyConfig
    from lakefresh.strategies.base import StageContext


def follow_versions(
    cfg: Scd2StrategyConfig, ctx: StageContext, diff: DataFrame, stored: DataFrame | None
) -> DataFrame:
    """Surrogate keys follow versions, so facts that hold one keep pointing at a live row:

    - an updated version keeps its key;
    - a new version takes over the key of a vanished version that started inside it (a late
      event moved a version's start, or a skeleton row was inside it), or that started
      before the key's first version, if the new version is that first one (a skeleton for
      an early fact, replaced by the key's real history); of several, the earliest;
    - any other new version gets a new key.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    sk = cfg.surrogate_key
    assert sk is not None
    keys, vf, vt = list(cfg.keys), cfg.valid_from_column, cfg.valid_to_column
    status = F.col(STATUS_COLUMN)
    existing = F.col("_lf_their_sk")
    if stored is not None:
        first_from = F.min(F.when(F.col("_lf_mine"), F.col(quote(vf)))).over(
            Window.partitionBy(*[F.col(quote(k)) for k in keys])
        )
        diff = diff.withColumn("_lf_first_from", first_from)
        old = diff.filter((status == "D") & F.col("_lf_their_sk").isNotNull()).select(
            *[F.col(quote(k)) for k in keys],
            F.col(quote(vf)).alias("_lf_old_from"),
            F.col("_lf_their_sk").alias("_lf_old_sk"),
            F.col("_lf_first_from"),
        )
        renamed = [f"_lf_new_key{i}" for i in range(len(keys))]
        new = diff.filter(status == "I").select(
            *[F.col(quote(k)).alias(r) for k, r in zip(keys, renamed, strict=True)],
            F.col(quote(vf)).alias("_lf_new_from"),
            F.col(quote(vt)).alias("_lf_new_to"),
        )
        old_from, new_from, new_to = F.col("_lf_old_from"), F.col("_lf_new_from"), F.col("_lf_new_to")
        inside = (new_from <= old_from) & (new_to.isNull() | (old_from < new_to))
        before_first = (old_from < F.col("_lf_first_from")) & (new_from == F.col("_lf_first_from"))
        same_key = [F.col(quote(k)) == F.col(r) for k, r in zip(keys, renamed, strict=True)]
        claims = (
            old.join(new, on=[*same_key, inside | before_first])
            .groupBy(*[F.col(r).alias(k) for k, r in zip(keys, renamed, strict=True)], new_from.alias(vf))
            .agg(F.min_by(F.col("_lf_old_sk"), old_from).alias("_lf_claimed_sk"))
        )
        diff = diff.join(claims, on=[*keys, vf], how="left")
        existing = F.coalesce(existing, F.when(status == "I", F.col("_lf_claimed_sk")))
    start = largest_key(ctx, sk)
    diff = with_surrogate_key(diff, sk, keys, existing, status.isin("I", "U"), start, also=(vf,))
    return diff.withColumn(sk.inferred_column, F.lit(False))
