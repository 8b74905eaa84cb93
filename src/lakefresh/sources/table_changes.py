"""Source `table_changes`: another catalog table's changes between versions, with a load log.

A *load* reads the source table's changelog after a start version (exclusive) up to an end
version (inclusive):

- start = the end of the reader's last processed load, or (first load) the table's first
  snapshot, included;
- end = the table's head when the load is listed. It is fixed for the load and its
  batch id (`<table>@<start>..<end>`), so a write to the source while the load runs is left for
  the next load, never read half-way.

The load is opened in the `loads` control table when it is read, and marked processed when its
batch is published (or found in the target's lineage after a crash). A load that was opened but
not processed is listed again with the same start and end, as long as that end is still in the
source's current lineage; if the source was rolled back below it, the load is opened anew up to
the head, so a rolled-back version is never read.

Stale start: if the start version was expired, or is no longer an ancestor of the head (the
table was rolled back), the load fails and says how to recover; lakefresh never
skips data silently and never re-reads what it loaded.

Rows: the table's columns plus `_lf_change_type` (INSERT, DELETE, UPDATE_AFTER; update
pre-images are dropped), `_lf_change_ordinal`, `_lf_commit_snapshot_id` and
`_lf_commit_timestamp`: `_lf_` columns, so they are not written to the target or hashed (a
transform can keep them under other names; an `scd2` target sequenced by the commit time keeps a
version per commit, where it would keep one per load).
With `keys`, a delete and an insert of one key in one commit are an update. The changes of one
key are ordered by commit, so the last one wins in strategies that keep one row per key;
`dedupe: true` keeps only that last one in the batch itself (for `append`). For `key` and
`scd2`, a DELETE change deletes the key: the strategy gets
`delete: {condition: "_lf_change_type = 'DELETE'"}` unless it has its own rule.

The changes come from the table backend (`TableBackend.changes`), which says what its format can
read: Iceberg's changelog reads copy-on-write commits, not merge-on-read delete files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakefresh.columns import CHANGE_ORDINAL_COLUMN, CHANGE_TYPE_COLUMN
from lakefresh.config.sources import ChangeFeedBase, TableChangesSourceConfig
from lakefresh.errors import SourceError
from lakefresh.lakehouse.functions import contents
from lakefresh.sources.base import BatchRef, ReadBatch, SourceContext, with_provenance
from lakefresh.sources.feed_listing import FeedListing
from lakefresh.state.loads import Load, LoadLog

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

    from lakefresh.lakehouse.backend import TableBackend


class TableChangesSource:
    kind = "table_changes"
    config_type: type[ChangeFeedBase] = TableChangesSourceConfig

    def __init__(self, config: ChangeFeedBase, ctx: SourceContext) -> None:
        self.config = config
        self.ctx = ctx
        self.load_id = config.load_id or ctx.target
        self.log = LoadLog(ctx.backend, ctx.control_namespace)
        # the table whose changes are read, and the backend that reads them
        self.table, self.feed = self._feed()

    def _feed(self) -> tuple[str, TableBackend]:
        assert isinstance(self.config, TableChangesSourceConfig)
        return self.config.table, self.ctx.backend

    def first_start(self) -> int | None:
        """The start (exclusive) of a reader's first load: None, from the table's first version."""
        return None

    def needed_from(self) -> int | None:
        """The oldest version of the source table this reader still needs: the start of its next
        load (the end of its last processed one). None when it has processed no load yet: its
        first load reads from the table's first version, so every version is needed."""
        processed = [load for load in self.log.loads(self.load_id) if load.processed]
        return processed[-1].end_snapshot_id if processed else None

    def list_batches(self) -> list[BatchRef]:
        return self.listing().batches(self.log.loads(self.load_id))

    def listing(self) -> FeedListing:
        """How the next load is chosen (sources/feed_listing.py)."""
        backend, target = self.ctx.backend, self.ctx.target

        def published() -> dict[str, int]:
            return backend.published_batches(target) if backend.exists(target) else {}

        return FeedListing(self.feed, self.table, self.load_id, self.first_start, published)

    def reset(self, version: int | None = None) -> str:
        """Restart the load log after a version of the source (default: its head): the
        next load reads the changes after it. For after a full reload, when the last load's end
        was expired or rolled back."""
        backend, table = self.feed, self.table
        end = version if version is not None else backend.head(table)
        if end is None:
            raise SourceError(f"source table {table} has no version yet")
        backend.committed_at(table, end)  # raises if the table no longer has it
        self.log.open(Load(self.load_id, table, None, end, f"reset@{end}", True))
        return f"load {self.load_id!r} of {table} restarts after version {end}"

    def reopen(self, batch_ids: list[str]) -> None:
        """Batches a rollback of the target removed, to be applied again: their loads are read
        again, from the end of the last load the target still holds."""
        self.log.reopen(self.load_id, batch_ids)

    def published(self, ref: BatchRef) -> bool:
        loads = {load.batch_id: load for load in self.log.loads(self.load_id)}
        load = loads.get(ref.batch_id)
        if load is not None and load.processed:
            return False
        if load is None:  # published before its load row was written: record it now
            self.log.open(self._load_of(ref, processed=True))
        else:
            self.log.mark_processed(self.load_id, ref.batch_id)
        return True

    def _load_of(self, ref: BatchRef, processed: bool) -> Load:
        start = ref.replay["start_snapshot_id"]
        return Load(
            self.load_id,
            self.table,
            None if start is None else int(start),  # type: ignore[call-overload]
            int(ref.replay["end_snapshot_id"]),  # type: ignore[call-overload]
            ref.batch_id,
            processed,
        )

    def read(self, ref: BatchRef, target_schema: StructType | None) -> ReadBatch:
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        load = self._load_of(ref, processed=False)
        if ref.batch_id not in {opened.batch_id for opened in self.log.loads(self.load_id)}:
            self.log.open(load)
        changes = self.changes(load)
        changes = changes.filter(F.col(CHANGE_TYPE_COLUMN) != "UPDATE_BEFORE")
        # order: by commit, and inside one a row after a delete of its key
        rank = F.col(CHANGE_ORDINAL_COLUMN) * 2 + F.when(F.col(CHANGE_TYPE_COLUMN) == "DELETE", 0).otherwise(
            1
        )
        if self.config.dedupe:
            # a commit's two rows of one key tie on `rank`: their contents decide, on every run
            last = Window.partitionBy(*[F.col(k) for k in self.config.keys]).orderBy(
                rank.desc(), contents(changes).desc()
            )
            changes = changes.withColumn("_lf_last", F.row_number().over(last)).filter("_lf_last = 1")
            changes = changes.drop("_lf_last")
        rows = with_provenance(changes, F.lit(ref.batch_id), rank + 1)
        return ReadBatch(ref, rows)

    def changes(self, load: Load) -> DataFrame:
        """The load's changes, from the feed's backend (`TableBackend.changes`)."""
        keys = list(self.config.keys)
        return self.feed.changes(self.table, load.start_snapshot_id, load.end_snapshot_id, keys)
