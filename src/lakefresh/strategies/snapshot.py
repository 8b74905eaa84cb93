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
`event_time` (the row's `event_time` column when configured, a NULL taking the batch's time, else
the batch's time, e.g. the file's or folder's modification time; a -C carries the new row's time,
when the correction took effect; a retraction has no row: it carries the snapshot's latest
event time, or the batch's time without an `event_time` column) and `offset` (its
position in the log: 0, 1, 2, ... in the order key, then -R, -C, +C, +A). The log's shape is
shared with the other change logs (strategies/changelog.py). An identical snapshot
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

from lakefresh.config.strategies import SnapshotStrategyConfig
from lakefresh.lakehouse.functions import utc_timestamp
from lakefresh.lakehouse.sql import quote
from lakefresh.strategies.base import (
    ChangeSet,
    StageContext,
    count_by,
    data_columns,
    hashdiff,
    null_key_problems,
    require_columns,
    spare,
)
from lakefresh.strategies.changelog import (
    EVENT_TIME,
    OP,
    as_log,
    check_names,
    current_state,
    event_time_of,
    event_time_problems,
    keyed_order,
    state_columns,
)
from lakefresh.strategies.materialize import materialize
from lakefresh.strategies.ordering import last_row_first

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


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
        return [
            *null_key_problems(df, self.config.keys),
            *event_time_problems(df, self.config.event_time),
        ]

    def stage(self, ctx: StageContext, batch: DataFrame) -> ChangeSet:
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        cfg = self.config
        keys = list(cfg.keys)
        require_columns(batch, keys, "key column(s)")
        columns = data_columns(batch)
        check_names(cfg, columns, cfg.event_time)
        batch_time = utc_timestamp(ctx.batch_time).cast("timestamp")
        if cfg.event_time:
            require_columns(batch, [cfg.event_time], "event_time")
        event_time = event_time_of(batch, cfg.event_time, batch_time)
        retracted_at = batch_time
        if cfg.event_time:
            # a retraction has no row: it happened as of the snapshot, i.e. its latest event time
            # as text in the session's zone and back: a collected datetime would come back
            # through the machine's zone (a timestamp_ntz moved by its offset)
            kind = batch.select(event_time).schema[0].dataType
            latest = batch.agg(F.max(event_time).cast("string")).first()[0]  # type: ignore[index]
            if latest is not None:
                retracted_at = F.lit(latest).cast(kind)

        latest_first = Window.partitionBy(*[quote(k) for k in keys]).orderBy(
            *last_row_first(batch, event_time.desc())
        )
        values = [c for c in columns if c not in keys and c != cfg.event_time]
        if cfg.compare_columns is not None:
            values = [c for c in values if c in cfg.compare_columns]
        snapshot = (
            batch.withColumn("_lf_rank", F.row_number().over(latest_first))
            .filter(F.col("_lf_rank") == 1)
            .select(
                *[F.col(quote(c)) for c in columns],
                hashdiff(values, batch.schema).alias("_lf_n_hash"),
                event_time.alias("_lf_n_time"),
                F.lit(True).alias("_lf_n"),
            )
        )
        if ctx.target_exists:
            log = ctx.target()
            before = [c for c in state_columns(cfg, log.columns, cfg.event_time) if c not in keys]
            compared = [c for c in before if c != cfg.event_time]
            if cfg.compare_columns is not None:
                compared = [c for c in compared if c in cfg.compare_columns]
            previous = current_state(log, cfg, keys, cfg.event_time).select(
                *[F.col(quote(k)) for k in keys],
                *[F.col(quote(c)).alias(f"_lf_p_{c}") for c in before],
                hashdiff(compared, log.schema).alias("_lf_p_hash"),
                F.lit(True).alias("_lf_p"),
            )
            joined = snapshot.join(previous, on=keys, how="full_outer")
        else:
            before = []
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
        if ctx.quarantined is not None:  # a record in quarantine is in the snapshot: not retracted
            retracted = joined.filter(F.col("_lf_kind") == "R")
            kept = spare(retracted.select(*[quote(k) for k in keys]), keys, ctx.quarantined)
            joined = joined.filter(F.col("_lf_kind") != "R").unionByName(
                retracted.join(kept, on=keys, how="left_semi")
            )
        new_side = joined.filter(F.col("_lf_kind").isin("A", "C")).select(
            *[F.col(quote(c)) for c in columns],
            F.when(F.col("_lf_kind") == "A", F.lit("+A")).otherwise(F.lit("+C")).alias(OP),
            F.col("_lf_n_time").alias(EVENT_TIME),
        )
        old_side = joined.filter(F.col("_lf_kind").isin("R", "C")).select(
            *[F.col(quote(k)) for k in keys],
            *[F.col(quote(f"_lf_p_{c}")).alias(c) for c in before],
            F.when(F.col("_lf_kind") == "R", F.lit("-R")).otherwise(F.lit("-C")).alias(OP),
            F.when(F.col("_lf_kind") == "R", retracted_at).otherwise(F.col("_lf_n_time")).alias(EVENT_TIME),
        )
        events = new_side.unionByName(old_side, allowMissingColumns=True)
        data = [c for c in events.columns if not c.startswith("_lf_")]
        rows = materialize(as_log(events, cfg, ctx, keyed_order(keys), data))
        counts = count_by(rows, OP)
        rows = rows.drop(OP)
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

    def write(self, ctx: StageContext, change: ChangeSet) -> None:
        ctx.backend.append(ctx.table, change.rows)
