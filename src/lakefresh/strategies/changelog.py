"""What every change-log target shares (Open Data Fabric's RFC-015 shape, config/change_log.py):
the columns each event starts with, their codes and order, and each key's current state.

Every event row is `offset, op, system_time, event_time`, then the row's own columns, then
`_lf_batch_id` (and, for `key`'s upsert stream, `_lf_hash` and `_lf_updated_at`):

- `offset` continues the log: the first event of a batch is the log's largest offset + 1;
- `op` is `+A` (a key appears), `-R` (retracted, with the old values), `-C` then `+C` (corrected
  from the old values, to the new), as text or as ODF's numbers 0, 1, 2, 3;
- `system_time` is the batch's time (the same for all its events): re-running the same batches
  gives the same log, never the wall clock of a run;
- `event_time` is the row's event time column when one is configured (any orderable type), else
  the batch's time; a NULL in a timestamp or date column takes the batch's time on `+A` and `+C`
  (a NULL number cannot, and goes to quarantine), or, with `null_event_times: keep`, any NULL
  stays NULL. `-R`/`-C` carry the old row's (Open Data Fabric's rule; `snapshot`'s
  `event_time_rule: effective` gives them the time the change took effect: strategies/snapshot.py).

Inside a batch, keyed events are ordered by key, then `-R`, `-C`, `+C`, `+A`; a `ledger`'s appends
by event time, then by arrival (`log_order: arrival`: by arrival alone); an `append` log's by
arrival: file, then record.

A log's current state (`current_state`) is each key's latest event when that is `+A` or `+C`:
derived on demand from the log, so it can never disagree with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakefresh.columns import BATCH_ID_COLUMN, EVENT_TIME_COLUMN, PROVENANCE_COLUMNS, SYSTEM_PREFIX
from lakefresh.errors import SchemaError
from lakefresh.lakehouse.functions import try_to_timestamp, utc_timestamp
from lakefresh.lakehouse.sql import quote
from lakefresh.strategies.base import StageContext, is_temporal, ordering_problems
from lakefresh.strategies.ordering import first_row_first

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from lakefresh.config.change_log import ChangeLogColumns

OPS = ("-R", "-C", "+C", "+A")  # order of events of one key inside a batch
NUMERIC_OPS = {"+A": 0, "-R": 1, "-C": 2, "+C": 3}  # Open Data Fabric's operation types
OP = "_lf_op"  # an event's op as text, while it is built
EVENT_TIME = EVENT_TIME_COLUMN  # an event's time, while it is built


def state_columns(cfg: ChangeLogColumns, log_columns: list[str], event_time: str | None) -> list[str]:
    """The log's data columns: without the log's own columns or lakefresh's (the event time
    column stays when the data's own event time column carries its name)."""
    own = {c.lower() for c in cfg.log_columns()}
    if event_time and event_time == cfg.event_time_column:
        own.discard(event_time.lower())
    return [c for c in log_columns if c.lower() not in own and not c.startswith(SYSTEM_PREFIX)]


def live_ops(cfg: ChangeLogColumns) -> list[object]:
    return [NUMERIC_OPS["+A"], NUMERIC_OPS["+C"]] if cfg.op_codes == "numeric" else ["+A", "+C"]


def current_state(
    log: DataFrame,
    cfg: ChangeLogColumns,
    keys: list[str],
    event_time: str | None,
    system: bool = False,
) -> DataFrame:
    """The latest row of every key whose latest event is +A or +C, with its `op`, `offset`,
    `system_time` and `event_time` (the log's own columns, under their names). `system`: also
    lakefresh's columns (`_lf_hash`...), for a strategy that compares against the state. Without
    keys (an `append` log), every row is its own latest event."""
    from pyspark.sql import functions as F

    values = state_columns(cfg, log.columns, event_time)
    if system:
        values += [c for c in log.columns if c.startswith(SYSTEM_PREFIX) and c not in PROVENANCE_COLUMNS]
    own = [c for c in cfg.log_columns() if c not in values]
    if not keys:
        return log.select(*[F.col(quote(c)) for c in [*values, *own]])
    carried = [c for c in [*values, *own] if c not in keys]
    latest = log.groupBy(*[quote(k) for k in keys]).agg(
        F.max_by(F.struct(*[F.col(quote(c)) for c in carried]), F.col(quote(cfg.offset_column))).alias(
            "_lf_last"
        )
    )
    return latest.filter(F.col("_lf_last").getField(cfg.op_column).isin(*live_ops(cfg))).select(
        *[F.col(quote(k)) for k in keys], *[F.col("_lf_last").getField(c).alias(c) for c in carried]
    )


