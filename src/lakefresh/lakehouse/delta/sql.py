"""Delta Lake without the driver's JVM: the road of a Spark Connect session.

:class:`DeltaSqlBackend` answers what :class:`lakefresh.lakehouse.delta.DeltaBackend` asks of
Delta's Java API and Hadoop's file system in a classic session, with what a Connect client has:

- the log's newest snapshot (`DeltaLog.update`): its version and commit time, the versions of
  the idempotent-write applications (the `txn` actions, which no SQL statement shows), its live
  files, their record counts and deletion vectors: read on this side by delta-rs
  (lakehouse/delta/rs_log.py), which replays the same `_delta_log`;
- whether a table is there (`DeltaTable.isDeltaTable`): the same, by delta-rs;
- a control table's update (`DeltaTable.updateExpr`): an UPDATE statement. The Java road avoids
  one for Iceberg 1.10's row-lineage rule (lakehouse/delta/writes.py), which fails an UPDATE of
  a Delta table in a session with Iceberg's extensions; a Connect client runs pyspark 4.1, whose
  Iceberg (1.12) plans it;
- a table dropped (Hadoop's FileSystem): its folder removed through Arrow's file systems;
- the commits since the history was read, and a young table's few commits, from their files in
  `_delta_log` (Hadoop's FileSystem): through Arrow's file systems, each commit's time the file's
  modification time as DESCRIBE HISTORY gives it.

Everything else was SQL and DataFrame options on both roads already: DESCRIBE HISTORY (the
lineage, a version's batches and metrics), RESTORE, OPTIMIZE, REORG, VACUUM, SHOW and ALTER
TBLPROPERTIES, the change data feed's reader options, a commit's `userMetadata` and its
transaction (`txnAppId`/`txnVersion`) as session settings or writer options.

Delta's own Connect client (`delta-spark`'s `delta.connect`, with the `delta-connect-server`
plugin on the server) is not used: its `DeltaTable` offers what SQL does (history, detail,
restore, vacuum, optimize, update, merge), and no version's transactions, so it would bring a
Python package and a server plugin and still leave delta-rs to read the log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lakefresh.errors import StateError
from lakefresh.lakehouse.backend import Deletes, TableBackend
from lakefresh.lakehouse.connect import is_connect
from lakefresh.lakehouse.delta import rs_log
from lakefresh.lakehouse.delta.backend import DeltaBackend, rs_rows
from lakefresh.lakehouse.sql import quote
from lakefresh.lakehouse.storage import ArrowStorage, Storage

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class DeltaSqlBackend(DeltaBackend):
    """The Delta backend of a Spark Connect session (the module's doc)."""

    def _log(self, table: str, version: int | None = None) -> Any:
        """The table's log through delta-rs, at its newest version or at `version`; None when
        there is no table."""
        return rs_log.load(self.location(table), version)

    def _snapshot(self, table: str) -> Any:
        raise StateError(f"{table}: Delta's Java API is out of reach of a Spark Connect session")

    def _delta_log(self, table: str) -> Any:
        return self._snapshot(table)

    def exists(self, table: str) -> bool:
        return rs_log.is_delta_table(self.location(table))

    def drop(self, table: str) -> None:
        self._histories.pop(table, None)
        ArrowStorage().remove_folder(self.location(table))

    def _log_files(self) -> Storage:
        """Arrow's file systems on this side (no Hadoop file system here), as the source folders
        are read on this road."""
        return ArrowStorage()

    @staticmethod
    def _not_read(exc: BaseException) -> bool:
        """Not there, or out of this side's reach (an object store whose credentials only the
        server has): DESCRIBE HISTORY reads the history then."""
        return isinstance(exc, OSError)

    def _latest(self, table: str) -> tuple[int, int] | None:
        found = self._log(table)
        if found is None:
            return None
        newest = rs_log.newest(found)
        return None if newest.version < 0 else (newest.version, newest.millis)

    def _records(self, table: str, version: int) -> int | None:
        found = self._log(table, version)
        return None if found is None else rs_log.records(found)

    def _txn_version(self, table: str, app_id: str) -> int:
        return rs_log.transaction_version(self._log(table), app_id)

    def read_rows(self, table: str) -> tuple[int | None, list[dict[str, Any]]]:
        return rs_rows(self._log(table))  # the marker and the rows of one version

    def file_count(self, table: str) -> int:
        return rs_log.file_count(self._log(table))

    def deletes(self, table: str) -> Deletes:
        found = self._log(table)
        if found is None or found.version() < 0 or not rs_log.keeps_deletion_vectors(found):
            return Deletes()
        vectors = rs_log.deletes(found)
        stored = self.live_records(table, int(found.version())) + vectors.rows
        return Deletes(vectors.files, vectors.rows, stored)

    def update(self, table: str, assignments: dict[str, str], where: str) -> None:
        """An UPDATE statement (the module's doc): the same values, SQL expressions, by column."""
        values = ", ".join(f"{quote(column)} = {value}" for column, value in assignments.items())
        self.spark.sql(f"UPDATE {self.qualified(table)} SET {values} WHERE {where}")


def delta_backend(spark: SparkSession, root: str) -> DeltaBackend:
    """The Delta backend for the session's kind: through Delta's Java API in a classic session,
    through SQL and delta-rs under Spark Connect."""
    return DeltaSqlBackend(spark, root) if is_connect(spark) else DeltaBackend(spark, root)


# mypy proves the seam here: the Connect road has every member of TableBackend too.
_CONFORMS: type[TableBackend] = DeltaSqlBackend
