"""Control tables: the log of batches and the quarantine."""

from lakefresh.state.control import STATE_VERSION, AttemptRow, ControlTables

__all__ = ["STATE_VERSION", "AttemptRow", "ControlTables"]
