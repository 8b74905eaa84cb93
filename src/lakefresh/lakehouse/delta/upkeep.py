"""Delta Lake's upkeep: what a target's readers still apply (its deletion vectors, read from the
log), compaction (`OPTIMIZE`, and `REORG ... APPLY (PURGE)` for the deletion vectors) and the
removal of files no kept version needs (`VACUUM`)."""

from __future__ import annotations

import math
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from lakefresh.clock import utc_now
from lakefresh.lakehouse.backend import Deletes
from lakefresh.lakehouse.delta.log import checksum_of, deletes_in

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakefresh.lakehouse.delta.log import Version


class DeltaUpkeepHost(Protocol):
    """What :class:`DeltaUpkeep` needs of DeltaBackend: the session, a table's name in SQL, its
    history, newest snapshot and versions' facts; and the upkeep members that call each other."""

    spark: SparkSession

    def qualified(self, table: str) -> str:
        """The table's name in SQL."""
        ...

    def _history(self, table: str) -> list[Version]:
        """The table's retained history, newest first."""
        ...

    def _snapshot(self, table: str) -> Any:
        """The log's newest snapshot (Delta's Java API)."""
        ...

    def committed_at(self, table: str, version: int) -> datetime:
        """When the version was committed."""
        ...

    def live_records(self, table: str, version: int) -> int:
        """The rows the version holds."""
        ...

    def deletes(self, table: str) -> Deletes:
        """The current version's deletion vectors and the rows they delete."""
        ...

    def _compact(self, table: str) -> int:
        """The table compacted; files rewritten."""
        ...


class DeltaUpkeep:
    """The upkeep members of :class:`lakefresh.lakehouse.delta.DeltaBackend`, its host
    (:class:`DeltaUpkeepHost`)."""

    def file_count(self: DeltaUpkeepHost, table: str) -> int:
        """The newest version's data files (DESCRIBE DETAIL's `numFiles`), from the version's
        checksum when it has one: no job, no command to plan (else from a replay of the log)."""
        snapshot = self._snapshot(table)
        if int(snapshot.version()) < 0:
            return 0
        checksum = checksum_of(snapshot)
        return int(checksum.numFiles() if checksum is not None else snapshot.numOfFiles())

    def deletes(self: DeltaUpkeepHost, table: str) -> Deletes:
        """The current version's deletion vectors and the rows they delete. A table without
        Delta's deletion-vector feature has none (no job); otherwise the version's checksum
        counts them (no job), or Delta sums them over the version's file actions (a replay of
        the log, kept with the version); the stored rows are the live ones (a count from the
        file statistics) plus those."""
        snapshot = self._snapshot(table)
        version = int(snapshot.version())
        if version < 0 or not snapshot.deletionVectorsSupported():
            return Deletes()
        counted = deletes_in(checksum_of(snapshot)) or _deletes_counted(snapshot)
        if counted is not None:
            files, deleted = counted
        else:
            from pyspark.sql import DataFrame

            actions = DataFrame(snapshot.allFiles().toDF(), self.spark)
            row = actions.selectExpr("count(deletionVector)", "sum(deletionVector.cardinality)").first()
            files, deleted = (int(row[0] or 0), int(row[1] or 0)) if row else (0, 0)
        return Deletes(files, deleted, self.live_records(table, version) + deleted)

    def maintain(
        self: DeltaUpkeepHost,
        table: str,
        compact: bool,
        expire_before: datetime | None,
        keep_versions: int,
        orphans_before: datetime | None,
    ) -> dict[str, int]:
        """OPTIMIZE (and the deletion vectors purged) for compaction; VACUUM for files no version
        since the older of the two cutoffs needs (so time travel and a change-feed reader's
        start, which set `expire_before`, keep theirs). Delta keeps its log by
        `delta.logRetentionDuration`. What was done under Iceberg's names (VACUUM does not say
        how many files it removed, nor does Delta expire versions one by one: both stay 0)."""
        done = {"rewritten_data_files": 0, "expired_snapshots": 0, "removed_orphan_files": 0}
        if compact:
            done["rewritten_data_files"] = self._compact(table)
        if expire_before is None or orphans_before is None:
            return done  # a reader still needs every version, or no removal is asked for
        oldest = min(expire_before, orphans_before)
        kept = self._history(table)[: max(keep_versions, 1)]
        if kept:
            oldest = min(oldest, self.committed_at(table, kept[-1].version))
        hours = retain_hours(utc_now(), oldest)
        self.spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
        try:
            self.spark.sql(f"VACUUM {self.qualified(table)} RETAIN {hours} HOURS")
        finally:
            self.spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
        return done

    def compact(self: DeltaUpkeepHost, table: str, keep_versions: int) -> None:
        """A small table's upkeep (the control tables' on Delta): compaction, then VACUUM with
        Delta's own retention (`delta.deletedFileRetentionDuration`, 7 days by default), so the
        files compactions replaced do not pile up. Delta keeps its log by its own retention."""
        self._compact(table)
        self.spark.sql(f"VACUUM {self.qualified(table)}")

    def _compact(self: DeltaUpkeepHost, table: str) -> int:
        """Files rewritten: every file with a deletion vector, its deletes applied (as Iceberg's
        compaction rewrites every data file with deletes; OPTIMIZE alone leaves files with few),
        then small files bin-packed."""
        rewritten = 0
        if self.deletes(table).files:
            row = self.spark.sql(f"REORG TABLE {self.qualified(table)} APPLY (PURGE)").first()
            rewritten += _files_removed(row)
        row = self.spark.sql(f"OPTIMIZE {self.qualified(table)}").first()
        return rewritten + _files_removed(row)


def _files_removed(row: Any) -> int:
    """`metrics.numFilesRemoved` of an OPTIMIZE or REORG result row."""
    if row is None or row["metrics"] is None:
        return 0
    return int(row["metrics"]["numFilesRemoved"] or 0)


def retain_hours(now: datetime, oldest: datetime) -> int:
    """VACUUM's RETAIN for files that versions since `oldest` need: whole hours, rounded up (a
    cutoff rounded down would remove files of the versions in the hour before `oldest`)."""
    return max(math.ceil((now - oldest).total_seconds() / 3600), 0)


def _deletes_counted(snapshot: Any) -> tuple[int, int] | None:
    """The deletion vectors and deleted rows Delta counts for the snapshot, or None."""
    vectors, rows = snapshot.numDeletionVectorsOpt(), snapshot.numDeletedRecordsOpt()
    return (int(vectors.get()), int(rows.get())) if vectors.isDefined() and rows.isDefined() else None
