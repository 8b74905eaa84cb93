"""The run lease's settings (`run:`): a duration for its time to live, on by default; what is
wrong is said before Spark starts. The lease itself: tests/spark/test_leases.py,
tests/e2e/test_lease.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakefresh.config import load_config
from lakefresh.errors import ConfigError, LeaseHeld

BASE = """
tables:
  - name: t
    source: {kind: files, path: in, format: csv, schema: {id: int}}
    strategy: {kind: append}
"""


def config(tmp_path: Path, run: str = "", variables: dict[str, str] | None = None):
    (tmp_path / "in").mkdir(exist_ok=True)
    path = tmp_path / "pipeline.yml"
    path.write_text(run + BASE, encoding="utf-8")
    return load_config(path, variables)


def test_a_run_takes_a_lease_of_two_minutes_unless_told_otherwise(tmp_path):
    assert (config(tmp_path).run.lease, config(tmp_path).run.lease_ttl) == (True, 120.0)
    told = config(tmp_path, "run: {lease: false, lease_ttl: 90s}\n")
    assert (told.run.lease, told.run.lease_ttl) == (False, 90.0)
    # a variable sets it from the command line (--var ttl=10s)
    varied = config(tmp_path, 'run: {lease_ttl: "{{ var.ttl }}"}\n', {"ttl": "10s"})
    assert varied.run.lease_ttl == 10.0


@pytest.mark.parametrize(
    ("run", "message"),
    [
        ("run: {lease_ttl: 500ms}\n", "at least 1s"),
        ("run: {lease_ttl: soon}\n", "positive duration"),
        ("run: {leese: false}\n", "leese"),
    ],
)
def test_a_wrong_lease_setting_is_said_before_spark_starts(tmp_path, run, message):
    with pytest.raises(ConfigError, match=message):
        config(tmp_path, run)


def test_a_held_lease_is_exit_code_75_and_says_who_holds_it():
    held = LeaseHeld("shop.a", "2026-11-29 12:00:03 UTC", "host", 1234, "p.yml", "2026-11-29 12:02:03 UTC")
    assert held.exit_code == 75 and held.transient
    assert str(held).startswith(
        "another run holds shop.a since 2026-11-29 12:00:03 UTC, started by host/pid 1234 (p.yml); "
        "it expires at 2026-11-29 12:02:03 UTC unless renewed; wait for it with --wait"
    )
