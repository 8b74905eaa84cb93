"""Strategy `full`: every batch replaces the whole table.

Earlier batches stay readable by time travel: each batch is one snapshot of the target, recorded
as `published_snapshot_id` in `lakefresh.batches`, so `SELECT * FROM t VERSION AS OF <id>` (or
`Pipeline.read_batch(table, batch_id)`) shows the table as that batch left it, for as long as the
snapshot is retained (Iceberg's `history.expire.*` properties and `expire_snapshots` decide).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakefresh.columns import BATCH_ID_COLUMN
from lakefresh.config.strategies import FullStrategyConfig
from lakefresh.strategies.base import (
    ChangeSet,
    StageContext,
    data_columns,
    materialize,
    q,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


class FullStrategy:
    kind = "full"

    def __init__(self, config: FullStrategyConfig) -> None:
        self.config = config

    def unique_keys(self) -> list[str]:
        return []

    def row_problems(self, df: DataFrame) -> list[tuple[Column, str]]:
        return []

    def stage(self, ctx: StageContext, batch: DataFrame) -> ChangeSet:
        from pyspark.sql import functions as F

        rows = materialize(
            batch.select(
                *[F.col(q(c)) for c in data_columns(batch)],
                F.lit(ctx.batch_id).alias(BATCH_ID_COLUMN),
            )
        )
        count = rows.count()
        return ChangeSet(rows=rows, counts={"N": count}, record_count=count, expected_rows=count)

    def write(self, ctx: StageContext, change: ChangeSet) -> None:
        ctx.backend.replace(ctx.table, change.rows)
