"""The one clock lakefresh records times by: UTC, as naive datetimes (the control tables' and
Spark's TIMESTAMP_NTZ-free convention: every stored time is UTC)."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> datetime:
    """Now, in UTC, without a time zone."""
    return datetime.now(UTC).replace(tzinfo=None)
