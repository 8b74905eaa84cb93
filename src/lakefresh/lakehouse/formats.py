"""One backend over two table formats: each table goes to its format's backend.

A pipeline chooses the format per catalog or per table (`format: iceberg | delta`), and the
control tables' (`catalog.control_format`). Everything above `lakehouse/` sees one
:class:`TableBackend`, so nothing there knows which format a table has. A table lakefresh makes
beside a target (a rebuild's scratch table, `<target>__rebuild`) has the target's format.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lakefresh.lakehouse.backend import (
    Commit,
    Deletes,
    Lineage,
    MergeClauses,
    SnapshotState,
    StagedCommit,
    TableBackend,
)

if TYPE_CHECKING:
    from datetime import datetime

    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType


SCRATCH = "__rebuild"  # the scratch table beside a target (strategies/rebuild.py, verbs/rebuild.py)


class ByTable:
    """Routes every call naming a table to the backend of that table's format."""

    def __init__(
        self, default: TableBackend, other: TableBackend, others: set[str], namespaces: set[str] | None = None
    ) -> None:
        self.spark = default.spark
        self.default = default
        self.other = other
        self.others = frozenset(others)
        self.namespaces = frozenset(namespaces or ())  # every table of these (the control tables')

    def of(self, table: str) -> TableBackend:
        """The backend of a table (`namespace.table`)."""
        if table in self.others or table.removesuffix(SCRATCH) in self.others:
            return self.other
        if table.split(".")[0] in self.namespaces:
            return self.other
        return self.default

    def qualified(self, table: str) -> str:
        return self.of(table).qualified(table)

    def exists(self, table: str) -> bool:
        return self.of(table).exists(table)

    def create(
        self,
        table: str,
        schema: StructType,
        partition_by: list[str],
        properties: dict[str, str],
        staged_commits: bool = True,
        sort_by: list[str] | None = None,
    ) -> None:
        self.of(table).create(table, schema, partition_by, properties, staged_commits, sort_by)

    def take_over(self, table: str, properties: dict[str, str]) -> None:
        self.of(table).take_over(table, properties)

    def order(self, table: str, sort_by: list[str]) -> bool:
        return self.of(table).order(table, sort_by)

    def log_table_properties(self) -> dict[str, str]:
        control = self.other if self.namespaces else self.default  # the control tables' format
        return control.log_table_properties()

    def drop(self, table: str) -> None:
        self.of(table).drop(table)

    def schema(self, table: str) -> StructType:
        return self.of(table).schema(table)

    def properties(self, table: str) -> dict[str, str]:
        return self.of(table).properties(table)

    def set_properties(self, table: str, properties: dict[str, str]) -> None:
        self.of(table).set_properties(table, properties)

    def drop_columns(self, table: str, columns: list[str]) -> None:
        self.of(table).drop_columns(table, columns)

    def align(self, table: str, df: DataFrame, keep: tuple[str, ...] = ()) -> DataFrame:
        return self.of(table).align(table, df, keep)

    def head(self, table: str) -> int | None:
        return self.of(table).head(table)

    def latest(self, table: str) -> int | None:
        return self.of(table).latest(table)

    def follows(self, table: str, marker: int | None) -> int | None:
        return self.of(table).follows(table, marker)

    def lineage(self, table: str) -> Lineage:
        return self.of(table).lineage(table)

    def published_batches(self, table: str, since: int | None = None) -> dict[str, int]:
        return self.of(table).published_batches(table, since)

    def commits_after(self, table: str, snapshot_id: int | None, limit: int | None = None) -> list[Commit]:
        return self.of(table).commits_after(table, snapshot_id, limit)

    def roll_back_to(self, table: str, snapshot_id: int) -> None:
        self.of(table).roll_back_to(table, snapshot_id)

    def committed_at(self, table: str, snapshot_id: int) -> datetime:
        return self.of(table).committed_at(table, snapshot_id)

    def snapshot_state(self, table: str, snapshot_id: int) -> SnapshotState:
        return self.of(table).snapshot_state(table, snapshot_id)

    def live_records(self, table: str, snapshot_id: int) -> int:
        return self.of(table).live_records(table, snapshot_id)

    def stage(
        self,
        table: str,
        batch_id: str,
        write: Callable[[], None],
        properties: dict[str, str] | None = None,
    ) -> StagedCommit:
        return self.of(table).stage(table, batch_id, write, properties)

    def commit_properties(self, table: str, snapshot_id: int) -> dict[str, str]:
        return self.of(table).commit_properties(table, snapshot_id)

    def with_properties(self, table: str, properties: dict[str, str], write: Callable[[], None]) -> None:
        self.of(table).with_properties(table, properties, write)

    def commits_at_once(self, table: str) -> bool:
        return self.of(table).commits_at_once(table)

    def checks_appends(self, table: str) -> bool:
        return self.of(table).checks_appends(table)

    def undo_since(self, table: str, head: int | None, batch_id: str) -> None:
        self.of(table).undo_since(table, head, batch_id)

    def publish(self, staged: StagedCommit) -> int:
        return self.of(staged.table).publish(staged)

    def file_count(self, table: str) -> int:
        return self.of(table).file_count(table)

    def deletes(self, table: str) -> Deletes:
        return self.of(table).deletes(table)

    def maintain(
        self,
        table: str,
        compact: bool,
        expire_before: datetime | None,
        keep_snapshots: int,
        orphans_before: datetime | None,
    ) -> dict[str, int]:
        return self.of(table).maintain(table, compact, expire_before, keep_snapshots, orphans_before)

    def compact(self, table: str, keep_snapshots: int) -> None:
        self.of(table).compact(table, keep_snapshots)

    def read(self, table: str, snapshot_id: int | None = None) -> DataFrame:
        return self.of(table).read(table, snapshot_id)

    def changes(self, table: str, start: int | None, end: int, keys: list[str]) -> DataFrame:
        return self.of(table).changes(table, start, end, keys)

    def carries_commit_properties(self, table: str | None = None) -> bool:
        if table is not None:  # a Delta table's commits carry them whatever Iceberg's runtime
            return self.of(table).carries_commit_properties(table)
        return self.default.carries_commit_properties() and self.other.carries_commit_properties()

    def broadcast_rows(self) -> int:
        return self.default.broadcast_rows()

    def append(self, table: str, df: DataFrame) -> None:
        self.of(table).append(table, df)

    def append_rows(
        self,
        table: str,
        rows: list[dict[str, Any]],
        schema: StructType,
        unless: tuple[int | None, str, str] | None = None,
    ) -> None:
        self.of(table).append_rows(table, rows, schema, unless)

    def read_rows(self, table: str) -> tuple[int | None, list[dict[str, Any]]]:
        return self.of(table).read_rows(table)

    def replace_rows(
        self, table: str, rows: list[dict[str, Any]], schema: StructType, since: int | None
    ) -> None:
        self.of(table).replace_rows(table, rows, schema, since)

    def replace(self, table: str, df: DataFrame) -> None:
        self.of(table).replace(table, df)

    def replace_table(self, table: str, df: DataFrame, batch_id: str, partition_by: list[str]) -> int:
        return self.of(table).replace_table(table, df, batch_id, partition_by)

    def merge(self, table: str, source: DataFrame, clauses: MergeClauses) -> None:
        self.of(table).merge(table, source, clauses)

    def update(self, table: str, assignments: dict[str, str], where: str) -> None:
        self.of(table).update(table, assignments, where)

    def delete_and_append(
        self,
        table: str,
        rows: DataFrame,
        delete_when: str | None,
        matches: DataFrame | None,
        deletes: int,
        equi_join: bool = False,
    ) -> None:
        self.of(table).delete_and_append(table, rows, delete_when, matches, deletes, equi_join)


# mypy proves the seam here: ByTable has every member of TableBackend, with compatible types.
_CONFORMS: type[TableBackend] = ByTable
