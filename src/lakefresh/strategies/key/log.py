"""Strategy `key` with `output: change_log`: an upsert stream (Open Data Fabric's UpsertStream).

The batch is judged exactly as `key` judges it (strategies/key/strategy.py: the same status codes, dates,
deletes, dedupe, full snapshots and match rules), against the log's current state instead of a
table; then, instead of a MERGE, the outcome is appended as events (strategies/changelog.py):

| status         | events                                                      |
| -------------- | ----------------------------------------------------------- |
| N              | `+A` with the new row                                       |
| C              | `-C` with the old row, then `+C` with the new row            |
| D, R, E        | `-R` with the old row                                       |
| U, S, O, M, X, Z | nothing                                                   |

Intra-batch changes are compacted: a key's rows in one batch give at most one outcome (its
winning row). An event's time is the `event_time` column's (a NULL takes the batch's time, or
stays NULL with `null_event_times: keep`), or, without one, the record's date (`date_column`, or
the batch's time); `-C` and `-R` carry the old row's, as they carry its values. With
`event_time_rule: odf` (the default, as Open Data Fabric's upsert stream), a row whose only
difference is its event time is changed (C: `-C` then `+C`), unless its event time is NULL;
with `effective`, the event time says when, not what, and such a row is unchanged. Each event
stores `_lf_hash` and `_lf_updated_at`, so the next batch compares against the state without
recomputing it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakefresh.columns import HASH_COLUMN, STATUS_COLUMN, UPDATED_AT_COLUMN
from lakefresh.config.strategies import KeyStrategyConfig
from lakefresh.lakehouse.functions import utc_timestamp
from lakefresh.lakehouse.sql import quote
from lakefresh.strategies.base import ChangeSet, StageContext, data_columns
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
from lakefresh.strategies.key.strategy import KeyStrategy
from lakefresh.strategies.materialize import materialize, materialize_sized

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

STATE = (HASH_COLUMN, UPDATED_AT_COLUMN)  # what an event stores for the next comparison


@dataclass
class _AgainstState(StageContext):
    """The batch's context, with the log's current state standing for the target."""

    state: Any = None

    def target(self) -> DataFrame:
        return self.state  # type: ignore[no-any-return]


class KeyLogStrategy(KeyStrategy):
    """`key`'s judgement, written as an upsert stream's events."""

    judging = False  # its events need every row's status

    def __init__(self, config: KeyStrategyConfig) -> None:
        # the hash leaves the event time out: `event_time_rule: odf` compares it on its own, with
        # the state's event time (a NULL in the batch gives none: no change), `effective` never
        when = config.event_time
        self.compares_event_time = bool(
            when and config.event_time_rule == "odf" and when not in config.exclude_from_cdc
        )
        if when and when not in config.keys and when not in config.exclude_from_cdc:
            config = config.model_copy(update={"exclude_from_cdc": [*config.exclude_from_cdc, when]})
        super().__init__(config)

    def differs(self) -> str:
        if self.compares_event_time:
            return f"({super().differs()}) OR _lf_when_differs"
        return super().differs()

    def _against_stored(
        self, ctx: StageContext, batch: DataFrame, rows: DataFrame, ranked: DataFrame, batch_rows: int
    ) -> DataFrame:
        """`key`'s join with the stored rows, and, when a change of the event time counts,
        whether the row gives an event time other than its stored event's (`_lf_when_differs`)."""
        from pyspark.sql import functions as F

        joined = super()._against_stored(ctx, batch, rows, ranked, batch_rows)
        cfg = self.config
        if not self.compares_event_time or not cfg.event_time:
            return joined
        given = event_time_value(joined, cfg.event_time)
        if ctx.target_exists:
            stored = ctx.target().select(
                *[F.col(quote(k)) for k in cfg.keys], F.col(quote(cfg.event_time_column)).alias("_lf_t_when")
            )
            joined = joined.join(stored, on=list(cfg.keys), how="left")
        else:
            joined = joined.withColumn("_lf_t_when", F.lit(None))
        differs = given.isNotNull() & ~given.eqNullSafe(F.col("_lf_t_when"))
        return joined.withColumn("_lf_when_differs", differs)

    def unique_keys(self) -> list[str]:
        return []  # the log holds many events per key

    def row_problems(self, df: DataFrame) -> list[tuple[Column, str]]:
        return [*super().row_problems(df), *event_time_problems(df, self.config)]

    def stage(self, ctx: StageContext, batch: DataFrame) -> ChangeSet:
        from pyspark.sql import functions as F

        cfg = self.config
        keys = list(cfg.keys)
        check_names(cfg, [c for c in data_columns(batch) if c not in cfg.drop_columns], cfg.event_time)
        state = None
        if ctx.target_exists:
            state = materialize(current_state(ctx.target(), cfg, keys, cfg.event_time, system=True))
        judged = super().stage(_AgainstState(**vars(ctx), state=state), batch)
        outcome = judged.rows.filter(F.col(STATUS_COLUMN).isin("N", "C", "D", "R", "E"))
        batch_time = utc_timestamp(ctx.batch_time).cast("timestamp")
        new_time = event_time_of(outcome, cfg, batch_time) if cfg.event_time else F.col(UPDATED_AT_COLUMN)
        columns = [c for c in data_columns(outcome) if c != STATUS_COLUMN]
        new_side = outcome.filter(F.col(STATUS_COLUMN).isin("N", "C")).select(
            *[F.col(quote(c)) for c in columns],
            *[F.col(c) for c in STATE],
            F.when(F.col(STATUS_COLUMN) == "N", F.lit("+A")).otherwise(F.lit("+C")).alias(OP),
            new_time.alias(EVENT_TIME),
        )
        events = new_side
        if state is not None:
            before = [c for c in state_columns(cfg, state.columns, cfg.event_time) if c not in keys]
            old = state.select(
                *[F.col(quote(k)) for k in keys],
                *[F.col(quote(c)) for c in [*before, *STATE]],
                F.col(quote(cfg.event_time_column)).alias(EVENT_TIME),
            )
            leaving = outcome.filter(F.col(STATUS_COLUMN).isin("C", "D", "R", "E")).select(
                *[F.col(quote(k)) for k in keys],
                F.when(F.col(STATUS_COLUMN) == "C", F.lit("-C")).otherwise(F.lit("-R")).alias(OP),
            )
            old_side = leaving.join(old, on=keys, how="inner")
            events = new_side.unionByName(old_side, allowMissingColumns=True)
        data = [c for c in events.columns if not c.startswith("_lf_")]
        rows, written = materialize_sized(as_log(events, cfg, ctx, keyed_order(keys), data, STATE))
        return ChangeSet(
            rows=rows.drop(OP),
            counts=judged.counts,
            record_count=judged.record_count,
            duplicates=judged.duplicates,
            expected_delta=written,
            written=written,
            superseded={},
        )

    def write(self, ctx: StageContext, change: ChangeSet) -> None:
        ctx.backend.append(ctx.table, change.rows)
