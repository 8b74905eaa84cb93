"""Strategy `append` (alias `none`): every batch is appended; each row carries its batch id."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from lakefresh.config.strategies import AppendStrategyConfig
from lakefresh.strategies.base import ChangeSet, StageContext, stamped
from lakefresh.strategies.group import GroupChange, Member, stage_append_group

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
        return []

    def stage(self, ctx: StageContext, batch: DataFrame) -> ChangeSet:
        rows, count = stamped(ctx, batch)
        return ChangeSet(
            rows=rows,
            counts={"N": count},
            record_count=count,
            expected_delta=count,
            written=count,
            superseded={},
        )

    def stage_group(self, ctx: StageContext, batch: DataFrame, members: list[Member]) -> GroupChange:
        """Several pending batches in one change set (strategies/group.py)."""
        return stage_append_group(ctx, batch, members)

    def write(self, ctx: StageContext, change: ChangeSet) -> None:
        ctx.backend.append(ctx.table, change.rows)
