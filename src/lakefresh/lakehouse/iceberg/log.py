"""An Iceberg table's snapshots as lakefresh reads them: the batches a snapshot carries (its
`wap.id`, a backlog group's earlier batches), a snapshot as a staged commit, and the changelog
between two snapshots."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lakefresh.columns import (
    CHANGE_ORDINAL_COLUMN,
    CHANGE_SNAPSHOT_COLUMN,
    CHANGE_TIME_COLUMN,
    CHANGE_TYPE_COLUMN,
)
from lakefresh.errors import StateError
from lakefresh.lakehouse.backend import GROUP_PROPERTY, Deletes, Lineage, StagedCommit, VersionState
from lakefresh.lakehouse.changes import without_carry_overs
from lakefresh.lakehouse.jvm import java_class
from lakefresh.lakehouse.sql import quote, sql_literal

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def changelog(
    spark: SparkSession,
    catalog: str,
    table: str,
    start: int | None,
    end: int,
    keys: list[str],
    committed: dict[int, int],
) -> DataFrame:
    """Iceberg's changelog view of the snapshots, its `_change_type`, `_change_ordinal` and
    `_commit_snapshot_id` renamed to lakefresh's change columns, and each snapshot's commit time
    (`committed`: snapshot id -> epoch milliseconds, for the snapshots of the range) added.
    Iceberg's changelog reads copy-on-write commits; merge-on-read delete files are not supported
    (the read fails with Iceberg's message)."""
    view = f"lakefresh_changes_{abs(hash((table, start, end)))}"
    options = {"end-snapshot-id": str(end)}
    if start is not None:
        options["start-snapshot-id"] = str(start)
    args = [
        f"table => {sql_literal(table)}",
        f"changelog_view => {sql_literal(view)}",
        "options => map("
        + ", ".join(f"{sql_literal(k)}, {sql_literal(v)}" for k, v in options.items())
        + ")",
    ]
    if keys:
        args += [
            "compute_updates => true",
            "identifier_columns => array(" + ", ".join(sql_literal(k) for k in keys) + ")",
        ]
    spark.sql(f"CALL {quote(catalog)}.system.create_changelog_view({', '.join(args)})")
    changes = (
        spark.table(view)
        .withColumnRenamed("_change_type", CHANGE_TYPE_COLUMN)
        .withColumnRenamed("_change_ordinal", CHANGE_ORDINAL_COLUMN)
        .withColumnRenamed("_commit_snapshot_id", CHANGE_SNAPSHOT_COLUMN)
    )
    ids = ", ".join(str(int(k)) for k in committed)
    millis = ", ".join(str(int(v)) for v in committed.values())
    times = f"map_from_arrays(array({ids}), array({millis}))"
    at = "CAST(NULL AS TIMESTAMP)"
    if committed:
        at = f"timestamp_millis(element_at({times}, {CHANGE_SNAPSHOT_COLUMN}))"
    changes = changes.selectExpr("*", f"{at} AS {CHANGE_TIME_COLUMN}")
    return without_carry_overs(changes, keys) if keys else changes


@dataclass(frozen=True)
class SnapshotInfo:
    """What lakefresh reads of a snapshot."""

    snapshot_id: int
    parent_id: int | None
    timestamp_ms: int
    operation: str | None
    summary: dict[str, str]

    @property
    def properties(self) -> dict[str, str]:
        """Its summary's `lakefresh.*` properties (see `TableBackend.commit_properties`)."""
        return {k: v for k, v in self.summary.items() if k.startswith("lakefresh.")}


def summary_deletes(summary: dict[str, str]) -> Deletes:
    """A snapshot's delete files and the rows they delete, from its summary (no job)."""
    rows = sum(int(summary.get(k) or 0) for k in ("total-position-deletes", "total-equality-deletes"))
    return Deletes(
        files=int(summary.get("total-delete-files") or 0),
        rows=rows,
        stored=int(summary.get("total-records") or 0),
    )


class SnapshotLog:
    """A table's snapshots as its metadata (tables, or files) hold them at one moment: the
    lineage facts of `TableBackend` answered from them."""

    def __init__(self, current: int | None, snapshots: dict[int, SnapshotInfo]) -> None:
        self.current = current
        self.snapshots = snapshots

    def ancestors(self, start: int | None = None) -> Iterator[SnapshotInfo]:
        """From `start` (default: the current snapshot) back through its retained parents."""
        found = self.snapshots.get(self.current if start is None else start)  # type: ignore[arg-type]
        while found is not None:
            yield found
            found = None if found.parent_id is None else self.snapshots.get(found.parent_id)

    def head(self) -> int | None:
        return self.current

    def view(self) -> Lineage:
        """The lineage as `TableBackend.lineage` gives it."""
        ancestors = list(self.ancestors())
        oldest = ancestors[-1] if ancestors else None
        return Lineage(
            frozenset(s.snapshot_id for s in ancestors),
            frozenset(self.snapshots),
            None if oldest is None else oldest.timestamp_ms,
            oldest is None or oldest.parent_id is None,
        )

    def snapshot(self, table: str, snapshot_id: int) -> SnapshotInfo:
        found = self.snapshots.get(int(snapshot_id))
        if found is None:
            raise StateError(f"snapshot {snapshot_id} of {table} no longer exists")
        return found

    def committed_at(self, table: str, snapshot_id: int) -> datetime:
        return utc(self.snapshot(table, snapshot_id).timestamp_ms)

    def commit_properties(self, table: str, snapshot_id: int) -> dict[str, str]:
        return self.snapshot(table, snapshot_id).properties

    def summary(self) -> dict[str, str]:
        """The current snapshot's summary ({} without one)."""
        current = None if self.current is None else self.snapshots.get(self.current)
        return {} if current is None else current.summary

    def published(self) -> dict[str, int]:
        """The batches the lineage carries (`published_in`)."""
        return published_in(self.ancestors())

    def state(self, snapshot_id: int) -> VersionState:
        if int(snapshot_id) not in self.snapshots:
            return "expired"
        if any(s.snapshot_id == int(snapshot_id) for s in self.ancestors()):
            return "current-lineage"
        return "off-lineage"


def snapshot_info(spark: SparkSession, snapshot: Any) -> SnapshotInfo:
    """A snapshot (Iceberg's Java object) as lakefresh reads it, its summary in one call as JSON
    (Iceberg's own mapper): a walk of the summary's Java map through Py4J costs a round trip per
    entry, and ends in an exception (Py4J's end of iteration) that PySpark converts at a further
    cost. Not `SnapshotParser.toJson`: it reads the manifests of a snapshot without a manifest
    list (a format-version 1 table's oldest ones)."""
    mapper = java_class(spark, "org.apache.iceberg.util.JsonUtil").mapper()
    summary = json.loads(str(mapper.writeValueAsString(snapshot.summary())))
    parent = snapshot.parentId()
    operation = snapshot.operation()
    return SnapshotInfo(
        int(snapshot.snapshotId()),
        None if parent is None else int(parent),
        int(snapshot.timestampMillis()),
        None if operation is None else str(operation),
        {str(k): str(v) for k, v in summary.items()},
    )


def batch_ids(summary: Any) -> tuple[str, ...]:
    """The batches a snapshot carries, oldest first: the one it was staged with (`wap.id`, or
    `published-wap-id` once cherry-picked onto a moved table), after the earlier batches of its
    backlog group when it is a group commit (GROUP_PROPERTY, a JSON list)."""
    batch_id = summary.get("published-wap-id") or summary.get("wap.id")
    if batch_id is None:
        return ()
    group = summary.get(GROUP_PROPERTY)
    earlier = [str(b) for b in json.loads(str(group))] if group else []
    return (*earlier, str(batch_id))


def published_in(ancestors: Iterable[SnapshotInfo], since: int | None = None) -> dict[str, int]:
    """Batch id -> snapshot id of the batches these snapshots carry (a lineage, newest first);
    with `since`, only those after that snapshot (the walk stops there)."""
    out: dict[str, int] = {}
    for snapshot in ancestors:
        if since is not None and snapshot.snapshot_id == since:
            break
        for batch_id in reversed(batch_ids(snapshot.summary)):
            out.setdefault(batch_id, snapshot.snapshot_id)
    return out


def utc(millis: int) -> datetime:
    """A commit time in epoch milliseconds as a naive UTC datetime."""
    return datetime.fromtimestamp(millis / 1000, UTC).replace(tzinfo=None)


def snapshot_commit(table: str, snapshot: SnapshotInfo) -> StagedCommit:
    """A snapshot as a staged commit, its numbers from the snapshot's summary: the live records
    are the data rows minus the position-deleted rows."""
    summary = snapshot.summary
    total = int(summary.get("total-records", "0")) - int(summary.get("total-position-deletes", "0"))
    return StagedCommit(
        table,
        summary.get("wap.id", ""),
        snapshot.snapshot_id,
        snapshot.parent_id,
        live_records=total,
        files_written=int(summary.get("added-data-files", "0")),
        bytes_written=int(summary.get("added-files-size", "0")),
        properties={k: v for k, v in summary.items() if k.startswith("lakefresh.")},
        batches=batch_ids(summary),
    )
