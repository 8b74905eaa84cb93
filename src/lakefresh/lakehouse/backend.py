"""The table-format seam: what the runner, the strategies and the state need from a table format.

Only :mod:`lakefresh.lakehouse.iceberg` implements it today. A Delta backend would implement the same
protocol, with the batch commit carried by Delta's idempotent writes (`txnAppId`/`txnVersion`)
instead of Iceberg's write-audit-publish; nothing above this layer would change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType


@dataclass(frozen=True)
class StagedCommit:
    """A batch written to the target but not yet visible to readers."""

    table: str
    batch_id: str
    snapshot_id: int
    parent_id: int | None
    summary: dict[str, str] = field(default_factory=dict)

    @property
    def live_records(self) -> int:
        """Rows a reader of this snapshot sees (data rows minus position-deleted rows)."""
        total = int(self.summary.get("total-records", "0"))
        return total - int(self.summary.get("total-position-deletes", "0"))

    @property
    def files_written(self) -> int:
        return int(self.summary.get("added-data-files", "0"))

    @property
    def bytes_written(self) -> int:
        return int(self.summary.get("added-files-size", "0"))


@dataclass(frozen=True)
class Lineage:
    """Which snapshots a table still has, and which of them the current one descends from."""

    ancestors: frozenset[int]  # the current snapshot and its ancestors still retained
    retained: frozenset[int]  # every snapshot the table still has (ancestors or not)
    oldest_ancestor_millis: int | None  # commit time (epoch ms) of the oldest retained ancestor

    def rolled_back(self, snapshot_id: int, published_millis: int | None) -> bool:
        """Whether a snapshot that was published is no longer in the lineage because the table
        was rolled back, not because it expired.

        A retained snapshot outside the ancestors was rolled back. An expired one was rolled back
        only if it was published after the oldest ancestor still retained was committed: expiry
        removes a lineage from its old end, so an expired ancestor is older than every retained
        one."""
        if snapshot_id in self.ancestors:
            return False
        if snapshot_id in self.retained:
            return True
        return (
            published_millis is not None
            and self.oldest_ancestor_millis is not None
            and published_millis > self.oldest_ancestor_millis
        )


@dataclass(frozen=True)
class MergeClauses:
    """A MERGE over a change set whose rows carry a status column.

    `update_when` / `delete_when` / `insert_when` are SQL conditions over the source alias `s`.
    """

    keys: list[str]
    update_columns: list[str]
    insert_columns: list[str]
    update_when: str | None = None
    delete_when: str | None = None
    insert_when: str | None = None
    source_rows: int | None = None  # the change set's size, when known: small ones are broadcast


class TableBackend(Protocol):
    """Atomic, exactly-once batch commits on one table format."""

    spark: SparkSession

    def qualified(self, table: str) -> str:
        """The table's full name in SQL (catalog.namespace.table)."""

    def exists(self, table: str) -> bool:
        """Whether the table exists."""

    def create(
        self, table: str, schema: StructType, partition_by: list[str], properties: dict[str, str]
    ) -> None:
        """Create the table (and its namespace) ready for batch commits."""

    def drop(self, table: str) -> None:
        """Drop a table of lakefresh's own (a temporary one) with its files."""

    def align(self, table: str, df: DataFrame, keep: tuple[str, ...] = ()) -> DataFrame:
        """Evolve the table for the batch's new columns; return the batch in the table's shape
        (plus the `keep` columns)."""

    def set_properties(self, table: str, properties: dict[str, str]) -> None:
        """Set table properties (no snapshot)."""

    def drop_columns(self, table: str, columns: list[str]) -> None:
        """Drop columns (metadata only)."""

    def published_batches(self, table: str, since: int | None = None) -> dict[str, int]:
        """Batch ids carried by the table's current lineage, with their snapshot ids (only those
        after snapshot `since`, when given)."""

    def head(self, table: str) -> int | None:
        """The current snapshot id, None for an empty new table."""

    def lineage(self, table: str) -> Lineage:
        """The table's retained snapshots and the current one's ancestors (rollback checks)."""

    def stage(self, table: str, batch_id: str, write: Callable[[], None]) -> StagedCommit:
        """Run `write` so that its commit is staged (invisible) and tagged with the batch id."""

    def publish(self, staged: StagedCommit) -> int:
        """Make a staged commit current, atomically; return the published snapshot id."""

    def file_count(self, table: str) -> int:
        """Data and delete files in the table's current snapshot."""

    def compact(self, table: str, keep_snapshots: int) -> None:
        """Rewrite a small table's files into few, deletes applied; keep the newest snapshots."""

    def read(self, table: str, snapshot_id: int | None = None) -> DataFrame:
        """The table now, or as of a snapshot (time travel)."""

    def append(self, table: str, df: DataFrame) -> None:
        """Append rows."""

    def replace(self, table: str, df: DataFrame) -> None:
        """Replace every row with `df`."""

    def merge(self, table: str, source: DataFrame, clauses: MergeClauses) -> None:
        """MERGE a change set into the table."""

    def delete_and_append(
        self,
        table: str,
        rows: DataFrame,
        delete_when: str | None,
        matches: DataFrame | None,
        deletes: int,
        equi_join: bool = False,
    ) -> None:
        """In one commit: delete target rows (`this`) for which some row of `matches` (`input`)
        makes `delete_when` true, and insert `rows`."""
