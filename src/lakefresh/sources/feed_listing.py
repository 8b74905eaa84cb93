"""The listing of a change feed (`table_changes`, `delta_changes`): its next load, from the loads
log and the source table's lineage (sources/table_changes.py says how a load is chosen). Through
any :class:`FeedLineage`, a table backend's or lakehouse/native.py's reader, so a feed lists
the same load with or without Spark."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from lakefresh.errors import SourceError
from lakefresh.sources.base import BatchRef
from lakefresh.state.loads import Load

if TYPE_CHECKING:
    from datetime import datetime

    from lakefresh.lakehouse.backend import Lineage, VersionState


class FeedLineage(Protocol):
    """What a feed's listing reads of the source table (TableBackend's answers)."""

    def exists(self, table: str) -> bool: ...

    def head(self, table: str) -> int | None: ...

    def lineage(self, table: str) -> Lineage: ...

    def committed_at(self, table: str, version: int) -> datetime: ...

    def version_state(self, table: str, version: int) -> VersionState: ...


class FeedListing:
    """Lists the next load of reader `load_id` of `table`. `first_start` is where its first load
    starts (exclusive; None: the table's first version); `published` gives the batches the
    target's lineage holds (none while it does not exist)."""

    def __init__(
        self,
        feed: FeedLineage,
        table: str,
        load_id: str,
        first_start: Callable[[], int | None],
        published: Callable[[], dict[str, int]],
    ) -> None:
        self.feed = feed
        self.table = table
        self.load_id = load_id
        self.first_start = first_start
        self.published = published

    def batches(self, loads: list[Load]) -> list[BatchRef]:
        """The next load as a batch (none when nothing was committed since the last one), given
        the reader's loads, oldest first."""
        feed, table = self.feed, self.table
        if not feed.exists(table):
            raise SourceError(f"source table {table} does not exist")
        processed = [load for load in loads if load.processed]
        start = processed[-1].end_snapshot_id if processed else self.first_start()
        if processed:
            self.check_start(processed[-1].end_snapshot_id)
        elif start is None and not feed.lineage(table).whole:
            raise SourceError(
                f"the first load of {table} for load {self.load_id!r} reads its changes from its "
                "first version, which was expired: the rows written before the oldest version "
                "kept would never arrive. Load the target in full from a `table_snapshot` source of "
                f"the same table, then start the load log there: `lakefresh reset-load PIPELINE TABLE`."
            )
        opened = [load for load in loads if not load.processed and load.start_snapshot_id == start]
        if opened and self._readable(opened[-1]):
            load = opened[-1]
        else:
            end = feed.head(table)
            if end is None or end == start:
                return []  # nothing committed since the last load
            load = Load(self.load_id, table, start, end, batch_id(table, start, end), False)
        return [
            BatchRef(
                load.batch_id,
                f"{load.start_snapshot_id or 'first'}..{load.end_snapshot_id}",
                (f"{load.end_snapshot_id:020d}",),
                feed.committed_at(table, load.end_snapshot_id),
                replay={  # stored in `batches.replay`, named as the `loads` columns: they stay
                    "table": table,
                    "start_snapshot_id": load.start_snapshot_id,
                    "end_snapshot_id": load.end_snapshot_id,
                },
            )
        ]

    def _readable(self, load: Load) -> bool:
        """Whether an opened, unprocessed load may be read again with its fixed end: yes while
        the end is in the source's current lineage. A rollback of the source below it makes
        the end a version that no longer counts: the load is opened anew up to the head,
        unless its batch reached the target after all (then the next load's start
        check reports the rollback)."""
        if self.feed.version_state(self.table, load.end_snapshot_id) == "current-lineage":
            return True
        return load.batch_id in self.published()

    def check_start(self, start: int) -> None:
        """SourceError when the start of the next load left the source's current lineage."""
        state = self.feed.version_state(self.table, start)
        if state == "current-lineage":
            return
        what = "was expired" if state == "expired" else "is no longer in its current history (rolled back?)"
        raise SourceError(
            f"the changes of {self.table} for load {self.load_id!r} start after version "
            f"{start}, which {what}: the changes since the last load cannot be read. Reload the "
            "target in full from a `table_snapshot` source of the same table, then restart the "
            f"load log there: `lakefresh reset-load PIPELINE TABLE` (load {self.load_id!r})."
        )


def batch_id(table: str, start: int | None, end: int) -> str:
    return f"{table}@{start if start is not None else 'first'}..{end}"
