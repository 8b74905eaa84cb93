"""Delta Lake's writes by path: appends and replaces through the DataFrame writer, row-level
writes as Spark SQL MERGE (lakehouse/merge.py), and an update through Delta's own API.

Not an UPDATE statement: in a session that also has Iceberg's SQL extensions, Iceberg 1.10 (the
Spark 3.5 line's) fails an UPDATE on any table that is not Iceberg's (`scala.MatchError:
DeltaTableV2` in its row-lineage rule, apache/iceberg#15040), so the control tables' marks on
Delta failed there. Delta's `DeltaTable.updateExpr` plans the same update without that rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from lakefresh.lakehouse.jvm import java_class
from lakefresh.lakehouse.literals import literal_rows
from lakefresh.lakehouse.merge import SqlWrites

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType


class DeltaWritesHost(Protocol):
    """What :class:`DeltaWrites` needs of DeltaBackend: the session, a table's path, and the
    append its other writes go through."""

    spark: SparkSession

    def location(self, table: str) -> str:
        """The table's path."""
        ...

    def append(self, table: str, df: DataFrame) -> None:
        """The rows appended to the table."""
        ...


class DeltaWrites(SqlWrites):
    """A base class of DeltaBackend, its host (:class:`DeltaWritesHost`)."""

    def append(self: DeltaWritesHost, table: str, df: DataFrame) -> None:
        df.write.format("delta").mode("append").save(self.location(table))

    def append_rows(
        self: DeltaWritesHost,
        table: str,
        rows: list[dict[str, Any]],
        schema: StructType,
        unless: tuple[int | None, str, str] | None = None,
    ) -> None:
        self.append(table, literal_rows(self.spark, rows, schema))  # `unless` is Iceberg's alone

    def replace(self: DeltaWritesHost, table: str, df: DataFrame) -> None:
        df.write.format("delta").mode("overwrite").save(self.location(table))

    def update(self: DeltaWritesHost, table: str, assignments: dict[str, str], where: str) -> None:
        """Delta's `updateExpr` (the module's doc): the same values, SQL expressions, by column."""
        gateway = self.spark.sparkContext._gateway
        assert gateway is not None
        values = gateway.jvm.java.util.HashMap()
        for column, value in assignments.items():
            values.put(column, value)
        delta = java_class(self.spark, "io.delta.tables.DeltaTable")
        delta.forPath(self.spark._jsparkSession, self.location(table)).updateExpr(where, values)
