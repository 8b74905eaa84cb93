"""The `batches` log as an assessment reads it (run/assessment.py `LogReader`), from its rows as a
:class:`~lakefresh.lakehouse.table_rows.TableRows` reads them whole: lakehouse/native.py's reader,
without a JVM (`plan`). The rows are the ones :class:`~lakefresh.state.control.ControlTables`
queries through Spark, turned into the same :class:`~lakefresh.state.reads.LogRow` values by the
same code (state/reads.py), so one assessment gives the same answer on either road."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lakefresh.state.reads import LogRow, dict_row, in_order

if TYPE_CHECKING:
    from lakefresh.lakehouse.table_rows import TableRows


class RowsLog:
    """Reads one namespace's `batches` log as rows, each table's once."""

    def __init__(self, tables: TableRows, namespace: str) -> None:
        self.tables = tables
        self.batches = f"{namespace}.batches"
        self._rows: dict[str, list[dict[str, Any]]] = {}

    def _table_rows(self, table: str) -> list[dict[str, Any]]:
        if table not in self._rows:
            self._rows[table] = self.tables.rows(self.batches, ("table_name", table))
        return self._rows[table]

    def log_rows(self, table: str) -> list[LogRow]:
        return in_order([dict_row(r) for r in self._table_rows(table)])

    def replays(self, table: str, batch_ids: list[str]) -> dict[str, str]:
        """As `ControlTables.replays`: of several rows of a batch, a published one's wins."""
        rows = [r for r in self._table_rows(table) if r["batch_id"] in batch_ids and r["replay"] is not None]
        rows.sort(key=lambda r: r["status"] == "published")
        return {r["batch_id"]: r["replay"] for r in rows}

    def config_text(self, table: str, attempt: str) -> str:
        found = [r["config"] for r in self._table_rows(table) if r["attempt"] == attempt and r["config"]]
        return str(found[0]) if found else ""
