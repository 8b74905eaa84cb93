"""Delta Lake behind the table-format seam: the backend (exactly-once with Delta's own
mechanisms), its log, its writes by path and its upkeep."""

from lakefresh.lakehouse.delta.backend import DeltaBackend

__all__ = ["DeltaBackend"]
