"""Source `table_snapshot`: a full read of a catalog table, or of a SQL query, as one batch.

With `table`, the batch is the table's current snapshot: its id is `<table>@<snapshot id>`, so a
run that finds the same snapshot reads nothing, and the batch reads exactly that snapshot (time
travel), whatever is committed to the table meanwhile. The batch time is the snapshot's commit
time. Snapshots committed between two runs are not batches of their own: the newest one holds
the table's full state. A table rolled back to a snapshot the target took before, or to one
committed before the target took its newest, is a batch again (`<table>@<snapshot id>#<hash>`,
at its time of listing), so that the target follows the table back. With `query`, every run is a
new batch, `query@<UTC time of listing>`. This is the initial load of a dimensional flow and the
input of `full` and `snapshot`.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import TYPE_CHECKING

from lakefresh.clock import utc_now
from lakefresh.config.sources import TableSnapshotSourceConfig
from lakefresh.errors import SourceError
from lakefresh.sources.base import BatchRef, ReadBatch, SourceContext, returned_order, with_provenance

if TYPE_CHECKING:
    from pyspark.sql.types import StructType


class TableSnapshotSource:
    kind = "table_snapshot"
    config_type = TableSnapshotSourceConfig

    def __init__(self, config: TableSnapshotSourceConfig, ctx: SourceContext) -> None:
        self.config = config
        self.ctx = ctx

    def list_batches(self) -> list[BatchRef]:
        backend = self.ctx.backend
        table = self.config.table
        if table is None:
            now = utc_now()
            stamp = now.strftime("%Y%m%dT%H%M%S.%fZ")
            return [BatchRef(f"query@{stamp}", stamp, (stamp,), now, replay={"query": self.config.query})]
        if not backend.exists(table):
            raise SourceError(f"source table {table} does not exist")
        head = backend.head(table)
        if head is None:
            return []  # created, never written
        committed = backend.committed_at(table, head)
        batch_id, batch_time = self._taken_again(table, head, committed) or (f"{table}@{head}", committed)
        return [
            BatchRef(
                batch_id,
                str(head),
                (batch_time.isoformat(),),
                batch_time,
                replay={"table": table, "snapshot_id": head},  # stored in `batches.replay`: it stays
            )
        ]

    def _taken_again(self, table: str, head: int, committed: datetime) -> tuple[str, datetime] | None:
        """The id and time of `head`'s batch when the target took it before, or took the table
        after `head` was committed (the table was rolled back, or set back to a later snapshot):
        `<table>@<head>#<hash of the target's newest batch from the table>`, a new id each time,
        at the time of listing (so that its rows are newer than every row stored); else None
        (`<table>@<head>`, at its commit time)."""
        backend, target, prefix = self.ctx.backend, self.ctx.target, f"{table}@"
        if not backend.exists(target):
            return None
        published = backend.published_batches(target)  # newest first
        taken = [b for b in published if b.startswith(prefix)]
        if not taken:
            return None
        newest = taken[0]
        if newest.removeprefix(prefix).split("#")[0] == str(head):
            return newest, committed  # the same snapshot again: taken, nothing to do
        if f"{prefix}{head}" not in taken and committed > backend.committed_at(target, published[newest]):
            return None  # committed after the target took its newest batch from the table
        digest = hashlib.sha256(newest.encode()).hexdigest()[:12]
        return f"{prefix}{head}#{digest}", utc_now()

    def published(self, ref: BatchRef) -> bool:
        return False

    def read(self, ref: BatchRef, target_schema: StructType | None) -> ReadBatch:
        from pyspark.sql import functions as F

        if self.config.table is None:
            rows = self.ctx.spark.sql(str(self.config.query))
        else:
            rows = self.ctx.backend.read(self.config.table, int(ref.position))
        numbered = with_provenance(rows, F.lit(ref.batch_id), returned_order(self.config.query))
        return ReadBatch(ref, numbered)
