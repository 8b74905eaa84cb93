"""What the range strategies (`timestamp`, `sequence`) share: each batch replaces the target's
rows inside its own [min, max] range of a column, inclusive, and adds the rest.

Target rows inside the range that are absent from the batch are deleted; rows outside it are
untouched. Delete and append are one commit (see `TableBackend.delete_and_append`): the range
condition is pushed into the target scan, so only files whose column statistics overlap the range
are read and rewritten. Status codes: N rows appended, D target rows the range replaced. An empty
batch owns no range and changes nothing.

A batch's *effective range* is the part of its range no later batch has replaced (see
`lakefresh.ranges`); its effective record count, the rows it wrote that are still in the target.
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from lakefresh.columns import BATCH_ID_COLUMN
from lakefresh.config.strategies import SequenceStrategyConfig, TimestampStrategyConfig
from lakefresh.lakehouse.sql import quote, sql_literal
from lakefresh.strategies.base import (
    ChangeSet,
    StageContext,
    count_by,
    data_columns,
    materialize,
    require_columns,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


def range_text(value: Any) -> str:
    """A range bound as stored in `lakefresh.batches`: text that sorts like the value for
    timestamps (fixed-width ISO with microseconds), and a plain decimal for numbers."""
    if isinstance(value, datetime):
        return value.isoformat(sep=" ", timespec="microseconds")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, float):
        return repr(value)
    return str(value)


def range_literal(value: Any) -> str:
    if isinstance(value, datetime):
        return f"TIMESTAMP {sql_literal(range_text(value))}"
    if isinstance(value, date):
        return f"DATE {sql_literal(range_text(value))}"
    if isinstance(value, Decimal):
        return f"{value}BD"
    if isinstance(value, float):
        return f"CAST({sql_literal(repr(value))} AS DOUBLE)"
    return str(int(value))


class RangeReplace:
    """Base of the range strategies; subclasses type the column."""

    kind: str
    range_type: str | None
    config: TimestampStrategyConfig | SequenceStrategyConfig

    def unique_keys(self) -> list[str]:
        return []

    def value(self, df: DataFrame) -> Column:
        """The range column, typed."""
        raise NotImplementedError

    def row_problems(self, df: DataFrame) -> list[tuple[Column, str]]:
        from pyspark.sql import functions as F

        column = self.config.column
        if column not in df.columns:
            return []
        return [(F.col(quote(column)).isNull(), f"{self.kind} column {column} is NULL")]

    def stage(self, ctx: StageContext, batch: DataFrame) -> ChangeSet:
        from pyspark.sql import functions as F

        column = self.config.column
        require_columns(batch, [column], f"{self.kind} column")
        typed = self.value(batch)
        rows = materialize(
            batch.select(
                *[(typed.alias(c) if c == column else F.col(quote(c))) for c in data_columns(batch)],
                F.lit(ctx.batch_id).alias(BATCH_ID_COLUMN),
            )
        )
        low, high, count = rows.agg(F.min(quote(column)), F.max(quote(column)), F.count(F.lit(1))).first()  # type: ignore[misc]
        if not count:
            return ChangeSet(rows=rows, counts={"N": 0, "D": 0}, expected_delta=0, superseded={})
        condition = f"this.{quote(column)} BETWEEN {range_literal(low)} AND {range_literal(high)}"
        owners = (
            count_by(
                ctx.target().filter(F.col(quote(column)).between(F.lit(low), F.lit(high))), BATCH_ID_COLUMN
            )
            if ctx.target_exists
            else {}
        )
        replaced = sum(owners.values())
        return ChangeSet(
            rows=rows,
            counts={"N": int(count), "D": replaced},
            record_count=int(count),
            expected_delta=int(count) - replaced,
            written=int(count),
            range=(range_text(low), range_text(high)),
            superseded=owners,
            delete_when=condition,
        )

    def write(self, ctx: StageContext, change: ChangeSet) -> None:
        ctx.backend.delete_and_append(
            ctx.table, change.rows, change.delete_when, None, change.counts.get("D", 0)
        )
