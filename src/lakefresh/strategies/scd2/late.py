"""`scd2`'s late rows (`late_rows: ignore | error`): the batch's rows at or before their key's
latest stored event, left out or refused; and a key that returns after a delete, which is no
late row."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakefresh.lakehouse.sql import quote
from lakefresh.strategies.base import StageContext
from lakefresh.strategies.materialize import materialize_counting
from lakefresh.strategies.scd2.events import DEL, SEEN, SEQ, SRC

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import DataType

    from lakefresh.config.strategies import Scd2StrategyConfig


def without_late_rows(
    cfg: Scd2StrategyConfig, ctx: StageContext, new: DataFrame, stored: DataFrame
) -> tuple[DataFrame, int]:
    """With `late_rows: ignore | error`: the batch's events without the rows at or before
    their key's latest stored event, and how many those were; `error` refuses the batch.
    A row of a key whose history ends in a delete is no late row: the key returns, and its
    version never starts before the previous one ended (SQLMesh: valid_from = max(updated_at,
    the deleted version's valid_to)); it starts just after (1 microsecond, a day for a date
    sequence, 1 for an integer one), so the deletion stays in the history. Likewise a full
    snapshot's absence at or before its key's latest stored event (a version that starts after
    the batch time) is no late row: it closes the version just after that event, so an absence
    never vanishes and intervals never overlap (dbt closes at the run's time even before
    valid_from)."""
    from pyspark.sql import functions as F

    from lakefresh.errors import BatchRefused

    keys = list(cfg.keys)
    live = F.col(quote(cfg.is_current_column))
    if cfg.soft_delete_column and cfg.soft_delete_column in stored.columns:  # a deletion record
        live = live & ~F.coalesce(F.col(quote(cfg.soft_delete_column)), F.lit(False))
    latest = stored.groupBy(*[quote(k) for k in keys]).agg(
        F.max(F.array_max(F.col(f"{SEEN}.seq"))).alias("_lf_latest"),
        F.max(live.cast("int")).alias("_lf_open"),
    )
    not_after = F.coalesce(F.col(SEQ) <= F.col("_lf_latest"), F.lit(False))
    at_or_before = (F.col(SRC) == 1) & not_after
    after_end = _just_after(F.col("_lf_latest"), new.schema[SEQ].dataType)
    movable = F.lit(after_end is not None)
    returning = at_or_before & ~F.col(DEL) & (F.col("_lf_open") == 0) & movable
    # a full snapshot's absence is never late: it closes the version just after its latest event
    retiring = (F.col(SRC) == 2) & not_after & movable
    flagged = (
        new.join(latest, on=keys, how="left")
        .withColumn("_lf_late", at_or_before & ~returning)
        .withColumn(SEQ, F.when(returning | retiring, after_end).otherwise(F.col(SEQ)))
        .drop("_lf_open")
    )
    flagged, found = materialize_counting(flagged, {"late": F.col("_lf_late")})
    late = flagged.filter(F.col("_lf_late"))
    count = found["late"]
    if count and cfg.late_rows == "error":
        shown = ", ".join(str(tuple(r[k] for k in keys)) for r in late.limit(3).collect())
        raise BatchRefused(
            f"{count} row(s) at or before their key's latest stored event (keys {shown}) and "
            f"{ctx.table} refuses them (late_rows: error): nothing was written. Skip the batch "
            f"for good with --skip-batch {ctx.batch_id}, or set late_rows: apply or ignore"
        )
    return flagged.filter(~F.col("_lf_late")).drop("_lf_latest", "_lf_late"), count


def _just_after(point: Column, kind: DataType) -> Column | None:
    """The next value after a sequence point: a microsecond, a day, or 1 later; None for a
    fractional sequence."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if isinstance(kind, T.TimestampType | T.TimestampNTZType):
        return point + F.expr("INTERVAL 1 MICROSECOND")
    if isinstance(kind, T.DateType):
        return F.date_add(point, 1)
    if isinstance(kind, T.IntegralType):
        return point + F.lit(1)
    return None
