"""Iceberg's upkeep: what a target's readers still apply (from the snapshot summary, no job), and
its maintenance procedures: compaction, snapshot expiry and orphan file removal
(`CALL <catalog>.system.<procedure>`)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from lakefresh.lakehouse.backend import Deletes
from lakefresh.lakehouse.iceberg.log import snapshot_info, summary_deletes
from lakefresh.lakehouse.sql import qualified_name, quote, sql_literal

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import SparkSession


class IcebergUpkeepHost(Protocol):
    """What :class:`IcebergUpkeep` needs of IcebergBackend: the session, the catalog's name and a
    table through Iceberg's Java API; and the upkeep members that call each other (the SQL
    road's backend answers `_summary` and `_ordered` from metadata tables)."""

    spark: SparkSession
    catalog: str

    def _iceberg_table(self, table: str) -> Any:
        """The table through Iceberg's Java API, loaded fresh."""
        ...

    def _ordered(self, table: str) -> bool:
        """Whether the table has a sort order."""
        ...

    def _summary(self, table: str) -> dict[str, str]:
        """The summary of the table's current snapshot."""
        ...

    def deletes(self, table: str) -> Deletes:
        """Delete files and the rows they delete."""
        ...


class IcebergUpkeep:
    """The upkeep members of :class:`lakefresh.lakehouse.iceberg.IcebergBackend`, its host
    (:class:`IcebergUpkeepHost`)."""

    def _ordered(self: IcebergUpkeepHost, table: str) -> bool:
        """Whether the table has a sort order."""
        return not self._iceberg_table(table).sortOrder().isUnsorted()

    def _summary(self: IcebergUpkeepHost, table: str) -> dict[str, str]:
        current = self._iceberg_table(table).currentSnapshot()
        return {} if current is None else snapshot_info(self.spark, current).summary

    def file_count(self: IcebergUpkeepHost, table: str) -> int:
        """Data and delete files in the table's current snapshot, from its summary (no job)."""
        summary = self._summary(table)
        return sum(int(summary.get(k) or 0) for k in ("total-data-files", "total-delete-files"))

    def deletes(self: IcebergUpkeepHost, table: str) -> Deletes:
        """Delete files and the rows they delete, from the current snapshot's summary (no job).
        Iceberg keeps at most one position-delete file per data file (it merges a file's deletes
        as it writes new ones), so the rows, not the files, say what readers pay."""
        return summary_deletes(self._summary(table))

    def maintain(
        self: IcebergUpkeepHost,
        table: str,
        compact: bool,
        expire_before: datetime | None,
        keep_versions: int,
        orphans_before: datetime | None,
    ) -> dict[str, int]:
        ordered = self._ordered(table)
        return maintain(
            self.spark,
            self.catalog,
            table,
            compact,
            expire_before,
            keep_versions,
            orphans_before,
            lambda: self.deletes(table).files,
            ordered,
        )

    def compact(self: IcebergUpkeepHost, table: str, keep_versions: int) -> None:
        """Rewrite all of a (small) table's data files with its delete files applied, drop the
        delete files left dangling, then expire all but its `keep_snapshots` newest snapshots
        and the files only the expired ones used."""
        compact(self.spark, self.catalog, table, keep_versions)


def maintain(
    spark: SparkSession,
    catalog: str,
    table: str,
    compact: bool,
    expire_before: datetime | None,
    keep_snapshots: int,
    orphans_before: datetime | None,
    delete_files: Callable[[], int],
    ordered: bool = False,
) -> dict[str, int]:
    """`rewrite_data_files` (small files bin-packed, every data file with deletes rewritten with
    them applied, dangling delete files removed) and
    `rewrite_position_delete_files`, `expire_snapshots` (older than `expire_before`, keeping the
    newest `keep_snapshots`), `remove_orphan_files` (older than `orphans_before`). An `ordered`
    table (one with a sort order) is compacted in that order, which keeps its files' key ranges
    narrow."""
    call = f"CALL {quote(catalog)}.system"
    name = sql_literal(table)
    done: dict[str, int] = {}
    if compact and _snapshots(spark, catalog, table):
        strategy = "strategy => 'sort', " if ordered else ""
        row = spark.sql(
            f"{call}.rewrite_data_files(table => {name}, {strategy}options => map("
            "'remove-dangling-deletes', 'true', 'delete-file-threshold', '1'))"
        ).first()
        done["rewritten_data_files"] = int(row[0]) if row else 0
        done["added_data_files"] = int(row[1]) if row else 0
        # every data file with deletes was rewritten: a delete file left is dangling (Iceberg
        # 1.10's dangling-delete removal judges by sequence numbers and can leave one; 1.12's
        # does not), or a concurrent writer's; `rewrite-all` takes those few out (by default a
        # group under five files is left); none left (the summary says, no job): nothing to do
        done["rewritten_delete_files"] = 0
        if delete_files():
            every = "options => map('rewrite-all', 'true')"
            deletes = spark.sql(f"{call}.rewrite_position_delete_files(table => {name}, {every})").first()
            done["rewritten_delete_files"] = int(deletes[0]) if deletes else 0
    if expire_before is not None:
        count = _snapshots(spark, catalog, table)
        spark.sql(
            f"{call}.expire_snapshots(table => {name}, older_than => {timestamp(spark, expire_before)}, "
            f"retain_last => {int(keep_snapshots)})"
        )
        done["expired_snapshots"] = count - _snapshots(spark, catalog, table)
    if orphans_before is not None:
        removed = spark.sql(
            f"{call}.remove_orphan_files(table => {name}, older_than => {timestamp(spark, orphans_before)})"
        ).count()
        done["removed_orphan_files"] = int(removed)
    return done


def compact(spark: SparkSession, catalog: str, table: str, keep_snapshots: int) -> None:
    """Rewrite all of a (small) table's data files with its delete files applied, drop the delete
    files left dangling, then expire all but its `keep_snapshots` newest snapshots."""
    call = f"CALL {quote(catalog)}.system"
    spark.sql(
        f"{call}.rewrite_data_files(table => {sql_literal(table)}, options => map("
        "'rewrite-all', 'true', 'remove-dangling-deletes', 'true'))"
    )
    spark.sql(
        f"{call}.expire_snapshots(table => {sql_literal(table)}, "
        f"older_than => {timestamp(spark, datetime.now(UTC))}, retain_last => {int(keep_snapshots)})"
    )


def timestamp(spark: SparkSession, at: datetime) -> str:
    """A TIMESTAMP literal for a procedure argument, which Spark reads in the session's time zone,
    of an instant (a naive datetime is UTC)."""
    from zoneinfo import ZoneInfo

    zone = ZoneInfo(spark.conf.get("spark.sql.session.timeZone") or "UTC")
    aware = at if at.tzinfo else at.replace(tzinfo=UTC)
    return f"TIMESTAMP {sql_literal(aware.astimezone(zone).strftime('%Y-%m-%d %H:%M:%S.%f'))}"


def _snapshots(spark: SparkSession, catalog: str, table: str) -> int:
    row = spark.sql(f"SELECT count(*) FROM {qualified_name(catalog, *table.split('.'), 'snapshots')}").first()
    return int(row[0]) if row else 0
