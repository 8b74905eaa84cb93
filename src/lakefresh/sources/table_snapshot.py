"""Source `table_snapshot`: a full read of a catalog table, or of a SQL query, as one batch.

With `table`, the batch is the table's current snapshot: its id is `<table>@<snapshot id>`, so a
run that finds the same snapshot reads nothing, and the batch reads exactly that snapshot (time
travel), whatever is committed to the table meanwhile. The batch time is the snapshot's commit
time. Snapshots committed between two runs are not batches of their own: the newest one holds
the table's full state. With `query`, every run is a new batch, `query@<UTC time of listing>`.
This is the initial load of a dimensional flow and the input of `full` and `snapshot`.
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
                f"{table}@{head}",
                str(head),
                (committed.isoformat(),),
                committed,
                replay={"table": table, "snapshot_id": head},
            )
        ]

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
