"""VACUUM's retention on Delta keeps every file the kept versions need (no JVM)."""

from __future__ import annotations

from datetime import datetime, timedelta

from lakefresh.lakehouse.delta.upkeep import retain_hours


def test_the_retention_is_rounded_up_to_whole_hours():
    """A reader's start committed 47.9 hours ago: RETAIN 47 HOURS would have removed the files of
    the versions committed in the 0.9 hour before it."""
    now = datetime(2025, 1, 3, 9, 59)
    assert retain_hours(now, now - timedelta(hours=47.9)) == 48
    assert retain_hours(now, now - timedelta(hours=48)) == 48
    assert retain_hours(now, now - timedelta(seconds=1)) == 1
    assert retain_hours(now, now + timedelta(hours=1)) == 0  # a clock ahead: nothing older goes
