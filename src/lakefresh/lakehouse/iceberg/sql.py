"""Iceberg through SQL alone: the road of a Spark Connect session, which has no JVM on this side.

:class:`IcebergSqlBackend` answers what :class:`lakefresh.lakehouse.iceberg.IcebergBackend` asks
of Iceberg's Java API from the table's metadata tables instead (`snapshots` and `refs`, one query
for the whole log; the current snapshot alone from the table's properties), and writes through
Iceberg's procedures and DataFrame write options:

- publish: the staged snapshot is made current with `set_current_snapshot` after checking that
  the main branch is still the staged commit's parent (and that no batch it carries was
  published meanwhile). SQL has no compare-and-swap of the branch, so a commit of another writer
  between the check and the call would leave the lineage; lakefresh's run lease keeps its own
  writers apart (a second run waits), and the check after the call refuses what it can see.
- a control table's small rewrite (`replace_rows`): an overwrite of every row validated from
  the snapshot the caller read (`validate-from-snapshot-id`, serializable isolation): Iceberg
  refuses it when any file was added or deleted since, the same compare-and-swap as the Java road.
- a control table's append (`append_rows`): Spark's append, without the Java road's check that no
  file with the same table name was added since a snapshot (the run lease keeps two runs of one
  table apart).
- table properties: SHOW TBLPROPERTIES, where Spark redacts a value that looks like a secret.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from lakefresh.errors import CommitConflictError, StateError
from lakefresh.lakehouse.backend import Lineage, StagedCommit, TableBackend, VersionState
from lakefresh.lakehouse.connect import is_connect
from lakefresh.lakehouse.failures import conflict_raised_as, rows_replaced_first
from lakefresh.lakehouse.iceberg.backend import REWRITTEN_KEEP_SNAPSHOTS, IcebergBackend
from lakefresh.lakehouse.iceberg.log import (
    SnapshotInfo,
    SnapshotLog,
    changelog,
    published_in,
    snapshot_commit,
    utc,
)
from lakefresh.lakehouse.literals import literal_rows
from lakefresh.lakehouse.sql import quote, sql_literal

if TYPE_CHECKING:
    from datetime import datetime

    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType


# the property in which Iceberg's Spark table shows its main branch's snapshot ("none": no snapshot)
CURRENT_SNAPSHOT = "current-snapshot-id"


class IcebergSqlBackend(IcebergBackend):
    """The Iceberg backend of a Spark Connect session (the module's doc)."""

    def _log(self, table: str) -> SnapshotLog:
        name = self.qualified(table)
        rows = self.spark.sql(
            "SELECT snapshot_id, parent_id, unix_millis(committed_at) AS at, operation, summary, "
            f"(SELECT max(snapshot_id) FROM {name}.refs WHERE name = 'main') AS main "
            f"FROM {name}.snapshots"
        ).collect()
        snapshots = {
            int(r["snapshot_id"]): SnapshotInfo(
                int(r["snapshot_id"]),
                None if r["parent_id"] is None else int(r["parent_id"]),
                int(r["at"]),
                r["operation"],
                {str(k): str(v) for k, v in (r["summary"] or {}).items()},
            )
            for r in rows
        }
        current = rows[0]["main"] if rows else None
        return SnapshotLog(None if current is None else int(current), snapshots)

    def _iceberg_table(self, table: str) -> Any:
        raise StateError(f"{table}: Iceberg's Java API is out of reach of a Spark Connect session")

    # --- the table's facts -------------------------------------------------------------------

    def exists(self, table: str) -> bool:
        return bool(self.spark.catalog.tableExists(f"{self.catalog}.{table}"))

    def schema(self, table: str) -> StructType:
        return self.spark.table(self.qualified(table)).schema

    def properties(self, table: str) -> dict[str, str]:
        rows = self.spark.sql(f"SHOW TBLPROPERTIES {self.qualified(table)}").collect()
        return {r["key"]: r["value"] for r in rows}

    def _summary(self, table: str) -> dict[str, str]:
        return self._log(table).summary()

    def _ordered(self, table: str) -> bool:
        return "sort-order" in self.properties(table)

    def carries_commit_properties(self, table: str | None = None) -> bool:
        """Iceberg 1.12 on, as the server's Iceberg says (`system.iceberg_version()`)."""
        if self._carries is None:
            found = self.spark.sql(f"SELECT {quote(self.catalog)}.system.iceberg_version()").first()
            version = "" if found is None else str(found[0])
            numbers = tuple(int(p) for p in version.split("-")[0].split(".")[:2] if p.isdigit())
            self._carries = numbers >= (1, 12)
        return self._carries

    # --- lineage -----------------------------------------------------------------------------

    def head(self, table: str) -> int | None:
        """The main branch's snapshot, from the properties Iceberg's Spark table shows
        (`current-snapshot-id`): a command the server answers from the table's metadata, where
        the whole log is a query of two metadata tables."""
        found = self.properties(table).get(CURRENT_SNAPSHOT, "none")
        return None if found == "none" else int(found)

    def follows(self, table: str, marker: int | None) -> int | None:
        log = self._log(table)
        current = None if log.current is None else log.snapshots.get(log.current)
        if current is None:
            return None
        return current.snapshot_id if current.parent_id == marker else None

    def lineage(self, table: str) -> Lineage:
        return self._log(table).view()

    def _ancestors(self, table: str) -> Iterator[SnapshotInfo]:
        return self._log(table).ancestors()

    def _snapshot_info(self, table: str, snapshot_id: int) -> SnapshotInfo:
        return self._log(table).snapshot(table, snapshot_id)

    def committed_at(self, table: str, version: int) -> datetime:
        return utc(self._snapshot_info(table, version).timestamp_ms)

    def version_state(self, table: str, version: int) -> VersionState:
        return self._log(table).state(version)

    def changes(self, table: str, start: int | None, end: int, keys: list[str]) -> DataFrame:
        committed: dict[int, int] = {}
        for snapshot in self._log(table).ancestors(int(end)):
            if snapshot.snapshot_id == start:
                break
            committed[snapshot.snapshot_id] = snapshot.timestamp_ms
        return changelog(self.spark, self.catalog, table, start, end, keys, committed)

    # --- write-audit-publish -----------------------------------------------------------------

    def _staged(self, table: str, batch_id: str, parent: int | None) -> StagedCommit:
        found = [
            s
            for s in self._log(table).snapshots.values()
            if s.parent_id == parent and s.summary.get("wap.id") == batch_id
        ]
        if not found:
            raise StateError(
                f"the write of batch {batch_id!r} to {table} left no staged snapshot; is "
                "write.wap.enabled=true on the table?"
            )
        return snapshot_commit(table, max(found, key=lambda s: s.timestamp_ms))

    def publish(self, staged: StagedCommit) -> int:
        log = self._log(staged.table)  # one read for both checks
        published = published_in(log.ancestors(), staged.parent_version)
        if (done := staged.published_already(published)) is not None:
            return done
        moved = f"{staged.table} moved since batch {staged.batch_id!r} was staged; it is staged again"
        if log.current != staged.parent_version:
            raise CommitConflictError(moved)
        name = sql_literal(staged.table)
        self.spark.sql(
            f"CALL {quote(self.catalog)}.system.set_current_snapshot("
            f"table => {name}, snapshot_id => {int(staged.version)})"
        ).collect()
        if self.head(staged.table) != staged.version:
            raise CommitConflictError(moved)
        return staged.version

    # --- the control tables' small writes ----------------------------------------------------

    def append_rows(
        self,
        table: str,
        rows: list[dict[str, Any]],
        schema: StructType,
        unless: tuple[int | None, str, str] | None = None,
    ) -> None:
        if rows:
            self.append(table, literal_rows(self.spark, rows, schema))

    def read_rows(self, table: str) -> tuple[int | None, list[dict[str, Any]]]:
        snapshot = self.head(table)
        if snapshot is None:
            return None, []
        return snapshot, self._collected(table, snapshot)

    def replace_rows(
        self, table: str, rows: list[dict[str, Any]], schema: StructType, since: int | None
    ) -> None:
        from pyspark.sql import functions as F

        if since is None and not rows:
            return
        writer = literal_rows(self.spark, rows, schema).writeTo(self.qualified(table))
        writer = writer.option("isolation-level", "serializable")
        if since is not None:
            writer = writer.option("validate-from-snapshot-id", str(since))
        with conflict_raised_as(rows_replaced_first(table)):
            writer.overwrite(F.lit(True))
        with contextlib.suppress(Exception):  # upkeep: the next write tries again
            self._expire(table, REWRITTEN_KEEP_SNAPSHOTS)

    def _expire(self, table: str, keep: int) -> None:
        """All but the newest `keep` snapshots expired, when the table holds twice as many."""
        if len(self._log(table).snapshots) > 2 * keep:
            self.spark.sql(
                f"CALL {quote(self.catalog)}.system.expire_snapshots(table => {sql_literal(table)}, "
                f"older_than => current_timestamp(), retain_last => {int(keep)})"
            ).collect()


def iceberg_backend(spark: SparkSession, catalog: str) -> IcebergBackend:
    """The Iceberg backend for the session's kind: through Iceberg's Java API in a classic
    session, through SQL under Spark Connect."""
    return IcebergSqlBackend(spark, catalog) if is_connect(spark) else IcebergBackend(spark, catalog)


# mypy proves the seam here: the SQL road has every member of TableBackend too.
_CONFORMS: type[TableBackend] = IcebergSqlBackend
