"""Strategy `full`: every batch replaces the whole table.

Earlier batches stay readable by time travel: each batch is one version of the target, recorded
as `published_snapshot_id` in `lakefresh.batches`, so `SELECT * FROM t VERSION AS OF <id>` (or
`Pipeline.read_batch(table, batch_id)`) shows the table as that batch left it, for as long as the
snapshot is retained (Iceberg's `history.expire.*` properties and `expire_snapshots` decide).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from lakefresh.config.strategies import FullStrategyConfig
from lakefresh.errors import BatchRefused
from lakefresh.strategies.base import ChangeSet, StageContext, stamped

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


class FullStrategy:
    kind = "full"
    config_type = FullStrategyConfig
    status_codes: ClassVar[dict[str, str]] = {"N": "loaded"}
    range_type = None

    def __init__(self, config: FullStrategyConfig) -> None:
        self.config = config

    def unique_keys(self) -> list[str]:
        return []

    def row_problems(self, df: DataFrame) -> list[tuple[Column, str]]:
        return []

    def stage(self, ctx: StageContext, batch: DataFrame) -> ChangeSet:
        rows, count = stamped(ctx, batch)
        if count == 0 and ctx.quarantined is not None:
            # a file none of whose records loads is broken, not a source that became empty
            raise BatchRefused(
                f"batch {ctx.batch_id!r}: every record of this full snapshot went to quarantine; "
                "replacing the table with none of them would empty it. Replace the file and run "
                "again, or skip the batch (--skip-batch)"
            )
        return ChangeSet(
            rows=rows, counts={"N": count}, record_count=count, expected_rows=count, written=count
        )

    def write(self, ctx: StageContext, change: ChangeSet) -> None:
        ctx.backend.replace(ctx.table, change.rows)
