"""Iceberg on Spark: DDL, schema evolution, MERGE, time travel and write-audit-publish.

Write-audit-publish (verified on Spark 3.5 + Iceberg 1.10): with `write.wap.enabled=true` on the
table and `spark.wap.id=<batch id>` in the session, any write commits a *staged* snapshot whose
summary carries `wap.id`; readers keep seeing the current snapshot. `cherrypick_snapshot` publishes
it atomically (`cherrypick_snapshot`, or the same operation through the Java API). So the target's
own lineage records which batches it holds, and the control tables
are a log that can be rebuilt from it.

Cherry-pick of a staged overwrite is a fast-forward that does not check whether the same `wap.id`
was published already, and fails if the head moved: :meth:`IcebergBackend.publish` checks the
lineage itself and raises :class:`CommitConflictError` when the head moved since staging.

Not every write honours `spark.wap.id`: a `DELETE FROM` that Iceberg can answer by dropping whole
files (a metadata-only delete) commits directly. Strategies therefore write only through MERGE,
append and overwrite, which always go through Iceberg's Spark writer and are staged.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lakefresh.errors import CommitConflictError, SchemaError, StateError
from lakefresh.lakehouse.backend import Lineage, MergeClauses, StagedCommit

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructType

WAP_PROPERTIES = {"write.wap.enabled": "true", "format-version": "2"}

# Type changes Iceberg can make in place (metadata only).
WIDENINGS = {("int", "bigint"), ("float", "double")}

BROADCAST_ROWS_SETTING = "spark.lakefresh.merge.broadcastMaxRows"
DEFAULT_BROADCAST_ROWS = 1_000_000

_WAP_LOCK = threading.Lock()  # spark.wap.id is session-wide: one staged write at a time


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def sql_literal(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        return repr(value)
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


class IcebergBackend:
    """The Iceberg implementation of :class:`lakefresh.lakehouse.backend.TableBackend`."""

    def __init__(self, spark: SparkSession, catalog: str) -> None:
        self.spark = spark
        self.catalog = catalog

    # --- names and DDL -----------------------------------------------------------------------

    def qualified(self, table: str) -> str:
        return ".".join(quote(p) for p in (self.catalog, *table.split(".")))

    def exists(self, table: str) -> bool:
        return bool(self.spark.catalog.tableExists(f"{self.catalog}.{table}"))

    def ensure_namespace(self, namespace: str) -> None:
        name = f"{quote(self.catalog)}.{quote(namespace)}"
        try:
            self.spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {name}")
        except Exception:
            # Two processes creating it at once: a JDBC catalog answers the loser with a bare
            # duplicate-key error, not "already exists". Whoever created it, it is there now.
            shown = self.spark.sql(f"SHOW NAMESPACES IN {quote(self.catalog)}").collect()
            if namespace not in {row[0] for row in shown}:
                raise

    def create(
        self,
        table: str,
        schema: StructType,
        partition_by: list[str],
        properties: dict[str, str],
        wap: bool = True,
    ) -> None:
        self.ensure_namespace(table.split(".")[0])
        columns = ", ".join(f"{quote(f.name)} {f.dataType.simpleString()}" for f in schema.fields)
        props = {**(WAP_PROPERTIES if wap else {"format-version": "2"}), **properties}
        ddl = f"CREATE TABLE IF NOT EXISTS {self.qualified(table)} ({columns}) USING iceberg"
        if partition_by:
            ddl += f" PARTITIONED BY ({', '.join(partition_by)})"
        self.spark.sql(f"{ddl} TBLPROPERTIES ({_properties_sql(props)})")

    def drop(self, table: str) -> None:
        """Drop a table of lakefresh's own (a temporary one) with its files."""
        self.spark.sql(f"DROP TABLE IF EXISTS {self.qualified(table)} PURGE")

    def drop_columns(self, table: str, columns: list[str]) -> None:
        """Drop columns (metadata only: data files keep them, readers no longer see them)."""
        names = ", ".join(quote(c) for c in columns)
        self.spark.sql(f"ALTER TABLE {self.qualified(table)} DROP COLUMNS ({names})")

    def schema(self, table: str) -> StructType:
        return self.spark.table(self.qualified(table)).schema

    def properties(self, table: str) -> dict[str, str]:
        rows = self.spark.sql(f"SHOW TBLPROPERTIES {self.qualified(table)}").collect()
        return {r["key"]: r["value"] for r in rows}

    def set_properties(self, table: str, properties: dict[str, str]) -> None:
        assignments = _properties_sql(properties)
        self.spark.sql(f"ALTER TABLE {self.qualified(table)} SET TBLPROPERTIES ({assignments})")

    # --- schema evolution --------------------------------------------------------------------

    def align(self, table: str, df: DataFrame, keep: tuple[str, ...] = ()) -> DataFrame:
        """Add the batch's new columns to the table, widen types Iceberg can widen, and return the
        batch with the table's columns in the table's order (NULL where the batch lacks one),
        followed by the `keep` columns, which are not the table's."""
        from pyspark.sql import functions as F

        target = {f.name.lower(): f for f in self.schema(table).fields}
        additions: list[str] = []
        for field in df.schema.fields:
            if field.name in keep:
                continue
            existing = target.get(field.name.lower())
            if existing is None:
                additions.append(f"{quote(field.name)} {field.dataType.simpleString()}")
            elif existing.dataType.simpleString() != field.dataType.simpleString():  # not nullability
                self._reconcile_type(table, field.name, existing.dataType, field.dataType)
        if additions:
            self.spark.sql(f"ALTER TABLE {self.qualified(table)} ADD COLUMNS ({', '.join(additions)})")
        by_lower = {f.name.lower(): f.name for f in df.schema.fields}
        out = []
        for field in self.schema(table).fields:
            source = by_lower.get(field.name.lower())
            column = F.col(quote(source)) if source else F.lit(None)
            out.append(column.cast(field.dataType).alias(field.name))
        return df.select(*out, *[F.col(quote(k)) for k in keep])

    def _reconcile_type(self, table: str, column: str, current: DataType, incoming: DataType) -> None:
        from pyspark.sql.types import NullType

        pair = (current.simpleString(), incoming.simpleString())
        if isinstance(incoming, NullType) or pair in {(b, a) for a, b in WIDENINGS}:
            return  # narrower or all-null input fits the wider target column
        if pair in WIDENINGS:
            self.spark.sql(f"ALTER TABLE {self.qualified(table)} ALTER COLUMN {quote(column)} TYPE {pair[1]}")
            return
        if _castable_safely(current, incoming):
            return
        raise SchemaError(
            f"column {column!r} of {table} is {pair[0]} but the batch has {pair[1]}; "
            f"Iceberg widens only {', '.join(f'{a}->{b}' for a, b in sorted(WIDENINGS))}. "
            "Declare the column's type in the source schema, or migrate the table."
        )

    # --- lineage and write-audit-publish -------------------------------------------------------

    def _iceberg_table(self, table: str) -> Any:
        """The table through Iceberg's Java API, loaded fresh: lineage questions are answered
        from its metadata in milliseconds, without a Spark job."""
        jvm = self.spark.sparkContext._jvm
        return jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(  # type: ignore[union-attr]
            self.spark._jsparkSession, f"{self.catalog}.{table}"
        )

    def head(self, table: str) -> int | None:
        current = self._iceberg_table(table).currentSnapshot()
        return None if current is None else int(current.snapshotId())

    def lineage(self, table: str) -> Lineage:
        iceberg = self._iceberg_table(table)
        retained = frozenset(int(s.snapshotId()) for s in iceberg.snapshots())
        jvm = self.spark.sparkContext._jvm
        walk = jvm.org.apache.iceberg.util.SnapshotUtil.currentAncestors(iceberg).iterator()  # type: ignore[union-attr]
        ancestors: set[int] = set()
        oldest = None
        while walk.hasNext():
            snapshot = walk.next()
            ancestors.add(int(snapshot.snapshotId()))
            oldest = snapshot
        oldest_at = None if oldest is None else int(oldest.timestampMillis())
        return Lineage(frozenset(ancestors), retained, oldest_at)

    def published_batches(self, table: str, since: int | None = None) -> dict[str, int]:
        """Batch id -> snapshot id of the batches in the current lineage, newest first; with
        `since`, only those published after that snapshot (the walk stops there, so its cost
        does not grow with the table's history)."""
        jvm = self.spark.sparkContext._jvm
        ancestors = jvm.org.apache.iceberg.util.SnapshotUtil.currentAncestors(  # type: ignore[union-attr]
            self._iceberg_table(table)
        ).iterator()
        out: dict[str, int] = {}
        while ancestors.hasNext():
            snapshot = ancestors.next()
            if since is not None and int(snapshot.snapshotId()) == since:
                break
            summary = snapshot.summary()
            batch_id = summary.get("published-wap-id") or summary.get("wap.id")
            if batch_id is not None:
                out.setdefault(str(batch_id), int(snapshot.snapshotId()))
        return out

    def snapshot(self, table: str, snapshot_id: int) -> StagedCommit:
        found = self._iceberg_table(table).snapshot(int(snapshot_id))
        if found is None:
            raise StateError(f"snapshot {snapshot_id} of {table} no longer exists")
        return _commit(table, found)

    def committed_at(self, table: str, snapshot_id: int) -> datetime:
        """When a snapshot was committed (UTC, naive)."""
        found = self._iceberg_table(table).snapshot(int(snapshot_id))
        if found is None:
            raise StateError(f"snapshot {snapshot_id} of {table} no longer exists")
        return _utc(found.timestampMillis())

    def snapshot_state(self, table: str, snapshot_id: int) -> str:
        """`current-lineage` if the snapshot is the current one or one of its ancestors,
        `expired` if the table no longer has it, `off-lineage` otherwise (a rollback left it)."""
        iceberg = self._iceberg_table(table)
        if iceberg.snapshot(int(snapshot_id)) is None:
            return "expired"
        jvm = self.spark.sparkContext._jvm
        current = iceberg.currentSnapshot()
        util = jvm.org.apache.iceberg.util.SnapshotUtil  # type: ignore[union-attr]
        if current is not None and util.isAncestorOf(iceberg, current.snapshotId(), int(snapshot_id)):
            return "current-lineage"
        return "off-lineage"

    def changes(self, table: str, start: int | None, end: int, keys: list[str]) -> DataFrame:
        """The table's changelog after snapshot `start` (exclusive; None: from its first) up to
        `end` (inclusive): its rows with `_change_type` (INSERT, DELETE, and with `keys`
        UPDATE_BEFORE / UPDATE_AFTER), `_change_ordinal` (the commit's order) and
        `_commit_snapshot_id`. Rows a copy-on-write commit rewrote unchanged are left out."""
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
        self.spark.sql(f"CALL {quote(self.catalog)}.system.create_changelog_view({', '.join(args)})")
        return self.spark.table(view)

    def stage(self, table: str, batch_id: str, write: Callable[[], None]) -> StagedCommit:
        parent = self.head(table)
        with _WAP_LOCK:
            self.spark.conf.set("spark.wap.id", batch_id)
            try:
                write()
            finally:
                self.spark.conf.unset("spark.wap.id")
        # The table metadata lists snapshots in commit order: search from the newest, so the cost
        # does not grow with the table's history (this write's snapshot is normally the last).
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
        return _commit(table, staged)

    def publish(self, staged: StagedCommit) -> int:
        # The batch was not applied when it was staged on `parent_id`: if it is published now,
        # that happened after `parent_id`, so the lineage is read back to there only.
        published = self.published_batches(staged.table, since=staged.parent_id)
        if staged.batch_id in published:
            return published[staged.batch_id]
        if self.head(staged.table) != staged.parent_id:
            raise CommitConflictError(
                f"{staged.table} moved since batch {staged.batch_id!r} was staged; it is staged again"
            )
        try:
            self._iceberg_table(staged.table).manageSnapshots().cherrypick(staged.snapshot_id).commit()
        except Exception:
            # The outcome of a failed commit can be unknown: trust the lineage, not the exception.
            published = self.published_batches(staged.table, since=staged.parent_id)
            if staged.batch_id in published:
                return published[staged.batch_id]
            raise
        return self.published_batches(staged.table, since=staged.parent_id)[staged.batch_id]

    # --- upkeep ----------------------------------------------------------------------------

    def file_count(self, table: str) -> int:
        """Data and delete files in the table's current snapshot, from its summary (no job)."""
        current = self._iceberg_table(table).currentSnapshot()
        if current is None:
            return 0
        summary = current.summary()
        return sum(int(summary.get(k) or 0) for k in ("total-data-files", "total-delete-files"))

    def compact(self, table: str, keep_snapshots: int) -> None:
        """Rewrite all of a (small) table's data files with its delete files applied, drop the
        delete files left dangling, then expire all but its `keep_snapshots` newest snapshots
        and the files only the expired ones used."""
        call = f"CALL {quote(self.catalog)}.system"
        self.spark.sql(
            f"{call}.rewrite_data_files(table => {sql_literal(table)}, options => map("
            "'rewrite-all', 'true', 'remove-dangling-deletes', 'true'))"
        )
        # `older_than` is required as a literal, read in the session's time zone: now
        from zoneinfo import ZoneInfo

        zone = ZoneInfo(self.spark.conf.get("spark.sql.session.timeZone") or "UTC")
        now = datetime.now(zone).strftime("%Y-%m-%d %H:%M:%S.%f")
        self.spark.sql(
            f"{call}.expire_snapshots(table => {sql_literal(table)}, "
            f"older_than => TIMESTAMP {sql_literal(now)}, retain_last => {int(keep_snapshots)})"
        )

    # --- reads and writes ------------------------------------------------------------------

    def read(self, table: str, snapshot_id: int | None = None) -> DataFrame:
        reader = self.spark.read.format("iceberg")
        if snapshot_id is not None:
            reader = reader.option("versionAsOf", str(snapshot_id))  # Spark's time travel, every line
        return reader.load(self.qualified(table).replace("`", ""))

    def append(self, table: str, df: DataFrame) -> None:
        df.writeTo(self.qualified(table)).append()

    def replace(self, table: str, df: DataFrame) -> None:
        from pyspark.sql import functions as F

        df.writeTo(self.qualified(table)).overwrite(F.lit(True))

    def broadcast_rows(self) -> int:
        """Row sets up to this size are broadcast into joins with a target."""
        return int(self.spark.conf.get(BROADCAST_ROWS_SETTING, None) or DEFAULT_BROADCAST_ROWS)

    def merge(self, table: str, source: DataFrame, clauses: MergeClauses) -> None:
        """MERGE a change set. A change set of at most `spark.lakefresh.merge.broadcastMaxRows`
        rows (default 1,000,000) is broadcast, so the target is scanned without a shuffle: a
        materialized change set has no size statistics, and Spark would otherwise sort-merge
        join it against the whole target."""
        if clauses.source_rows is not None and clauses.source_rows <= self.broadcast_rows():
            source = source.hint("broadcast")
        view = f"lakefresh_merge_source_{abs(hash((table, id(source))))}"
        source.createOrReplaceTempView(view)
        try:
            on = " AND ".join(f"t.{quote(k)} = s.{quote(k)}" for k in clauses.keys)
            sql = f"MERGE INTO {self.qualified(table)} t USING {view} s ON {on}"
            if clauses.delete_when:
                sql += f" WHEN MATCHED AND ({clauses.delete_when}) THEN DELETE"
            if clauses.update_columns:
                sets = ", ".join(f"t.{quote(c)} = s.{quote(c)}" for c in clauses.update_columns)
                cond = f" AND ({clauses.update_when})" if clauses.update_when else ""
                sql += f" WHEN MATCHED{cond} THEN UPDATE SET {sets}"
            cols = ", ".join(quote(c) for c in clauses.insert_columns)
            vals = ", ".join(f"s.{quote(c)}" for c in clauses.insert_columns)
            cond = f" AND ({clauses.insert_when})" if clauses.insert_when else ""
            sql += f" WHEN NOT MATCHED{cond} THEN INSERT ({cols}) VALUES ({vals})"
            self.spark.sql(sql)
        finally:
            self.spark.catalog.dropTempView(view)

    def delete_and_append(
        self,
        table: str,
        rows: DataFrame,
        delete_when: str | None,
        matches: DataFrame | None,
        deletes: int,
        equi_join: bool = False,
    ) -> None:
        """In one commit: delete the target rows (alias `this`) for which some row of `matches`
        (alias `input`; None: one row with no columns) makes `delete_when` true, and insert `rows`.

        One MERGE does both. Its source holds the match rows and the rows to insert; the rows to
        insert carry their values in separate columns and NULL in the match columns, so they can
        never match, and are inserted. Conditions on the target alone (a range) are pushed into
        the target scan, so only files that may hold such rows are read; of those, Spark's runtime
        group filter rewrites only the files holding a matched row.

        When `delete_when` has no equality between target and batch (`equi_join` False: a range,
        `true`, `this.day >= input.day`), the match rows are copied once per *salt* (0..n-1) and
        a target row is paired only with the copy whose salt equals a hash of the row, so the
        join still hashes instead of comparing every target row with every batch row. Spark 3.5
        cannot plan its runtime group filter over such a join when the match rows carry columns
        ("Couldn't find _lf_salt"), so in that one case the filter is off and every file the
        static pushdown selects is rewritten. With no predicted deletes, rows are appended.
        """
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        if not delete_when or deletes == 0:
            self.append(table, rows)
            return
        spark = self.spark
        if matches is None:
            matches = spark.range(1).select()
        salts = 0 if equi_join else max(1, min(64, int(spark.conf.get("spark.sql.shuffle.partitions") or 1)))
        on = f"({delete_when})"
        if salts:
            hashable = [
                quote(f.name)
                for f in self.schema(table).fields
                if not isinstance(f.dataType, T.MapType | T.ArrayType | T.StructType)
            ]
            salt_of_target = (
                f"pmod(xxhash64({', '.join('this.' + c for c in hashable)}), {salts})" if hashable else "0"
            )
            on += f" AND {salt_of_target} = input._lf_salt"
            matches = matches.crossJoin(spark.range(salts).select(F.col("id").alias("_lf_salt")))
        else:
            matches = matches.withColumn("_lf_salt", F.lit(0).cast("bigint"))
        payload = [f"_lf_ins_{i}" for i in range(len(rows.columns))]
        match_part = matches.select(
            *[F.col(quote(c)) for c in matches.columns],
            *[
                F.lit(None).cast(f.dataType).alias(p)
                for f, p in zip(rows.schema.fields, payload, strict=True)
            ],
        )
        insert_part = rows.select(
            *[F.lit(None).cast(f.dataType).alias(f.name) for f in matches.schema.fields],
            *[F.col(quote(c)).alias(p) for c, p in zip(rows.columns, payload, strict=True)],
        )
        view = f"lakefresh_replace_source_{abs(hash((table, id(rows))))}"
        # materialized: a MERGE reads its source more than once
        match_part.unionByName(insert_part).localCheckpoint(eager=True).createOrReplaceTempView(view)
        group_filter = "spark.sql.optimizer.runtime.rowLevelOperationGroupFilter.enabled"
        without_filter = bool(salts) and len(matches.columns) > 1
        try:
            if without_filter:
                spark.conf.set(group_filter, "false")
            columns = ", ".join(quote(c) for c in rows.columns)
            values = ", ".join(f"input.{p}" for p in payload)
            spark.sql(
                f"MERGE INTO {self.qualified(table)} AS this USING {view} AS input ON {on} "
                "WHEN MATCHED THEN DELETE "
                f"WHEN NOT MATCHED AND input._lf_salt IS NULL THEN INSERT ({columns}) VALUES ({values})"
            )
        finally:
            if without_filter:
                spark.conf.unset(group_filter)
            spark.catalog.dropTempView(view)


