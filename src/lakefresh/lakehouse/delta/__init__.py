"""Delta Lake behind the table-format seam: the backend (exactly-once with Delta's own
mechanisms), its log, its writes by path and its upkeep. Delta's word for a committed state is
the seam's, a version; its `Snapshot` is the log's state at one version (DeltaLog's)."""

from lakefresh.lakehouse.delta.backend import DeltaBackend

__all__ = ["DeltaBackend"]
