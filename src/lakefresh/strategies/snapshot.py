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
same batches gives the same log; never the wall clock of the run), `event_time` and `offset` (its
position in the log: 0, 1, 2, ... in the order key, then -R, -C, +C, +A). `+A` and `+C` carry
the new row's event time: the row's `event_time` column when configured (a NULL taking the
batch's time, or staying NULL with `null_event_times: keep`), else the batch's time, e.g. the
file's or folder's modification time. The log's shape is shared with the other change logs
(strategies/changelog.py). An identical snapshot appends nothing (its commit is empty, so it is
still applied exactly once).

`event_time_rule` says what the event time is. `odf` (the default, Open Data Fabric's and kamu's
rule): it belongs to the row. `-C` and `-R` repeat the old row, its event time included, and a
snapshot whose only difference for a key is its event time appends `-C` then `+C` (a NULL event
time in the snapshot gives none: no change; with `compare_columns`, the event time counts only
when listed there). `effective`: it says when a change took effect, not what changed. `-C`
carries the new row's event time, `-R` the snapshot's latest (a retraction has no row; the
batch's time without an `event_time` column), and a change of the event time alone appends
nothing.

The comparison runs over the union of the state's and the snapshot's columns, a missing column
counting as NULL: a column that disappears from the source makes its non-NULL rows change, and a
new column is added to the log. Several rows with one key in a snapshot: the latest by event
time, then the last by file and record; the others count as `duplicates`.

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
    event_time_value,
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
        return [*null_key_problems(df, self.config.keys), *event_time_problems(df, self.config)]

    def stage(self, ctx: StageContext, batch: DataFrame) -> ChangeSet:
        """The snapshot's latest row of each key (`_latest_rows`), joined with the log's current
        state (`_against_state`), each key's difference told (`_differences`), then written as
        events (`_events`)."""
        cfg = self.config
        keys = list(cfg.keys)
        require_columns(batch, keys, "key column(s)")
        columns = data_columns(batch)
        check_names(cfg, columns, cfg.event_time)
        if cfg.event_time:
            require_columns(batch, [cfg.event_time], "event_time")
        batch_time = utc_timestamp(ctx.batch_time).cast("timestamp")
        snapshot = self._latest_rows(batch, columns, batch_time)
        joined, before = self._against_state(ctx, snapshot)
        joined = self._differences(ctx, joined)
        events = self._events(joined, columns, before, self._retracted_at(batch, batch_time))
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

    def _latest_rows(self, batch: DataFrame, columns: list[str], batch_time: Column) -> DataFrame:
        """Each key's row in the snapshot (the latest by event time, then the last by file and
        record), with the hash of its compared values, its event's time (`_lf_n_time`) and, when
        a change of the event time counts, the time the row gives (`_lf_n_given`, NULL for none)."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        cfg = self.config
        keys = list(cfg.keys)
        event_time = event_time_of(batch, cfg, batch_time)
        latest_first = Window.partitionBy(*[quote(k) for k in keys]).orderBy(
            *last_row_first(batch, event_time.desc())
        )
        values = [c for c in columns if c not in keys and c != cfg.event_time]
        if cfg.compare_columns is not None:
            values = [c for c in values if c in cfg.compare_columns]
        given = []
        if cfg.event_time and cfg.compares_event_time():
            given = [event_time_value(batch, cfg.event_time).alias("_lf_n_given")]
        return (
            batch.withColumn("_lf_rank", F.row_number().over(latest_first))
            .filter(F.col("_lf_rank") == 1)
            .select(
                *[F.col(quote(c)) for c in columns],
                hashdiff(values, batch.schema).alias("_lf_n_hash"),
                event_time.alias("_lf_n_time"),
                *given,
                F.lit(True).alias("_lf_n"),
            )
        )

    def _against_state(self, ctx: StageContext, snapshot: DataFrame) -> tuple[DataFrame, list[str]]:
        """The snapshot's rows fully joined by key with the log's current state (`_lf_p_*`
        columns: its values, the hash of its compared values, its event time), and the state's
        non-key columns. The comparison runs over the union of both sides' columns."""
        from pyspark.sql import functions as F

        cfg = self.config
        keys = list(cfg.keys)
        if not ctx.target_exists:
            return (
                snapshot.withColumn("_lf_p", F.lit(None).cast("boolean"))
                .withColumn("_lf_p_hash", F.lit(None).cast("binary"))
                .withColumn("_lf_p_time", F.lit(None).cast(snapshot.schema["_lf_n_time"].dataType)),
                [],
            )
        log = ctx.target()
        before = [c for c in state_columns(cfg, log.columns, cfg.event_time) if c not in keys]
        compared = [c for c in before if c != cfg.event_time]
        if cfg.compare_columns is not None:
            compared = [c for c in compared if c in cfg.compare_columns]
        previous = current_state(log, cfg, keys, cfg.event_time).select(
            *[F.col(quote(k)) for k in keys],
            *[F.col(quote(c)).alias(f"_lf_p_{c}") for c in before],
            hashdiff(compared, log.schema).alias("_lf_p_hash"),
            F.col(quote(cfg.event_time_column)).alias("_lf_p_time"),
            F.lit(True).alias("_lf_p"),
        )
        return snapshot.join(previous, on=keys, how="full_outer"), before

    def _differences(self, ctx: StageContext, joined: DataFrame) -> DataFrame:
        """The joined keys that differ, each with its kind (`_lf_kind`): A appeared, R retracted
        (unless a record of it is in quarantine: it is in the snapshot), C changed."""
        from pyspark.sql import functions as F

        cfg = self.config
        keys = list(cfg.keys)
        is_new, was = F.col("_lf_n").isNotNull(), F.col("_lf_p").isNotNull()
        differs = F.col("_lf_n_hash") != F.col("_lf_p_hash")
        if "_lf_n_given" in joined.columns:  # a NULL event time gives none: no change
            given = F.col("_lf_n_given")
            differs = differs | (given.isNotNull() & ~given.eqNullSafe(F.col("_lf_p_time")))
        joined = materialize(
            joined.withColumn(
                "_lf_kind",
                F.when(is_new & ~was, F.lit("A"))
                .when(was & ~is_new, F.lit("R"))
                .when(is_new & was & differs, F.lit("C"))
                .otherwise(F.lit(None)),
            ).filter(F.col("_lf_kind").isNotNull())
        )
        if ctx.quarantined is not None:
            retracted = joined.filter(F.col("_lf_kind") == "R")
            kept = spare(retracted.select(*[quote(k) for k in keys]), keys, ctx.quarantined)
            joined = joined.filter(F.col("_lf_kind") != "R").unionByName(
                retracted.join(kept, on=keys, how="left_semi")
            )
        return joined

    def _retracted_at(self, batch: DataFrame, batch_time: Column) -> Column | None:
        """With `event_time_rule: effective`, a retraction's time: the snapshot's latest event
        time (a retraction has no row: it happened as of the snapshot), or the batch's time;
        None with `odf`, where it repeats the old row's."""
        from pyspark.sql import functions as F

        cfg = self.config
        if cfg.event_time_rule == "odf":
            return None
        if not cfg.event_time:
            return batch_time
        # as text in the session's zone and back: a collected datetime would come back through
        # the machine's zone (a timestamp_ntz moved by its offset)
        event_time = event_time_of(batch, cfg, batch_time)
        kind = batch.select(event_time).schema[0].dataType
        latest = batch.agg(F.max(event_time).cast("string")).first()[0]  # type: ignore[index]
        return batch_time if latest is None else F.lit(latest).cast(kind)

    def _events(
        self, joined: DataFrame, columns: list[str], before: list[str], retracted_at: Column | None
    ) -> DataFrame:
        """The differences as events: +A and +C with the new row and its time; -R and -C with
        the old row and, by `event_time_rule`, the old row's event time (odf) or the time the
        change took effect (effective: `retracted_at` for -R, the new row's for -C)."""
        from pyspark.sql import functions as F

        keys = list(self.config.keys)
        kind = F.col("_lf_kind")
        new_side = joined.filter(kind.isin("A", "C")).select(
            *[F.col(quote(c)) for c in columns],
            F.when(kind == "A", F.lit("+A")).otherwise(F.lit("+C")).alias(OP),
            F.col("_lf_n_time").alias(EVENT_TIME),
        )
        old_time = F.col("_lf_p_time")
        if retracted_at is not None:
            old_time = F.when(kind == "R", retracted_at).otherwise(F.col("_lf_n_time"))
        old_side = joined.filter(kind.isin("R", "C")).select(
            *[F.col(quote(k)) for k in keys],
            *[F.col(quote(f"_lf_p_{c}")).alias(c) for c in before],
            F.when(kind == "R", F.lit("-R")).otherwise(F.lit("-C")).alias(OP),
            old_time.alias(EVENT_TIME),
        )
        return new_side.unionByName(old_side, allowMissingColumns=True)

    def write(self, ctx: StageContext, change: ChangeSet) -> None:
        ctx.backend.append(ctx.table, change.rows)
