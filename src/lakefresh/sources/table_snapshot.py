"""Source `table_snapshot`: a full read of a catalog table, or of a SQL query, as one batch.

With `table`, the batch is the table's current snapshot: its id is `<table>@<snapshot id>`, so a
run that finds the same snapshot reads nothing, and the batch reads exactly that snapshot (time
travel), whatever is committed to the table meanwhile. The batch time is the snapshot's commit
time. Snapshots committed between two runs are not batches of their own: the newest one holds
the table's full state. A table rolled back to a snapshot the target took before (its current
snapshot is no longer the one the target took last) is a batch again, `<table>@<snapshot id>#<n>`
for its n-th taking, so that the target follows the table back. With `query`, every run is a new
batch, `query@<UTC time of listing>`. This is the initial load of a dimensional flow and the input
of `full` and `snapshot`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from lakefresh.config.sources import TableSnapshotSourceConfig
from lakefresh.errors import SourceError
from lakefresh.sources.base import BatchRef, ReadBatch, SourceContext, with_provenance

if TYPE_CHECKING:
    from pyspark.sql.types import StructType


class TableSnapshotSource:
    kind = "table_snapshot"

    def __init__(self, config: TableSnapshotSourceConfig, ctx: SourceContext) -> None:
        self.config = config
        self.ctx = ctx

    def list_batches(self) -> list[BatchRef]:
        backend = self.ctx.backend
        table = self.config.table
        if table is None:
            now = datetime.now(UTC).replace(tzinfo=None)
            stamp = now.strftime("%Y%m%dT%H%M%S.%fZ")
            return [BatchRef(f"query@{stamp}", stamp, (stamp,), now, replay={"query": self.config.query})]
        if not backend.exists(table):
            raise SourceError(f"source table {table} does not exist")
        head = backend.head(table)
        if head is None:
            return []  # created, never written
        committed = backend.committed_at(table, head)
        return [
            BatchRef(
                self._batch_id(table, head),
                str(head),
                (committed.isoformat(),),
                committed,
                replay={"table": table, "snapshot_id": head},
            )
        ]

    def _batch_id(self, table: str, head: int) -> str:
        """`<table>@<head>`; `#<n>` after it when the target took `head` n-1 times before and its
        newest batch from this source is of another snapshot (the table was rolled back)."""
        plain = f"{table}@{head}"
        if not self.ctx.backend.exists(self.ctx.target):
            return plain
        taken = [b for b in self.ctx.backend.published_batches(self.ctx.target) if b.startswith(f"{table}@")]
        if not taken or taken[0].split("#")[0] == plain:  # newest first: nothing, or the same again
            return taken[0] if taken else plain
        times = sum(1 for b in taken if b.split("#")[0] == plain)
        return plain if times == 0 else f"{plain}#{times + 1}"

    def published(self, ref: BatchRef) -> bool:
        return False

    def read(self, ref: BatchRef, target_schema: StructType | None) -> ReadBatch:
        from pyspark.sql import functions as F

        if self.config.table is None:
            rows = self.ctx.spark.sql(str(self.config.query))
        else:
            rows = self.ctx.backend.read(self.config.table, int(ref.position))
        numbered = with_provenance(rows, F.lit(ref.batch_id), F.monotonically_increasing_id() + 1)
        return ReadBatch(ref, numbered)
