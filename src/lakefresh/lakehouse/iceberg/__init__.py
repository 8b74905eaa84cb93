"""Apache Iceberg behind the table-format seam: the backend (write-audit-publish), its catalog,
snapshot log and Java-API rows, its maintenance procedures, and the SQL-only road of a Spark
Connect session."""

from lakefresh.lakehouse.iceberg.backend import IcebergBackend

__all__ = ["IcebergBackend"]
