"""A batch that rebuilds its table (a backfill with `backfill_behavior: overwrite`).

The table's own strategy stages the batch as if the table were empty, into a temporary table
`<table>__rebuild` (dropped first if a crashed attempt left one); the live table's single commit
then replaces all its rows with the temporary table's, through the runner's write-audit-publish,
so readers see the old table until the new one is published whole. The temporary table is dropped
once its rows are written. Earlier states stay readable by time travel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakefresh.lakehouse.backend import SCRATCH
from lakefresh.strategies.base import ChangeSet, StageContext, Strategy, shape_target

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


class Rebuild:
    """Wraps a table's strategy: same checks and keys, a whole-table replace as its commit."""

    def __init__(self, inner: Strategy) -> None:
        self.inner = inner
        self.kind = inner.kind
        self.status_codes = inner.status_codes
        self.range_type = inner.range_type

    def row_problems(self, df: DataFrame) -> list[tuple[Column, str]]:
        return self.inner.row_problems(df)

    def unique_keys(self) -> list[str]:
        return self.inner.unique_keys()

    def stage(self, ctx: StageContext, batch: DataFrame) -> ChangeSet:
        backend = ctx.backend
        scratch = ctx.table + SCRATCH
        backend.drop(scratch)
        empty = StageContext(backend, scratch, ctx.batch_id, ctx.batch_time, target_exists=False)
        change = self.inner.stage(empty, batch)
        shape_target(empty, change, staged_commits=False)
        self.inner.write(empty, change)
        rows = backend.read(scratch)
        count = rows.count()
        return ChangeSet(
            rows=rows,
            counts=change.counts,
            record_count=change.record_count,
            duplicates=change.duplicates,
            expected_rows=count,
            written=count,
            superseded=None,  # every earlier row goes: the runner recounts
            range=change.range,
        )

    def write(self, ctx: StageContext, change: ChangeSet) -> None:
        ctx.backend.replace(ctx.table, change.rows)
        ctx.backend.drop(ctx.table + SCRATCH)
