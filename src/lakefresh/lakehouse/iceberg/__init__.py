"""Apache Iceberg behind the table-format seam: the backend (write-audit-publish), its catalog,
snapshot log and Java-API rows, its maintenance procedures, and the SQL-only road of a Spark
Connect session. Inside it Iceberg's words stay where they talk to Iceberg's API (snapshots, their
ids, `expire_snapshots`); what it gives the seam is a version (lakehouse/backend.py)."""

from lakefresh.lakehouse.iceberg.backend import IcebergBackend

__all__ = ["IcebergBackend"]
