"""Strategy `snapshot` (Open Data Fabric's snapshot merge): change data capture between snapshots.

Each batch is a full snapshot of the source. It is compared, by primary key, with the state the
previous snapshots left, and the differences are appended to the target, which is an event log:

| op   | meaning                                   | values carried |
| ---- | ----------------------------------------- | -------------- |
| `+A` | a key that is not in the state appears    | the new row    |
| `-R` | a key of the state is missing: retracted  | the old row    |
| `-C` | a key's row changed: correct from ...     | the old row    |
| `+C` | ... correct to                            | the new row    |

Every event has `system_time` (the batch's time, the same for all its events, so re-running the
same batches gives the same log; never the wall clock of the run),
`event_time` (the row's `event_time` column when configured, else the batch's time, e.g. the
file's or folder's modification time; a retraction has no row: it carries the snapshot's latest
event time, or the batch's time without an `event_time` column) and `offset` (its
position in the log: 0, 1, 2, ... in the order key, then -R, -C, +C, +A). An identical snapshot
appends nothing (its commit is empty, so it is still applied exactly once).

The comparison runs over the union of the state's and the snapshot's columns, a missing column
counting as NULL: a column that disappears from the source makes its non-NULL rows change, and a
new column is added to the log. The `event_time` column says when, not what: it is not compared,
so a snapshot whose only difference is its date appends nothing. Several rows with one key in a
snapshot: the latest by event time,
then the last by file and record; the others count as `duplicates`.

The current state (the latest row of every live key) is `current_state(log)`, exposed as
`Pipeline.current(table)`: it is derived from the log on demand, so it can never disagree with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from lakefresh.columns import BATCH_ID_COLUMN, SYSTEM_PREFIX
from lakefresh.config.strategies import SnapshotStrategyConfig
from lakefresh.errors import SchemaError
from lakefresh.lakehouse.functions import try_to_timestamp
from lakefresh.lakehouse.sql import quote
from lakefresh.strategies.base import (
    ChangeSet,
    StageContext,
    count_by,
    data_columns,
    hashdiff,
    is_temporal,
    last_row_first,
    materialize,
    null_key_problems,
    require_columns,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

OPS = ("-R", "-C", "+C", "+A")  # order of events of one key inside a batch
NUMERIC_OPS = {"+A": 0, "-R": 1, "-C": 2, "+C": 3}  # Open Data Fabric's operation types


def system_columns(cfg: SnapshotStrategyConfig) -> list[str]:
    return [cfg.offset_column, cfg.op_column, cfg.system_time_column, cfg.event_time_column]


def state_columns(cfg: SnapshotStrategyConfig, log_columns: list[str]) -> list[str]:
    """The log's data columns: without lakefresh's columns (the event time column stays when the
    data's own event time column carries its name)."""
    system = {c.lower() for c in system_columns(cfg)}
    if cfg.event_time and cfg.event_time == cfg.event_time_column:
        system.discard(cfg.event_time_column.lower())
    return [c for c in log_columns if c.lower() not in system and not c.startswith(SYSTEM_PREFIX)]


def current_state(log: DataFrame, cfg: SnapshotStrategyConfig) -> DataFrame:
    """The latest row of every key whose latest event is +A or +C."""
    from pyspark.sql import functions as F

    keys = list(cfg.keys)
    values = [c for c in state_columns(cfg, log.columns) if c not in keys]
    latest = log.groupBy(*[quote(k) for k in keys]).agg(
        F.max_by(
            F.struct(F.col(quote(cfg.op_column)).alias("_lf_op"), *[F.col(quote(c)) for c in values]),
            F.col(quote(cfg.offset_column)),
        ).alias("_lf_last")
    )
    live = [NUMERIC_OPS["+A"], NUMERIC_OPS["+C"]] if cfg.op_codes == "numeric" else ["+A", "+C"]
    return latest.filter(F.col("_lf_last._lf_op").isin(*live)).select(
        *[F.col(quote(k)) for k in keys], *[F.col("_lf_last").getField(c).alias(c) for c in values]
    )


class SnapshotStrategy:
    kind = "snapshot"
    config_type = SnapshotStrategyConfig
    status_codes: ClassVar[dict[str, str]] = {
        "+A": "appeared",
        "-R": "retracted",
        "-C": "corrected from",
        "+C": "corrected to",
    }
    range_type = None

    def __init__(self, config: SnapshotStrategyConfig) -> None:
        self.config = config

    def unique_keys(self) -> list[str]:
        return []  # the log holds many events per key

    def row_problems(self, df: DataFrame) -> list[tuple[Column, str]]:
        return null_key_problems(df, self.config.keys, self.config.event_time, "event time")

    def stage(self, ctx: StageContext, batch: DataFrame) -> ChangeSet:
        from pyspark.sql import Window
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        cfg = self.config
        keys = list(cfg.keys)
        require_columns(batch, keys, "key column(s)")
        columns = data_columns(batch)
        self._check_names(columns)
        if cfg.event_time:
            require_columns(batch, [cfg.event_time], "event_time")
            event_time = F.col(quote(cfg.event_time))
            kind = batch.schema[cfg.event_time].dataType
            if not (is_temporal(kind) or isinstance(kind, T.NumericType)):  # text: parsed
                event_time = try_to_timestamp(event_time)
        else:
            event_time = F.lit(ctx.batch_time).cast("timestamp")
        batch_time = F.lit(ctx.batch_time).cast("timestamp")
        system_time = batch_time
        if cfg.event_time:
            # a retraction has no row: it happened as of the snapshot, i.e. its latest event time
            latest = batch.agg(F.max(event_time)).first()[0]  # type: ignore[index]
            if latest is not None:
                batch_time = F.lit(latest)

        latest_first = Window.partitionBy(*[quote(k) for k in keys]).orderBy(
            *last_row_first(event_time.desc())
        )
        values = [c for c in columns if c not in keys and c != cfg.event_time]
        if cfg.compare_columns is not None:
            values = [c for c in values if c in cfg.compare_columns]
        snapshot = (
            batch.withColumn("_lf_rank", F.row_number().over(latest_first))
            .filter(F.col("_lf_rank") == 1)
            .select(
                *[F.col(quote(c)) for c in columns],
                hashdiff(values).alias("_lf_n_hash"),
                event_time.alias("_lf_n_time"),
                F.lit(True).alias("_lf_n"),
            )
        )
        if ctx.target_exists:
            log = ctx.target()
            state = current_state(log, cfg)
            before = [c for c in state.columns if c not in keys]
            compared = [c for c in before if c != cfg.event_time]
            if cfg.compare_columns is not None:
                compared = [c for c in compared if c in cfg.compare_columns]
            base_offset = log.agg(F.max(F.col(quote(cfg.offset_column)))).first()[0]  # type: ignore[index]
            previous = state.select(
                *[F.col(quote(k)) for k in keys],
                *[F.col(quote(c)).alias(f"_lf_p_{c}") for c in before],
                hashdiff(compared).alias("_lf_p_hash"),
                F.lit(True).alias("_lf_p"),
            )
            joined = snapshot.join(previous, on=keys, how="full_outer")
        else:
            before, base_offset = [], None
            joined = snapshot.withColumn("_lf_p", F.lit(None).cast("boolean")).withColumn(
                "_lf_p_hash", F.lit(None).cast("binary")
            )
        is_new, was = F.col("_lf_n").isNotNull(), F.col("_lf_p").isNotNull()
        changed = is_new & was & (F.col("_lf_n_hash") != F.col("_lf_p_hash"))
        appeared = is_new & ~was
        joined = materialize(
            joined.withColumn(
                "_lf_kind",
                F.when(appeared, F.lit("A"))
                .when(was & ~is_new, F.lit("R"))
                .when(changed, F.lit("C"))
                .otherwise(F.lit(None)),
            ).filter(F.col("_lf_kind").isNotNull())
        )
        new_side = joined.filter(F.col("_lf_kind").isin("A", "C")).select(
            *[F.col(quote(c)) for c in columns],
            F.when(F.col("_lf_kind") == "A", F.lit("+A")).otherwise(F.lit("+C")).alias("_lf_op"),
            F.col("_lf_n_time").alias("_lf_event_time"),
        )
        old_side = joined.filter(F.col("_lf_kind").isin("R", "C")).select(
            *[F.col(quote(k)) for k in keys],
            *[F.col(quote(f"_lf_p_{c}")).alias(c) for c in before],
            F.when(F.col("_lf_kind") == "R", F.lit("-R")).otherwise(F.lit("-C")).alias("_lf_op"),
            F.when(F.col("_lf_kind") == "R", batch_time)
            .otherwise(F.col("_lf_n_time"))
            .alias("_lf_event_time"),
        )
        events = new_side.unionByName(old_side, allowMissingColumns=True)
        rank = F.create_map(*[x for i, op in enumerate(OPS) for x in (F.lit(op), F.lit(i))])
        in_log_order = Window.orderBy(*[F.col(quote(k)) for k in keys], rank[F.col("_lf_op")])
        start = -1 if base_offset is None else int(base_offset)
        data = [c for c in events.columns if not c.startswith(SYSTEM_PREFIX)]
        op = F.col("_lf_op")
        if cfg.op_codes == "numeric":
            codes = F.create_map(*[x for name, n in NUMERIC_OPS.items() for x in (F.lit(name), F.lit(n))])
            op = codes[op].cast("tinyint")
        rows = materialize(
            events.select(
                (F.lit(start) + F.row_number().over(in_log_order)).cast("bigint").alias(cfg.offset_column),
                op.alias(cfg.op_column),
                system_time.alias(cfg.system_time_column),
                F.col("_lf_event_time").alias(cfg.event_time_column),
                *[F.col(quote(c)) for c in data if c.lower() != cfg.event_time_column.lower()],
                F.lit(ctx.batch_id).alias(BATCH_ID_COLUMN),
                F.col("_lf_op"),
            )
        )
        counts = count_by(rows, "_lf_op")
        rows = rows.drop("_lf_op")
        total = ctx.rows_of(batch)
        written = sum(counts.values())
        return ChangeSet(
            rows=rows,
            counts=counts,
            record_count=total,
            duplicates=total - snapshot.count(),
            expected_delta=written,
            written=written,
            superseded={},
        )

    def _check_names(self, columns: list[str]) -> None:
        cfg = self.config
        taken = {c.lower(): c for c in system_columns(cfg)}
        for column in columns:
            name = taken.get(column.lower())
            if name is None or (column == cfg.event_time and name == cfg.event_time_column):
                continue
            raise SchemaError(
                f"the snapshot has a column {column!r}, which the event log uses for its own "
                f"{name!r} column; rename it in the log with the strategy's op_column, "
                "system_time_column, event_time_column or offset_column option"
            )

    def write(self, ctx: StageContext, change: ChangeSet) -> None:
        ctx.backend.append(ctx.table, change.rows)
