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
    ordering_problems,
    require_columns,
)
from lakefresh.strategies.materialize import materialize

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


def collect_bounds(df: DataFrame, low: str, high: str) -> tuple[Any, Any, int]:
    """Two aggregates (SQL) of `df` and its row count, in one job. A time comes back as the
    wall-clock time Spark's session zone shows, not through Python's local zone as a collected
    timestamp does: `range_literal` writes it back as a literal that the session reads in its zone,
    so that on a machine whose zone is not the session's (UTC) the range does not move."""
    from pyspark.sql import types as T

    found = df.selectExpr(f"{low} AS low", f"{high} AS high", "count(1) AS n")
    timed = {
        f.name for f in found.schema.fields if isinstance(f.dataType, T.TimestampType | T.TimestampNTZType)
    }
    pattern = sql_literal("yyyy-MM-dd HH:mm:ss.SSSSSS")
    row = found.selectExpr(
        *[f"date_format({c}, {pattern}) AS {c}" if c in timed else c for c in ("low", "high")], "n"
    ).first()
    assert row is not None
    values = [
        datetime.fromisoformat(row[c]) if c in timed and row[c] is not None else row[c]
        for c in ("low", "high")
    ]
    return values[0], values[1], int(row["n"])


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
        null = [(F.col(quote(column)).isNull(), f"{self.kind} column {column} is NULL")]
        return null + ordering_problems(df, column, self.kind, text="")  # NaN would bound no range

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
        outside = 0
        if self.config.range is not None:
            low, high = explicit_range(self.config, ctx.batch_id, batch, rows.schema[column].dataType)
            if low is None and ctx.rows_of(batch):  # its rows would land beside what they replace
                from lakefresh.errors import BatchRefused

                raise BatchRefused(
                    f"batch {ctx.batch_id!r}: its range columns are NULL on every row, so it names "
                    "no range to replace; fix the file and run again, or skip it (--skip-batch)"
                )
            rows, count, outside = self._inside(ctx, rows, low, high)
            if low is None:
                return ChangeSet(rows=rows, counts={"N": 0, "D": 0}, expected_delta=0, superseded={})
        else:
            low, high, count = collect_bounds(rows, f"min({quote(column)})", f"max({quote(column)})")
            if not count:
                return ChangeSet(rows=rows, counts={"N": 0, "D": 0}, expected_delta=0, superseded={})
        condition = f"this.{quote(column)} BETWEEN {range_literal(low)} AND {range_literal(high)}"
        owners = (
            count_by(
                ctx.target().filter(
                    f"{quote(column)} BETWEEN {range_literal(low)} AND {range_literal(high)}"
                ),
                BATCH_ID_COLUMN,
            )
            if ctx.target_exists
            else {}
        )
        replaced = sum(owners.values())
        return ChangeSet(
            rows=rows,
            counts={"N": int(count), "D": replaced, **({"W": outside} if outside else {})},
            record_count=int(count) + outside,
            expected_delta=int(count) - replaced,
            written=int(count),
            range=(range_text(low), range_text(high)),
            superseded=owners,
            delete_when=condition,
        )

    def _inside(self, ctx: StageContext, rows: DataFrame, low: Any, high: Any) -> tuple[DataFrame, int, int]:
        """The rows to append given an explicit range: every row (`outside: keep`), or those in
        it (`drop`); `error` refuses a batch with any row outside. Returns the rows, how many are
        appended and how many were left out."""
        from pyspark.sql import functions as F

        from lakefresh.errors import BatchRefused

        assert self.config.range is not None
        column = self.config.column
        if low is None:
            return rows, 0, 0
        inside = F.expr(f"{quote(column)} BETWEEN {range_literal(low)} AND {range_literal(high)}")
        total, out = rows.agg(F.count(F.lit(1)), F.count(F.when(~inside, 1))).first()  # type: ignore[misc]
        policy = self.config.range.outside
        if out and policy == "error":
            raise BatchRefused(
                f"{out} row(s) of batch {ctx.batch_id} lie outside its range [{range_text(low)}, "
                f"{range_text(high)}] of {column} and {ctx.table} refuses them (range.outside: "
                f"error): nothing was written. Fix the batch, or skip it for good with "
                f"--skip-batch {ctx.batch_id}"
            )
        if out and policy == "drop":
            return materialize(rows.filter(inside)), int(total) - int(out), int(out)
        return rows, int(total), 0

    def write(self, ctx: StageContext, change: ChangeSet) -> None:
        ctx.backend.delete_and_append(
            ctx.table, change.rows, change.delete_when, None, change.counts.get("D", 0)
        )


def explicit_range(
    config: TimestampStrategyConfig | SequenceStrategyConfig, batch_id: str, batch: DataFrame, kind: Any
) -> tuple[Any, Any]:
    """The batch's [start, end] from its name (`range.pattern`) or its columns, in the range
    column's type; (None, None) when the columns give none (an empty batch). A date-only end of a
    timestamp range covers its whole day."""
    import re

    from lakefresh.errors import SchemaError

    spec = config.range
    assert spec is not None
    if spec.pattern is not None:
        found = re.search(spec.pattern, batch_id)
        if found is None:
            raise SchemaError(f"batch {batch_id!r} does not match range.pattern {spec.pattern!r}")
        start, end = found.group("start"), found.group("end")
    else:
        assert spec.start_column and spec.end_column
        start, end, _ = collect_bounds(
            batch, f"min({quote(spec.start_column)})", f"max({quote(spec.end_column)})"
        )
        if start is None or end is None:
            return None, None
    low, high = _bound(start, kind, False), _bound(end, kind, True)
    if low > high:
        raise SchemaError(f"batch {batch_id!r}: its range starts at {start} after it ends at {end}")
    return low, high


def _bound(value: Any, kind: Any, end: bool) -> Any:
    """A range bound as the range column's type: a date-only end of a timestamp range is the
    last microsecond of its day."""
    from datetime import timedelta

    from pyspark.sql import types as T

    from lakefresh.errors import SchemaError

    try:
        if isinstance(kind, T.TimestampType | T.TimestampNTZType):
            if isinstance(value, datetime):
                return value
            day_only = isinstance(value, date) or (isinstance(value, str) and len(value.strip()) == 10)
            moment = datetime.fromisoformat(
                value.isoformat() if isinstance(value, date) else str(value).strip()
            )
            return moment + timedelta(days=1, microseconds=-1) if end and day_only else moment
        if isinstance(kind, T.DateType):
            return value if isinstance(value, date) else date.fromisoformat(str(value).strip()[:10])
        if isinstance(kind, T.IntegralType):
            return int(value)
        return Decimal(str(value))
    except (TypeError, ValueError) as exc:
        raise SchemaError(f"range bound {value!r} is not a {kind.simpleString()}: {exc}") from None