def _utc(millis: int) -> datetime:
    """A commit time in epoch milliseconds as a naive UTC datetime."""
    return datetime.fromtimestamp(millis / 1000, UTC).replace(tzinfo=None)


def _properties_sql(properties: dict[str, str]) -> str:
    return ", ".join(f"{sql_literal(k)}={sql_literal(v)}" for k, v in properties.items())


def _commit(table: str, snapshot: Any) -> StagedCommit:
    parent = snapshot.parentId()
    summary = {str(k): str(v) for k, v in dict(snapshot.summary()).items()}
    return StagedCommit(
        table,
        summary.get("wap.id", ""),
        int(snapshot.snapshotId()),
        None if parent is None else int(parent),
        summary,
    )


def _castable_safely(current: DataType, incoming: DataType) -> bool:
    """Incoming values that fit the target column without loss (e.g. int into bigint, any into
    string, date into timestamp)."""
    from pyspark.sql import types as T

    if isinstance(current, T.StringType):
        return True
    integral = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
    rank = {T.ByteType: 1, T.ShortType: 2, T.IntegerType: 3, T.LongType: 4}
    if isinstance(current, integral) and isinstance(incoming, integral):
        return rank[type(incoming)] <= rank[type(current)]
    if isinstance(current, T.DoubleType) and isinstance(incoming, (*integral, T.FloatType)):
        return True
    if isinstance(current, T.DecimalType) and isinstance(incoming, T.DecimalType):
        return (
            incoming.scale <= current.scale
            and incoming.precision - incoming.scale <= current.precision - current.scale
        )
    return isinstance(current, T.TimestampType) and isinstance(incoming, T.DateType)
