"""The CLI as a user runs it, one process per command: errors are one line with exit code 1.

The example pipeline runs through the same CLI in tests/spark/test_example.py, in-process on the
shared session; a CLI process that starts Spark itself is tested in test_continuous.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def lakefresh(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lakefresh.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_errors_are_one_line_with_exit_code_1(tmp_path):
    (tmp_path / "bad.yml").write_text("tables: []\n", encoding="utf-8")
    proc = lakefresh("validate", "bad.yml", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error: bad.yml: 1 error(s) in the pipeline")
    assert "Traceback" not in proc.stderr
    missing = lakefresh("run", "nope.yml", cwd=tmp_path)
    assert missing.returncode == 1
    assert missing.stderr.strip() == "Error: nope.yml: pipeline file not found"


def test_version(tmp_path):
    proc = lakefresh("--version", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("lakefresh "), proc.stdout + proc.stderr


def test_jars_class_archive_prints_the_archive_that_local_sessions_start_from(tmp_path):
    """`lakefresh jars --class-archive` (lakehouse/class_archive.py): made once per JDK and
    Spark install (`make test` makes it before the tests start), then printed at once."""
    from lakefresh.lakehouse import class_archive

    made = class_archive.existing()
    if made is None:
        pytest.skip("no class archive on this machine (it is made only with 2 GB free)")
    proc = lakefresh("jars", "--class-archive", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(made)
