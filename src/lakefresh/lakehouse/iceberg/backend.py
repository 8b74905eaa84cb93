"""Iceberg on Spark: DDL, schema evolution, MERGE, time travel and write-audit-publish.

Write-audit-publish (verified on Spark 3.5 + Iceberg 1.10): with `write.wap.enabled=true` on the
table and `spark.wap.id=<batch id>` in the session, any write commits a *staged* snapshot whose
summary carries `wap.id`; readers keep seeing the current snapshot until it is published (below).
So the target's own lineage records which batches it holds, and the control tables are a log that
can be rebuilt from it.

The publish is a compare-and-swap of the table's main branch, not Iceberg's cherry-pick:
:meth:`IcebergBackend.publish` checks the lineage for every batch the staged commit carries, then
commits "main: parent -> staged snapshot" on the table metadata it checked, with no retry. A commit
of another writer that lands in between makes the catalog refuse it (CommitConflictError: the
batch is staged again). Cherry-pick would not do: its commit retries on the newer metadata, where
a staged *append* is re-applied on top of the other writer's commit (a batch that writer had
published already would be in the table twice), and it does not check whether the same batch was
published already.

Not every write honours `spark.wap.id`: a `DELETE FROM` that Iceberg can answer by dropping whole
files (a metadata-only delete) commits directly. Strategies therefore write only through MERGE,
append and overwrite, which always go through Iceberg's Spark writer and are staged.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

from lakefresh.errors import CommitConflictError, StateError
from lakefresh.lakehouse.backend import (
    Commit,
    Layout,
    Lineage,
    StagedCommit,
    TableBackend,
    VersionState,
    with_settings,
)
from lakefresh.lakehouse.evolution import Widenings, align
from lakefresh.lakehouse.failures import conflict_raised_as, is_commit_conflict, rows_replaced_first
from lakefresh.lakehouse.iceberg.catalog import IcebergCatalog
from lakefresh.lakehouse.iceberg.log import (
    SnapshotInfo,
    batch_ids,
    changelog,
    published_in,
    snapshot_commit,
    snapshot_info,
    utc,
)
from lakefresh.lakehouse.iceberg.procedures import IcebergUpkeep
from lakefresh.lakehouse.iceberg.rows import (
    NotReadable,
    NotWritable,
    append_rows,
    expire_snapshots,
    read_rows,
    replace_rows,
)
from lakefresh.lakehouse.jvm import java_class
from lakefresh.lakehouse.literals import literal_rows
from lakefresh.lakehouse.merge import SqlWrites
from lakefresh.lakehouse.sql import properties_sql, qualified_name, quote, sql_literal

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from lakefresh.lakehouse.iceberg.procedures import IcebergUpkeepHost
    from lakefresh.lakehouse.merge import SqlWritesHost

# A small table rewritten whole by every write (`replace_rows`) keeps this many snapshots.
REWRITTEN_KEEP_SNAPSHOTS = 20
WAP_PROPERTIES = {"write.wap.enabled": "true", "format-version": "2"}
SORT_PROPERTY = "lakefresh.sort-by"  # the `sort_by` terms last given to `_order`
# a write mode is Iceberg's mode of each of its row-level operations
MODE_PROPERTIES = ("write.merge.mode", "write.update.mode", "write.delete.mode")
DISTRIBUTION_PROPERTY = "write.distribution-mode"

# The control tables (`TableBackend.log_table_properties`). Status updates touch one row:
# merge-on-read writes a small delete file instead of a rewrite. The tables are small: no shuffle
# to distribute what is written. Old metadata files are deleted as commits go (every batch commits
# to `batches` twice).
#
# Many pipelines may share one catalog's control tables, each writing only the rows of its own
# tables: snapshot isolation, so another pipeline's appends never invalidate an update, and more
# commit retries (Iceberg re-applies an append or an update on the new metadata). A conflict that
# still surfaces (a compaction removed the file an update points at) is retried with backoff by
# every write to them (`retry_conflicts`). This needs a catalog with atomic commits (JDBC, Hive,
# REST, Glue, Nessie): the Hadoop catalog's file-rename commits are not safe for concurrent writers.
LOG_TABLE_PROPERTIES = {
    "write.metadata.delete-after-commit.enabled": "true",
    "write.metadata.previous-versions-max": "20",
    "write.update.mode": "merge-on-read",
    "write.delete.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
    "write.distribution-mode": "none",
    "write.update.distribution-mode": "none",
    "write.delete.distribution-mode": "none",
    "write.merge.distribution-mode": "none",
    "write.update.isolation-level": "snapshot",
    "write.delete.isolation-level": "snapshot",
    "write.merge.isolation-level": "snapshot",
    "commit.retry.num-retries": "10",
    "commit.retry.min-wait-ms": "50",
    "commit.retry.max-wait-ms": "2000",
}

# Type changes Iceberg can make in place (metadata only).
WIDENINGS = Widenings("Iceberg", frozenset({("int", "bigint"), ("float", "double")}))

SNAPSHOT_PROPERTY = "spark.sql.iceberg.snapshot-property."


class IcebergBackend(IcebergUpkeep, SqlWrites):
    """The Iceberg implementation of :class:`lakefresh.lakehouse.backend.TableBackend`."""

    def __init__(self, spark: SparkSession, catalog: str) -> None:
        self.spark = spark
        self.catalog = catalog
        self._carries: bool | None = None
        self._tables = IcebergCatalog(spark, catalog)  # exists, load, schema, properties

    # --- names and DDL -----------------------------------------------------------------------

    def qualified(self, table: str) -> str:
        return qualified_name(self.catalog, *table.split("."))

    def exists(self, table: str) -> bool:
        return self._tables.exists(table)

    def _ensure_namespace(self, namespace: str) -> None:
        name = qualified_name(self.catalog, namespace)
        try:
            self.spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {name}")
        except Exception:
            # Two processes creating it at once: a JDBC catalog answers the loser with a bare
            # duplicate-key error, not "already exists". Whoever created it, it is there now.
            shown = self.spark.sql(f"SHOW NAMESPACES IN {quote(self.catalog)}").collect()
            if namespace not in {row[0] for row in shown}:
                raise

    def create(self, table: str, schema: StructType, layout: Layout, staged_commits: bool = True) -> None:
        """Create the table; with `staged_commits`, write-audit-publish is enabled on it. The
        table's own properties win over those of its write mode."""
        self._ensure_namespace(table.split(".")[0])
        columns = ", ".join(f"{quote(f.name)} {f.dataType.simpleString()}" for f in schema.fields)
        props = {
            **(WAP_PROPERTIES if staged_commits else {"format-version": "2"}),
            **_mode_properties(layout),
            **layout.properties,
        }
        ddl = f"CREATE TABLE IF NOT EXISTS {self.qualified(table)} ({columns}) USING iceberg"
        if layout.partition_by:
            ddl += f" PARTITIONED BY ({', '.join(layout.partition_by)})"
        self.spark.sql(f"{ddl} TBLPROPERTIES ({properties_sql(props)})")
        if layout.sort_by:
            self._order(table, list(layout.sort_by))

    def lay_out(self, table: str, layout: Layout) -> list[str]:
        changed = []
        wanted = _mode_properties(layout)
        found = self.properties(table)
        if any(found.get(k) != v for k, v in wanted.items()):
            self.set_properties(table, wanted)
            changed.append("write_mode")
        if layout.sort_by and self._order(table, list(layout.sort_by)):
            changed.append("sort_by")
        return changed

    def take_over(self, table: str, layout: Layout) -> None:
        """Write-audit-publish enabled (a format-version 1 table is upgraded to 2), then the
        layout's write mode, properties and write order."""
        self.set_properties(table, {**WAP_PROPERTIES, **_mode_properties(layout), **layout.properties})
        if layout.sort_by:
            self._order(table, list(layout.sort_by))

    def _order(self, table: str, sort_by: list[str]) -> bool:
        """`WRITE ORDERED BY`: Iceberg keeps the order in the table's metadata and sorts every
        write and `sort` compaction by it. The terms given are kept in a property of lakefresh's
        (Iceberg describes some transforms in other words than it takes them). Iceberg also sets
        `write.distribution-mode` to `range`; a mode set before is put back."""
        found = self.properties(table)
        wanted = ", ".join(sort_by)
        if found.get(SORT_PROPERTY) == wanted and "sort-order" in found:
            return False
        self.spark.sql(f"ALTER TABLE {self.qualified(table)} WRITE ORDERED BY {wanted}")
        kept = {SORT_PROPERTY: wanted}
        if found.get(DISTRIBUTION_PROPERTY) not in (None, "range"):
            kept[DISTRIBUTION_PROPERTY] = found[DISTRIBUTION_PROPERTY]
        self.set_properties(table, kept)
        return True

    def log_table_properties(self) -> dict[str, str]:
        return dict(LOG_TABLE_PROPERTIES)

    def drop(self, table: str) -> None:
        """Drop a table of lakefresh's own (a temporary one) with its files."""
        self.spark.sql(f"DROP TABLE IF EXISTS {self.qualified(table)} PURGE")

    def drop_columns(self, table: str, columns: list[str]) -> None:
        """Drop columns (metadata only: data files keep them, readers no longer see them)."""
        names = ", ".join(quote(c) for c in columns)
        self.spark.sql(f"ALTER TABLE {self.qualified(table)} DROP COLUMNS ({names})")

    def schema(self, table: str) -> StructType:
        return self._tables.schema(table)

    def properties(self, table: str) -> dict[str, str]:
        return self._tables.properties(table)

    def set_properties(self, table: str, properties: dict[str, str]) -> None:
        assignments = properties_sql(properties)
        self.spark.sql(f"ALTER TABLE {self.qualified(table)} SET TBLPROPERTIES ({assignments})")

    # --- schema evolution --------------------------------------------------------------------

    def align(self, table: str, df: DataFrame, keep: tuple[str, ...] = ()) -> DataFrame:
        """See :func:`lakefresh.lakehouse.evolution.align`, with the types Iceberg widens."""
        return align(self.spark, table, self.qualified(table), df, keep, WIDENINGS)

    # --- lineage and write-audit-publish -------------------------------------------------------

    def _iceberg_table(self, table: str) -> Any:
        """The table through Iceberg's Java API, loaded fresh (lakehouse/iceberg/catalog.py)."""
        return self._tables.load(table)

    def _snapshot_util(self) -> Any:
        return java_class(self.spark, "org.apache.iceberg.util.SnapshotUtil")

    def head(self, table: str) -> int | None:
        current = self._iceberg_table(table).currentSnapshot()
        return None if current is None else int(current.snapshotId())

    def latest(self, table: str) -> int | None:
        return self.head(table)  # every commit is a snapshot

    def follows(self, table: str, marker: int | None) -> int | None:
        current = self._iceberg_table(table).currentSnapshot()
        if current is None:
            return None
        parent = current.parentId()  # None: the table had no current snapshot before it
        return int(current.snapshotId()) if (None if parent is None else int(parent)) == marker else None

    def lineage(self, table: str) -> Lineage:
        iceberg = self._iceberg_table(table)
        retained = frozenset(int(s.snapshotId()) for s in iceberg.snapshots())
        walk = self._snapshot_util().currentAncestors(iceberg).iterator()
        ancestors: set[int] = set()
        oldest = None
        while walk.hasNext():
            snapshot = walk.next()
            ancestors.add(int(snapshot.snapshotId()))
            oldest = snapshot
        oldest_at = None if oldest is None else int(oldest.timestampMillis())
        whole = oldest is None or oldest.parentId() is None
        return Lineage(frozenset(ancestors), retained, oldest_at, whole)

    def _ancestors(self, table: str) -> Iterator[SnapshotInfo]:
        """The current snapshot and its retained ancestors, newest first, each read as it is
        reached (a walk that stops early reads no further)."""
        walk = self._snapshot_util().currentAncestors(self._iceberg_table(table)).iterator()
        while walk.hasNext():
            yield snapshot_info(self.spark, walk.next())

    def published_batches(self, table: str, since: int | None = None) -> dict[str, int]:
        """Batch id -> snapshot id of the batches in the current lineage, newest first; with
        `since`, only those published after that snapshot (the walk stops there, so its cost
        does not grow with the table's history)."""
        return published_in(self._ancestors(table), since)

    def commits_after(self, table: str, version: int | None, limit: int | None = None) -> list[Commit]:
        out: list[Commit] = []
        for snapshot in self._ancestors(table):
            if limit is not None and len(out) == limit:
                return out
            if snapshot.snapshot_id == version:
                return out
            batches = batch_ids(snapshot.summary)
            operation = str(snapshot.operation)
            last = batches[-1] if batches else None
            out.append(Commit(snapshot.snapshot_id, last, operation, batches, snapshot.properties))
        if version is None:
            return out
        raise StateError(f"snapshot {version} is not in the lineage of {table}")

    def roll_back_to(self, table: str, version: int) -> None:
        name = sql_literal(table)
        self.spark.sql(f"CALL {quote(self.catalog)}.system.rollback_to_snapshot({name}, {int(version)})")

    def _snapshot(self, table: str, snapshot_id: int) -> Any:
        found = self._iceberg_table(table).snapshot(int(snapshot_id))
        if found is None:
            raise StateError(f"snapshot {snapshot_id} of {table} no longer exists")
        return found

    def _snapshot_info(self, table: str, snapshot_id: int) -> SnapshotInfo:
        return snapshot_info(self.spark, self._snapshot(table, snapshot_id))

    def live_records(self, table: str, version: int) -> int:
        """From the snapshot's summary (no job)."""
        return snapshot_commit(table, self._snapshot_info(table, version)).live_records

    def committed_at(self, table: str, version: int) -> datetime:
        """When a snapshot was committed (UTC, naive)."""
        return utc(self._snapshot(table, version).timestampMillis())

    def version_state(self, table: str, version: int) -> VersionState:
        """`current-lineage` if the snapshot is the current one or one of its ancestors,
        `expired` if the table no longer has it, `off-lineage` otherwise (a rollback left it)."""
        iceberg = self._iceberg_table(table)
        if iceberg.snapshot(int(version)) is None:
            return "expired"
        current = iceberg.currentSnapshot()
        util = self._snapshot_util()
        if current is not None and util.isAncestorOf(iceberg, current.snapshotId(), int(version)):
            return "current-lineage"
        return "off-lineage"

    def changes(self, table: str, start: int | None, end: int, keys: list[str]) -> DataFrame:
        """Iceberg's changelog view of the snapshots (:func:`lakefresh.lakehouse.iceberg.log.changelog`)."""
        committed: dict[int, int] = {}
        loaded = self._iceberg_table(table)  # once: the catalog does not cache it
        snapshot = loaded.snapshot(int(end))
        while snapshot is not None and int(snapshot.snapshotId()) != start:  # end back to start
            committed[int(snapshot.snapshotId())] = int(snapshot.timestampMillis())
            parent = snapshot.parentId()
            snapshot = None if parent is None else loaded.snapshot(parent)
        return changelog(self.spark, self.catalog, table, start, end, keys, committed)

    def stage(
        self,
        table: str,
        batch_id: str,
        write: Callable[[], None],
        properties: dict[str, str] | None = None,
    ) -> StagedCommit:
        parent = self.head(table)
        # Iceberg 1.12 on adds `spark.sql.iceberg.snapshot-property.<key>` session settings to
        # the summary of every commit; earlier versions ignore them (the commit then holds none).
        settings = {
            "spark.wap.id": batch_id,
            **{SNAPSHOT_PROPERTY + k: v for k, v in (properties or {}).items()},
        }
        with_settings(self.spark, settings, write)
        return self._staged(table, batch_id, parent)

    def _staged(self, table: str, batch_id: str, parent: int | None) -> StagedCommit:
        """The snapshot the write of `batch_id` on `parent` staged. The table metadata lists
        snapshots in commit order: searched from the newest, so the cost does not grow with the
        table's history (this write's snapshot is normally the last)."""
        snapshots = self._iceberg_table(table).operations().current().snapshots()
        staged = None
        for index in range(snapshots.size() - 1, -1, -1):
            snapshot = snapshots.get(index)
            parent_id = snapshot.parentId()
            same_parent = (None if parent_id is None else int(parent_id)) == parent
            if same_parent and snapshot.summary().get("wap.id") == batch_id:
                staged = snapshot
                break
        if staged is None:
            raise StateError(
                f"the write of batch {batch_id!r} to {table} left no staged snapshot; is "
                "write.wap.enabled=true on the table?"
            )
        return snapshot_commit(table, snapshot_info(self.spark, staged))

    def commit_properties(self, table: str, version: int) -> dict[str, str]:
        return self._snapshot_info(table, version).properties

    def with_properties(self, table: str, properties: dict[str, str], write: Callable[[], None]) -> None:
        with_settings(self.spark, {SNAPSHOT_PROPERTY + k: v for k, v in properties.items()}, write)

    def commits_at_once(self, table: str) -> bool:
        return False

    def checks_appends(self, table: str) -> bool:
        return True

    def undo_since(self, table: str, head: int | None, batch_id: str) -> None:
        """Nothing to undo: a staged snapshot that is never published is never seen."""

    def publish(self, staged: StagedCommit) -> int:
        # The batches were not applied when the commit was staged on `parent_id`: if any is
        # published now, that happened after `parent_id`, so the lineage is read back to there.
        if (done := staged.published_already(self._since(staged))) is not None:
            return done
        operations = self._iceberg_table(staged.table).operations()
        base = operations.refresh()
        current = base.currentSnapshot()
        if (None if current is None else int(current.snapshotId())) != staged.parent_version:
            raise CommitConflictError(
                f"{staged.table} moved since batch {staged.batch_id!r} was staged; it is staged again"
            )
        metadata = java_class(self.spark, "org.apache.iceberg.TableMetadata")
        updated = metadata.buildFrom(base).setBranchSnapshot(staged.version, "main").build()
        try:
            operations.commit(base, updated)  # refused if the metadata is no longer `base`
        except Exception as exc:
            # The outcome of a failed commit can be unknown: trust the lineage, not the exception.
            if (done := staged.published_already(self._since(staged))) is not None:
                return done
            if is_commit_conflict(exc):
                raise CommitConflictError(
                    f"another writer committed to {staged.table} as batch {staged.batch_id!r} was "
                    "published; it is staged again"
                ) from exc
            raise
        return staged.version

    def _since(self, staged: StagedCommit) -> dict[str, int]:
        return self.published_batches(staged.table, since=staged.parent_version)

    # --- reads and writes ------------------------------------------------------------------

    def read(self, table: str, version: int | None = None) -> DataFrame:
        reader = self.spark.read.format("iceberg")
        if version is not None:
            reader = reader.option("versionAsOf", str(version))  # Spark's time travel, every line
        return reader.load(self.qualified(table).replace("`", ""))

    def append(self, table: str, df: DataFrame) -> None:
        df.writeTo(self.qualified(table)).append()

    def append_rows(
        self,
        table: str,
        rows: list[dict[str, Any]],
        schema: StructType,
        unless: tuple[int | None, str, str] | None = None,
    ) -> None:
        """Through Iceberg's Java API, without a Spark job (lakehouse/iceberg/rows.py); what
        that path cannot write, through Spark (without the `unless` check)."""
        try:
            append_rows(self.spark, self._iceberg_table(table), rows, unless)
        except NotWritable:
            self.append(table, literal_rows(self.spark, rows, schema))

    def read_rows(self, table: str) -> tuple[int | None, list[dict[str, Any]]]:
        """Through Iceberg's Java API, without a Spark job (lakehouse/iceberg/rows.py); what
        that path cannot read, through Spark."""
        iceberg = self._iceberg_table(table)
        current = iceberg.currentSnapshot()
        if current is None:
            return None, []
        snapshot = int(current.snapshotId())
        try:
            return snapshot, read_rows(self.spark, iceberg, snapshot)
        except NotReadable:
            return snapshot, self._collected(table, snapshot)

    def _collected(self, table: str, snapshot: int) -> list[dict[str, Any]]:
        """The table's rows at `snapshot` as Python values, read by Spark."""
        return [r.asDict(recursive=True) for r in self.read(table, snapshot).collect()]

    def replace_rows(
        self, table: str, rows: list[dict[str, Any]], schema: StructType, since: int | None
    ) -> None:
        """Through Iceberg's Java API (lakehouse/iceberg/rows.py): the files of snapshot `since`
        deleted and the rows' file added in one commit, which Iceberg validates against every
        commit after `since` (CommitConflictError when it refuses)."""
        iceberg = self._iceberg_table(table)
        with conflict_raised_as(rows_replaced_first(table)):
            replace_rows(self.spark, iceberg, rows, since)
        with contextlib.suppress(Exception):  # upkeep: the next write tries again
            expire_snapshots(self._iceberg_table(table), REWRITTEN_KEEP_SNAPSHOTS)

    def replace(self, table: str, df: DataFrame) -> None:
        from pyspark.sql import functions as F

        df.writeTo(self.qualified(table)).overwrite(F.lit(True))

    def replace_table(self, table: str, df: DataFrame, batch_id: str, partition_by: list[str]) -> int:
        """`REPLACE TABLE ... AS SELECT` (DataFrameWriterV2.replace): Iceberg commits the new
        schema and its rows in one metadata swap. The table keeps its properties and earlier
        snapshots (time travel to them still reads their rows), and the new snapshot starts its
        lineage anew: it has no parent, so a rollback and a change feed do not reach past it. Its
        summary carries the batch id as a staged commit's does. The partition fields are added
        after it (metadata only: the replace's own files are compacted into them later)."""
        name = self.qualified(table)
        writer = df.writeTo(name).using("iceberg").option("snapshot-property.wap.id", batch_id)
        for key, value in self.properties(table).items():
            writer = writer.tableProperty(key, value)
        writer.replace()
        for transform in partition_by:
            self.spark.sql(f"ALTER TABLE {name} ADD PARTITION FIELD {transform}")
        snapshot_id = self.published_batches(table).get(batch_id)
        if snapshot_id is None:
            raise StateError(f"the replace of {table} as {batch_id!r} left no commit in its lineage")
        return snapshot_id

    def carries_commit_properties(self, table: str | None = None) -> bool:
        """Whether a staged commit keeps the properties `stage` gives it: Iceberg 1.12 on."""
        if self._carries is None:
            version = str(java_class(self.spark, "org.apache.iceberg.IcebergBuild").version())
            numbers = tuple(int(p) for p in version.split("-")[0].split(".")[:2] if p.isdigit())
            self._carries = numbers >= (1, 12)
        return self._carries


def _mode_properties(layout: Layout) -> dict[str, str]:
    """A layout's write mode as Iceberg's properties (none without one)."""
    return {p: layout.write_mode for p in MODE_PROPERTIES} if layout.write_mode else {}


# mypy proves the seam here: IcebergBackend has every member of TableBackend, with compatible types,
# and every member its base classes need of their host.
_CONFORMS: type[TableBackend] = IcebergBackend
_UPKEEP_HOST: type[IcebergUpkeepHost] = IcebergBackend
_SQL_WRITES_HOST: type[SqlWritesHost] = IcebergBackend