def check_names(cfg: ChangeLogColumns, columns: list[str], event_time: str | None) -> None:
    """A batch column may not carry the name of one of the log's own columns (the data's event
    time column may be the log's event time column)."""
    taken = {c.lower(): c for c in cfg.log_columns()}
    for column in columns:
        name = taken.get(column.lower())
        if name is None or (column == event_time and name == cfg.event_time_column):
            continue
        raise SchemaError(
            f"the batch has a column {column!r}, which the change log uses for its own {name!r} "
            "column; rename it in the log with the strategy's op_column, system_time_column, "
            "event_time_column or offset_column option"
        )


def event_time_value(batch: DataFrame, column: str) -> Column:
    """The time a row gives in its event time column: the column's value (text parsed as a
    timestamp), NULL when it gives none."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    value = F.col(quote(column))
    kind = batch.schema[column].dataType
    if isinstance(kind, T.NumericType) or is_temporal(kind):
        return value
    return try_to_timestamp(value)


def event_time_of(batch: DataFrame, cfg: ChangeLogColumns, batch_time: Column) -> Column:
    """An event's time: the `event_time` column's value (`event_time_value`), a NULL date or
    timestamp taking `batch_time` (a NULL number is quarantined: `event_time_problems`), or, with
    `null_event_times: keep`, any NULL staying NULL; without the column, `batch_time`."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    column = cfg.event_time
    if column is None:
        return batch_time
    value = event_time_value(batch, column)
    kind = batch.schema[column].dataType
    if cfg.null_event_times == "keep" or isinstance(kind, T.NumericType):
        return value
    return F.coalesce(value, batch_time.cast(kind if is_temporal(kind) else T.TimestampType()))


def event_time_problems(df: DataFrame, cfg: ChangeLogColumns) -> list[tuple[Column, str]]:
    """Event times that cannot order events: text that is not a time (it silently took the batch
    time), NaN or an infinity; and a NULL number, which cannot take the batch's time (unless
    `null_event_times: keep` stores it)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    column = cfg.event_time
    if column is None or column not in df.columns:
        return []
    problems = ordering_problems(df, column, "event time")
    if isinstance(df.schema[column].dataType, T.NumericType) and cfg.null_event_times != "keep":
        problems.append(
            (F.col(quote(column)).isNull(), f"event time column {column} is NULL (a number: no default)")
        )
    return problems


def next_offset(ctx: StageContext, cfg: ChangeLogColumns) -> int:
    """The offset the batch's first event takes: the log's largest + 1, or 0."""
    from pyspark.sql import functions as F

    if not ctx.target_exists:
        return 0
    largest = ctx.target().agg(F.max(F.col(quote(cfg.offset_column)))).first()[0]  # type: ignore[index]
    return 0 if largest is None else int(largest) + 1


def keyed_order(keys: list[str]) -> list[Column]:
    """Events of a batch by key, then -R, -C, +C, +A."""
    from pyspark.sql import functions as F

    rank = F.create_map(*[x for i, op in enumerate(OPS) for x in (F.lit(op), F.lit(i))])
    return [*[F.col(quote(k)) for k in keys], rank[F.col(OP)]]


def arrival_order(events: DataFrame) -> list[Column]:
    """Events of a batch in the order their rows arrived: by file, then record (then by contents,
    so rows without provenance take the same offsets on every run: ordering.py)."""
    return first_row_first(events, nulls_first=True)


def as_log(
    events: DataFrame,
    cfg: ChangeLogColumns,
    ctx: StageContext,
    order: list[Column],
    data: list[str],
    system: tuple[str, ...] = (),
) -> DataFrame:
    """Events (the `data` columns, `OP` and `EVENT_TIME`, and any `system` columns) as log rows:
    the log's own columns first, offsets from the log's next in `order`, the batch's id, and
    `OP` kept for counting (drop it before writing)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    op = F.col(OP)
    if cfg.op_codes == "numeric":
        codes = F.create_map(*[x for name, n in NUMERIC_OPS.items() for x in (F.lit(name), F.lit(n))])
        op = codes[op].cast("tinyint")
    start = next_offset(ctx, cfg) - 1
    return events.select(
        (F.lit(start) + F.row_number().over(Window.orderBy(*order))).cast("bigint").alias(cfg.offset_column),
        op.alias(cfg.op_column),
        utc_timestamp(ctx.batch_time).cast("timestamp").alias(cfg.system_time_column),
        F.col(EVENT_TIME).alias(cfg.event_time_column),
        *[F.col(quote(c)) for c in data if c.lower() != cfg.event_time_column.lower()],
        *[F.col(quote(c)) for c in system if c != BATCH_ID_COLUMN],
        F.lit(ctx.batch_id).alias(BATCH_ID_COLUMN),
        F.col(OP),
    )
