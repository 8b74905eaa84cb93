"""Strategy `append` (alias `none`): every batch is appended; each row carries its batch id.

With `output: change_log` the target is an event log (strategies/changelog.py): every row is a
`+A` event, in arrival order (file, then record), with the batch's time as `system_time` and the
`event_time` column's value (a NULL date or timestamp: the batch's time, or NULL with
`null_event_times: keep`) as `event_time`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from lakefresh.config.strategies import AppendStrategyConfig
from lakefresh.lakehouse.functions import utc_timestamp
from lakefresh.strategies.base import ChangeSet, StageContext, data_columns, require_columns, stamped
from lakefresh.strategies.changelog import (
    EVENT_TIME,
    OP,
    arrival_order,
    as_log,
    check_names,
    event_time_of,
    event_time_problems,
)
from lakefresh.strategies.group import GroupChange, Member, stage_append_group
from lakefresh.strategies.materialize import materialize

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


class AppendStrategy:
    kind = "append"
    config_type = AppendStrategyConfig
    status_codes: ClassVar[dict[str, str]] = {"N": "appended"}
    range_type = None

    def __init__(self, config: AppendStrategyConfig) -> None:
        self.config = config

    def unique_keys(self) -> list[str]:
        return []

    def row_problems(self, df: DataFrame) -> list[tuple[Column, str]]:
        return event_time_problems(df, self.config) if self.config.writes_change_log() else []

    def stage(self, ctx: StageContext, batch: DataFrame) -> ChangeSet:
        if self.config.writes_change_log():
            rows, count = self._events(ctx, batch)
        else:
            rows, count = stamped(ctx, batch)
        return ChangeSet(
            rows=rows,
            counts={"N": count},
            record_count=count,
            expected_delta=count,
            written=count,
            superseded={},
        )

    def _events(self, ctx: StageContext, batch: DataFrame) -> tuple[DataFrame, int]:
        from pyspark.sql import functions as F

        cfg = self.config
        columns = data_columns(batch)
        check_names(cfg, columns, cfg.event_time)
        if cfg.event_time:
            require_columns(batch, [cfg.event_time], "event_time")
        batch_time = utc_timestamp(ctx.batch_time).cast("timestamp")
        events = batch.withColumn(OP, F.lit("+A")).withColumn(
            EVENT_TIME, event_time_of(batch, cfg, batch_time)
        )
        rows = materialize(as_log(events, cfg, ctx, arrival_order(events), columns).drop(OP))
        return rows, ctx.rows_of(rows)

    def stage_group(self, ctx: StageContext, batch: DataFrame, members: list[Member]) -> GroupChange:
        """Several pending batches in one change set (strategies/group.py)."""
        return stage_append_group(ctx, batch, members)

    def write(self, ctx: StageContext, change: ChangeSet) -> None:
        ctx.backend.append(ctx.table, change.rows)
