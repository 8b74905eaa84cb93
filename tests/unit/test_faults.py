"""Fault specs: `point[@batch][:action]`, where a batch id may itself hold ':' and '@'."""

from __future__ import annotations

import pytest

from lakefresh.errors import InjectedFault
from lakefresh.faults import SimulatedCrash, checkpoint

JDBC_BATCH = "jdbc@2025-01-01 10:05:00#2"


@pytest.mark.parametrize(
    ("spec", "raised"),
    [
        (f"after_publish@{JDBC_BATCH}:crash", SimulatedCrash),
        (f"after_publish@{JDBC_BATCH}", InjectedFault),
        (f"after_publish@{JDBC_BATCH}:raise", InjectedFault),
        ("after_publish:crash", SimulatedCrash),
        ("after_publish", InjectedFault),
    ],
)
def test_a_fault_fires_at_its_point_for_its_batch(monkeypatch, spec, raised):
    monkeypatch.setenv("LAKEFRESH_FAULTS", spec)
    checkpoint("after_write", JDBC_BATCH)  # another point: nothing
    checkpoint("after_publish", "other.csv") if "@" in spec else None
    with pytest.raises(raised):
        checkpoint("after_publish", JDBC_BATCH)


def test_a_pause_waits_for_its_file_and_passes_once_it_exists(monkeypatch, tmp_path):
    go = tmp_path / "go"
    go.touch()
    monkeypatch.setenv("LAKEFRESH_FAULTS", f"after_stage@b1.csv:pause={go}")
    checkpoint("after_stage", "b1.csv")  # the file exists: no wait
    assert not (tmp_path / "go.paused").exists()
