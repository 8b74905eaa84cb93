"""Delta Lake on Spark: exactly-once batch commits with Delta's own mechanisms.

Tables are named by path, `delta.`<root>/<namespace>/<table>`` (the root is the catalog's
warehouse), so they need no metastore: Delta's catalog can only be Spark's session catalog.

**A batch's commit.** Delta has no staged commits: a write commits at once. Each of lakefresh's
writes carries, in the same commit,

- the batch in the commit's `userMetadata` (a JSON object: `lakefresh.batch`, and the batch's
  `lakefresh.*` properties: its record, a backlog group's earlier batches), so the table's history
  says which batches it holds, as an Iceberg lineage does, and the log can be rebuilt from it;
- an idempotent-write transaction of the table's one application, `lakefresh` (`txnAppId`;
  `txnVersion` one more than the table last recorded for it): two of lakefresh's writes to one
  table that overlap (two runs at once) cannot both commit. Delta's conflict check refuses the
  second, or Delta skips it if the first committed before it began; either way its batch is
  staged again (CommitConflictError), where the runner finds what the other run published. Without
  it, two blind appends (a batch and a backlog group holding it) would both commit.

**The audit** runs on the committed version. A batch that fails it, or fails after its write, is
undone at once by `RESTORE` to the version before its attempt (`undo_since`), schema included.
So the guarantees differ from Iceberg's in one point: a reader between such a commit and its undo
(seconds) sees the batch. Atomicity and exactly-once are the same: a crash after the commit leaves
a batch the next run finds in the history and records, as after an Iceberg publish.

**The lineage** is the history read newest first, where a `RESTORE` to version v continues at v:
the versions it undid are retained but off the lineage (rolled back), and `roll_back_to` is a
`RESTORE`. Delta's version numbers are the seam's versions; a table with no data commit yet has no head.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from lakefresh.errors import CommitConflictError, ConfigError, StateError
from lakefresh.lakehouse.backend import (
    Commit,
    Layout,
    Lineage,
    StagedCommit,
    TableBackend,
    VersionState,
    with_settings,
)
from lakefresh.lakehouse.delta import rs_log
from lakefresh.lakehouse.delta.log import (
    BATCH_KEY,
    ROW_OPERATIONS,
    CommitFile,
    Version,
    VersionLog,
    change_feed,
    checksum_of,
    entries_after,
    history,
    lineage,
    published_in,
    records_in,
)
from lakefresh.lakehouse.delta.upkeep import DeltaUpkeep
from lakefresh.lakehouse.delta.writes import DeltaWrites
from lakefresh.lakehouse.evolution import Widenings, align
from lakefresh.lakehouse.failures import chain, conflict_raised_as, rows_replaced_first
from lakefresh.lakehouse.jvm import java_class
from lakefresh.lakehouse.literals import empty_rows, literal_rows
from lakefresh.lakehouse.sql import properties_sql, quote
from lakefresh.lakehouse.storage import HadoopStorage, Storage, local_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from lakefresh.lakehouse.delta.upkeep import DeltaUpkeepHost
    from lakefresh.lakehouse.delta.writes import DeltaWritesHost
    from lakefresh.lakehouse.merge import SqlWritesHost

USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
TXN_VERSION = "spark.databricks.delta.write.txnVersion"
TXN_APP = "lakefresh"  # one idempotent-write application per table: its writes are serialized
# The idempotent-write application of `replace_rows`, and the key of its token in the metadata.
ROWS_APP = "lakefresh.rows"
ROWS_KEY = "lakefresh.rows"
# A new target keeps its change feed (the `changes` of a downstream reader, `table_changes`).
CREATE_PROPERTIES = {"delta.enableChangeDataFeed": "true"}
# lakefresh's write mode as Delta's: merge-on-read is deletion vectors.
MERGE_ON_READ = {"delta.enableDeletionVectors": "true"}
COPY_ON_WRITE = {"delta.enableDeletionVectors": "false"}
# At most this many commits since the history was last read are read from their files, one by
# one; more, and DESCRIBE HISTORY reads the history whole
HISTORY_READ_AHEAD = 32
# A log of fewer commits than this is read from its files the first time too (one by one: a
# longer log goes to DESCRIBE HISTORY)
YOUNG_LOG = 10
WIDENINGS = Widenings("Delta Lake", frozenset())  # type widening is a table feature: not assumed


class DeltaBackend(DeltaUpkeep, DeltaWrites):
    """The Delta Lake implementation of :class:`lakefresh.lakehouse.backend.TableBackend`."""

    def __init__(self, spark: SparkSession, root: str) -> None:
        self.spark = spark
        self.root = root.rstrip("/")
        self._histories: dict[str, tuple[tuple[int, int], list[Version]]] = {}
        self._counts: dict[tuple[str, int, int], int] = {}

    # --- names and DDL -----------------------------------------------------------------------

    def location(self, table: str) -> str:
        """`<root>/<namespace>/<table>`; with no root, `table` is the location itself (a Delta
        table lakefresh reads by path: the `delta_changes` source)."""
        return f"{self.root}/{table.replace('.', '/')}" if self.root else table

    def qualified(self, table: str) -> str:
        return f"delta.{quote(self.location(table))}"

    def exists(self, table: str) -> bool:
        tables = java_class(self.spark, "io.delta.tables.DeltaTable")
        return bool(tables.isDeltaTable(self.spark._jsparkSession, self.location(table)))

    def create(self, table: str, schema: StructType, layout: Layout, staged_commits: bool = True) -> None:
        """Create the table with its change feed on; lakefresh's merge-on-read write mode becomes
        deletion vectors. The table's own properties are Delta's, or Iceberg's `write.*` ones
        (a pipeline's defaults serve both formats), which are left out."""
        _without_write_order(table, layout)
        own = {k: v for k, v in layout.properties.items() if not k.startswith("write.")}
        props = {**CREATE_PROPERTIES, **_mode_properties(layout), **own}
        columns = ", ".join(f"{quote(f.name)} {f.dataType.simpleString()}" for f in schema.fields)
        ddl = f"CREATE TABLE IF NOT EXISTS {self.qualified(table)} ({columns}) USING delta"
        if layout.partition_by:
            ddl += f" PARTITIONED BY ({', '.join(quote(c) for c in layout.partition_by)})"
        self.spark.sql(f"{ddl} TBLPROPERTIES ({properties_sql(props)})")

    def lay_out(self, table: str, layout: Layout) -> list[str]:
        _without_write_order(table, layout)
        wanted = _mode_properties(layout)
        found = self.properties(table)
        if any(found.get(k, "false") != v for k, v in wanted.items()):
            self.set_properties(table, wanted)
            return ["write_mode"]
        return []

    def take_over(self, table: str, layout: Layout) -> None:
        """Its change feed on, the layout's write mode and properties (every Delta commit can be
        lakefresh's: nothing to enable for its writes)."""
        _without_write_order(table, layout)
        self.set_properties(table, {**CREATE_PROPERTIES, **_mode_properties(layout), **layout.properties})

    def log_table_properties(self) -> dict[str, str]:
        """Control tables on Delta: no change feed (nothing reads one), and a status update
        writes a deletion vector instead of rewriting its file."""
        return {"delta.enableChangeDataFeed": "false", **MERGE_ON_READ}

    def drop(self, table: str) -> None:
        self._histories.pop(table, None)
        path = java_class(self.spark, "org.apache.hadoop.fs.Path")(self.location(table))
        path.getFileSystem(self.spark.sparkContext._jsc.hadoopConfiguration()).delete(path, True)

    def schema(self, table: str) -> StructType:
        return self.read(table).schema

    def properties(self, table: str) -> dict[str, str]:
        rows = self.spark.sql(f"SHOW TBLPROPERTIES {self.qualified(table)}").collect()
        return {r["key"]: r["value"] for r in rows}

    def set_properties(self, table: str, properties: dict[str, str]) -> None:
        props = {k: v for k, v in properties.items() if not k.startswith("write.")}
        if props:
            self.spark.sql(f"ALTER TABLE {self.qualified(table)} SET TBLPROPERTIES ({properties_sql(props)})")

    def drop_columns(self, table: str, columns: list[str]) -> None:
        """Delta drops columns only under column mapping: a failed attempt's columns go with
        its `undo_since` (RESTORE brings the schema back too)."""

    def align(self, table: str, df: DataFrame, keep: tuple[str, ...] = ()) -> DataFrame:
        return align(self.spark, table, self.qualified(table), df, keep, WIDENINGS)

    # --- history and lineage ---------------------------------------------------------------------

    def _history(self, table: str) -> list[Version]:
        """The table's retained history, newest first. DESCRIBE HISTORY is two Spark jobs (about
        0.2 s) and a batch asks its lineage about eight questions, so the answer is kept with
        the log's latest version and its time (a look-up in the log, no job): any commit, this
        process's or another's, moves them. Then the few commits since are read from their
        files and put before the entries kept (`_history_since`). A young table's history (a
        log of fewer than YOUNG_LOG commits) is read from its files the first time too; a
        file cleaned up already sends the read to DESCRIBE HISTORY."""
        latest = self._latest(table)
        kept = self._histories.get(table)
        if latest is not None and kept is not None and kept[0] == latest:
            return kept[1]
        entries = None if latest is None else self._history_since(table, kept and kept[1], latest[0])
        if entries is None:
            entries = history(self.spark, self.qualified(table))
        if latest is not None:
            self._histories[table] = (latest, entries)
        return entries

    def _history_since(self, table: str, kept: list[Version] | None, newest: int) -> list[Version] | None:
        """The history `kept` had, with the commits after its newest entry up to version `newest`
        before it, read from their files (no job); with nothing kept, a young log's commits from
        version 0. None when there are many of them, a file is not at hand, or the first file is
        not the kept entry's commit (`entries_after`)."""
        if kept:
            previous, first = kept[0], kept[0].version
            if not 0 < newest - first <= HISTORY_READ_AHEAD:
                return None
        else:
            previous, first = None, 0
            if newest >= YOUNG_LOG:
                return None
        files = self._commit_files(table, first, newest)
        found = None if files is None else entries_after(previous, files)
        return None if found is None else found + (kept or [])

    def _commit_files(self, table: str, first: int, last: int) -> list[CommitFile] | None:
        """The commit files of versions `first` to `last`, through the log's file system
        (`_log_files`); None when one is not there (a log whose commits a catalog keeps
        elsewhere)."""
        storage = self._log_files()
        out = []
        for version in range(first, last + 1):
            file = f"{self.location(table)}/_delta_log/{version:020d}.json"
            try:
                out.append(CommitFile(version, storage.modified_millis(file), storage.read_text(file)))
            except Exception as exc:
                if self._not_read(exc):
                    return None
                raise
        return out

    def _log_files(self) -> Storage:
        """The file system the log's commit files are read through: Hadoop's, the storage Spark
        reads the table from."""
        return HadoopStorage(self.spark)

    @staticmethod
    def _not_read(exc: BaseException) -> bool:
        """Whether a commit file's read failed because the file is not there."""
        return any(x.name == "FileNotFoundException" for x in chain(exc))

    def _latest(self, table: str) -> tuple[int, int] | None:
        """(version, commit time) of the table's newest commit, None when it has none."""
        snapshot = self._snapshot(table)
        version = int(snapshot.version())
        return None if version < 0 else (version, int(snapshot.timestamp()))

    def _snapshot(self, table: str) -> Any:
        """The log's newest snapshot (DeltaLog.update: a look-up in the log, no job)."""
        return self._delta_log(table).update(False, self._none(), self._none())

    def _delta_log(self, table: str) -> Any:
        return java_class(self.spark, "org.apache.spark.sql.delta.DeltaLog").forTable(
            self.spark._jsparkSession, self.location(table)
        )

    def _none(self) -> Any:
        return java_class(self.spark, "scala.Option").empty()

    def _lineage(self, table: str) -> list[Version]:
        return lineage(self._history(table))

    def head(self, table: str) -> int | None:
        return VersionLog(self._history(table)).head()

    def latest(self, table: str) -> int | None:
        """The log's newest version (a look-up in the log, no job, no history)."""
        found = self._latest(table)
        return None if found is None else found[0]

    def follows(self, table: str, marker: int | None) -> int | None:
        found = self.latest(table)  # versions are consecutive: the next one is the only one
        expected = 0 if marker is None else marker + 1  # None: no table yet, its first version
        return found if found == expected else None

    def lineage(self, table: str) -> Lineage:
        return VersionLog(self._history(table)).view()

    def published_batches(self, table: str, since: int | None = None) -> dict[str, int]:
        return published_in(self._lineage(table), since)

    def commits_after(self, table: str, version: int | None, limit: int | None = None) -> list[Commit]:
        out: list[Commit] = []
        for entry in self._lineage(table):
            if entry.version == version or (limit is not None and len(out) == limit):
                return out
            batches = entry.batches
            operation = ROW_OPERATIONS.get(entry.operation, "replace")
            if entry.operation == "WRITE" and entry.parameters.get("mode") == "Overwrite":
                operation = "overwrite"
            out.append(
                Commit(entry.version, batches[-1] if batches else None, operation, batches, entry.properties)
            )
        if version is None:
            return out
        raise StateError(f"version {version} is not in the lineage of {table}")

    def roll_back_to(self, table: str, version: int) -> None:
        self.spark.sql(f"RESTORE TABLE {self.qualified(table)} TO VERSION AS OF {int(version)}")

    def _entry(self, table: str, version: int) -> Version:
        return VersionLog(self._history(table)).entry(table, version)

    def committed_at(self, table: str, version: int) -> datetime:
        return VersionLog(self._history(table)).committed_at(table, version)

    def version_state(self, table: str, version: int) -> VersionState:
        return VersionLog(self._history(table)).state(version)

    def live_records(self, table: str, version: int) -> int:
        """Answered from the files' statistics, once per version (a batch's count is the next
        batch's parent count): when the version is the newest, from its checksum if that lists
        the table's files (no job); else by a bare count, which Delta plans from the same
        statistics after replaying the log (0.2-0.9 s on a small table)."""
        key = (table, version, self._entry(table, version).millis)
        if key not in self._counts:
            self._counts = {k: v for k, v in self._counts.items() if k[0] != table}  # one per table
            counted = self._records(table, version)
            if counted is None:
                counted = int(self.read(table, version).count())
            self._counts[key] = counted
        return self._counts[key]

    def _records(self, table: str, version: int) -> int | None:
        """The version's rows from its checksum without a job, or None (then counted)."""
        return records_in(self._checksum(table, version))

    def _checksum(self, table: str, version: int) -> Any:
        """The checksum of `version` when it is the newest and has one; else None."""
        snapshot = self._snapshot(table)
        return checksum_of(snapshot) if int(snapshot.version()) == version else None

    # --- a batch's commit --------------------------------------------------------------------

    def _txn_version(self, table: str, app_id: str) -> int:
        """The version the table last recorded for this idempotent-write application, or -1. A
        replay of the log, which the write repeats for its own check of the same transaction
        (from the same cached state): answering it from the checksum would save no time."""
        found = self._snapshot(table).transactions().get(app_id)
        return int(found.get()) if found.isDefined() else -1

    def stage(
        self,
        table: str,
        batch_id: str,
        write: Callable[[], None],
        properties: dict[str, str] | None = None,
    ) -> StagedCommit:
        """The write commits at once, with the batch in its metadata and transaction."""
        parent = self.head(table)
        metadata = {BATCH_KEY: batch_id, **(properties or {})}
        version = self._txn_version(table, TXN_APP) + 1
        settings = {
            USER_METADATA: json.dumps(metadata, sort_keys=True),
            TXN_APP_ID: TXN_APP,
            TXN_VERSION: str(version),
        }

        def committed() -> Version | None:
            write()
            found = self._commit_of(table, batch_id, parent)
            if found is None and self._txn_version(table, TXN_APP) >= version:
                raise CommitConflictError(  # Delta skipped the write: another run's came first
                    f"another run committed to {table} as batch {batch_id!r} was written; it is staged again"
                )
            if found is None:  # the write changed nothing and committed nothing
                empty = empty_rows(self.spark, self.schema(table))
                empty.write.format("delta").mode("append").save(self.location(table))
                found = self._commit_of(table, batch_id, parent)
            return found

        # Delta's check refused it: nothing was committed
        with conflict_raised_as(
            f"another run committed to {table} as batch {batch_id!r} was written; it is staged again"
        ):
            found = with_settings(self.spark, settings, committed)
        if found is None:
            raise StateError(f"the write of batch {batch_id!r} to {table} left no commit")
        metrics = found.metrics
        files = metrics.get("numTargetFilesAdded") or metrics.get("numFiles") or "0"
        size = metrics.get("numTargetBytesAdded") or metrics.get("numOutputBytes") or "0"
        return StagedCommit(
            table,
            batch_id,
            found.version,
            parent,
            live_records=self.live_records(table, found.version),
            files_written=int(files),
            bytes_written=int(size),
            properties={k: str(v) for k, v in metadata.items() if k.startswith("lakefresh.")},
            batches=found.batches,
        )

    def _commit_of(self, table: str, batch_id: str, parent: int | None) -> Version | None:
        for entry in self._lineage(table):
            if entry.version == parent:
                return None
            if batch_id in entry.batches:
                return entry
        return None

    # --- a small control table rewritten whole -------------------------------------------------

    def read_rows(self, table: str) -> tuple[int | None, list[dict[str, Any]]]:
        """The rows of the newest version, and the marker: the version of ROWS_APP's idempotent
        writes that version holds (-1: none yet). A table on this machine's file system is read
        by delta-rs, both from one replay of its log and without a Spark job (the `leases`
        table is read twice a run); elsewhere through Delta's Java API and a Spark read."""
        location = self.location(table)
        if local_path(location) is not None:
            return rs_rows(rs_log.load(location))
        snapshot = self._snapshot(table)
        found = snapshot.transactions().get(ROWS_APP)
        marker = int(found.get()) if found.isDefined() else -1
        version = int(snapshot.version())
        if version < 0:
            return marker, []
        return marker, [r.asDict(recursive=True) for r in self.read(table, version).collect()]

    def replace_rows(
        self, table: str, rows: list[dict[str, Any]], schema: StructType, since: int | None
    ) -> None:
        """An overwrite made as ROWS_APP's idempotent write number `since + 1`: Delta skips it
        when the table already holds that number (a writer that read the same state came
        first: its token is then not in the history) and refuses it when such a write commits
        during it (ConcurrentTransactionException; the overwrite also reads every file, so a
        concurrent write that adds or removes one conflicts). Every write of the table but its
        creation and properties goes through here, so the number moves with every change."""
        token = uuid.uuid4().hex
        before = self.latest(table)
        # writer options, not session settings: the run's own writes go on in other threads
        writer = (
            literal_rows(self.spark, rows, schema)
            .write.format("delta")
            .mode("overwrite")
            .option("userMetadata", json.dumps({ROWS_KEY: token}))
            .option("txnAppId", ROWS_APP)
            .option("txnVersion", str((-1 if since is None else since) + 1))
        )
        with conflict_raised_as(rows_replaced_first(table)):
            writer.save(self.location(table))
        written = [v for v in self._history(table) if before is None or v.version > before]
        if not any(v.metadata.get(ROWS_KEY) == token for v in written):
            raise CommitConflictError(rows_replaced_first(table))

    def commit_properties(self, table: str, version: int) -> dict[str, str]:
        return self._entry(table, version).properties

    def with_properties(self, table: str, properties: dict[str, str], write: Callable[[], None]) -> None:
        with_settings(self.spark, {USER_METADATA: json.dumps(properties, sort_keys=True)}, write)

    def commits_at_once(self, table: str) -> bool:
        return True

    def checks_appends(self, table: str) -> bool:
        return False

    def undo_since(self, table: str, head: int | None, batch_id: str) -> None:
        lineage = self._lineage(table) if self.exists(table) else []
        if not lineage:
            return
        target = head if head is not None else lineage[-1].version  # no data yet: its creation
        if lineage[0].version == target:
            return  # nothing of the attempt's is visible
        later = self.commits_after(table, head)
        foreign = [
            c
            for c in later
            if c.batch_id not in (None, batch_id) or (c.batch_id is None and c.operation != "replace")
        ]
        if foreign:
            raise CommitConflictError(
                f"{table} has commits of another writer after batch {batch_id!r} began; its own "
                "commit is left as it is"
            )
        self.roll_back_to(table, target)

    def replace_table(self, table: str, df: DataFrame, batch_id: str, partition_by: list[str]) -> int:
        """An overwrite with `overwriteSchema` (Delta's own way to replace a table's schema and
        partitioning with its rows, one commit that keeps the table's properties and history),
        made as a batch's commit is (`stage`)."""

        def write() -> None:
            writer = df.write.format("delta").mode("overwrite").option("overwriteSchema", "true")
            writer.partitionBy(*partition_by).save(self.location(table))

        return self.stage(table, batch_id, write).version

    def publish(self, staged: StagedCommit) -> int:
        """The commit is visible since `stage`: publishing checks it is still in the lineage, and
        that no other commit since its parent holds a batch it carries."""
        published = self.published_batches(staged.table, since=staged.parent_version)
        if (done := staged.published_already(published)) is not None:
            return done
        raise CommitConflictError(
            f"the commit of batch {staged.batch_id!r} is no longer in the lineage of {staged.table}"
        )

    # --- reads and writes --------------------------------------------------------------------

    def read(self, table: str, version: int | None = None) -> DataFrame:
        reader = self.spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", str(version))
        return reader.load(self.location(table))

    def changes(self, table: str, start: int | None, end: int, keys: list[str]) -> DataFrame:
        """Delta's change data feed (see :func:`lakefresh.lakehouse.delta.log.change_feed`)."""
        return change_feed(self.spark, self.location(table), self._lineage(table), start, end, keys)

    def carries_commit_properties(self, table: str | None = None) -> bool:
        return True


def _without_write_order(table: str, layout: Layout) -> None:
    """A Delta table has no write order: a layout with one is refused."""
    if layout.sort_by:
        raise ConfigError(f"{table}: sort_by is Iceberg's write order; a Delta table has none")


def _mode_properties(layout: Layout) -> dict[str, str]:
    """A layout's write mode as Delta's properties (none without one)."""
    if layout.write_mode is None:
        return {}
    return dict(MERGE_ON_READ if layout.write_mode == "merge-on-read" else COPY_ON_WRITE)


# mypy proves the seam here: DeltaBackend has every member of TableBackend, with compatible types,
# and every member its base classes need of their host.
_CONFORMS: type[TableBackend] = DeltaBackend
_UPKEEP_HOST: type[DeltaUpkeepHost] = DeltaBackend
_WRITES_HOST: type[DeltaWritesHost] = DeltaBackend
_SQL_WRITES_HOST: type[SqlWritesHost] = DeltaBackend


def rs_rows(found: Any) -> tuple[int, list[dict[str, Any]]]:
    """`read_rows` from delta-rs's replay of a table's log (None: no table): ROWS_APP's
    idempotent-write version and the version's rows."""
    marker = rs_log.transaction_version(found, ROWS_APP)
    if found is None or found.version() < 0:
        return marker, []
    return marker, rs_log.rows(found)
