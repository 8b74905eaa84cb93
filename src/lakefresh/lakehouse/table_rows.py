"""Small tables read whole as Python rows, by either road: :class:`SparkTables` through the table
backend (a Spark session), or lakehouse/native.py's reader without a JVM. The verbs that only read
what runs recorded take one of them and compute their answers from its rows, so both roads give
the same answers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from lakefresh.lakehouse.backend import TableBackend


class TableRows(Protocol):
    """Reads tables named `namespace.table` whole."""

    def exists(self, table: str) -> bool:
        """Whether the table exists."""

    def properties(self, table: str) -> dict[str, str]:
        """The table's properties."""

    def rows(self, table: str, equal: tuple[str, str] | None = None) -> list[dict[str, Any]]:
        """The table's rows now (those whose column `equal[0]` holds `equal[1]`), as PySpark's
        `Row.asDict(recursive=True)` gives them, in no particular order."""

    def count(self, table: str) -> int:
        """How many rows the table holds now."""


class SparkTables:
    """:class:`TableRows` through a table backend's Spark session."""

    def __init__(self, backend: TableBackend) -> None:
        self.backend = backend

    def exists(self, table: str) -> bool:
        return self.backend.exists(table)

    def properties(self, table: str) -> dict[str, str]:
        return self.backend.properties(table)

    def rows(self, table: str, equal: tuple[str, str] | None = None) -> list[dict[str, Any]]:
        df = self.backend.read(table)
        if equal is not None:
            df = df.where(df[equal[0]] == equal[1])
        return [r.asDict(recursive=True) for r in df.collect()]

    def count(self, table: str) -> int:
        return self.backend.read(table).count()
