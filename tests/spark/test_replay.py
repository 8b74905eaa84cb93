"""`lakefresh replay`: quarantined rows, corrected by hand, applied as a new
batch linked to the batch they came from; the quarantine rows are marked resolved, and the replay
is a batch like any other (reset applies it again, unload removes it)."""

from __future__ import annotations

from datetime import datetime

import pytest

from lakefresh.errors import ConfigError
from tests.conftest import cli_in_process, rows

CUSTOMERS = """
- name: customers
  source: {kind: files, path: in, format: csv, schema: {id: int, city: string, updated_at: timestamp}}
  strategy: {kind: key, keys: [id], date_column: updated_at}
"""
HEADER = "id,city,updated_at\n"


def test_corrected_rows_are_applied_as_a_batch_linked_to_theirs_and_resolve_its_quarantine(ws):
    ws.write(
        "in/b1.csv", HEADER + "1,Oslo,2025-01-01\nx,Lima,2025-01-02\n2,Rome,2025-01-01\n", mtime=1_736_000_000
    )
    ws.write("in/b2.csv", HEADER + "1,Kyiv,2025-01-03\n", mtime=1_736_003_600)
    p = ws.pipeline(CUSTOMERS)
    assert p.run().ok
    assert rows(p.quarantine("customers"), ["batch_id", "line", "resolved_by"]) == [("b1.csv", 3, None)]

    # the bad row corrected, and an old version of 1 that must not overwrite the newer Kyiv
    fixed = ws.write("fixes/b1-fixed.csv", HEADER + "3,Lima,2025-01-02\n1,Oslo again,2025-01-02\n")
    shown = cli_in_process(
        "replay",
        "pipeline.yml",
        "--table",
        "customers",
        "--batch",
        "b1.csv",
        "--file",
        str(fixed),
        cwd=ws.root,
    )
    assert shown.returncode == 0, shown.stdout
    assert shown.stdout.strip() == (
        "customers: b1.csv#replay-1 published N=1 O=1; 1 quarantined row(s) of b1.csv resolved"
    )
    expected = [
        (1, "Kyiv", datetime(2025, 1, 3)),
        (2, "Rome", datetime(2025, 1, 1)),
        (3, "Lima", datetime(2025, 1, 2)),
    ]
    assert rows(p.table("customers"), ["id", "city", "updated_at"]) == expected
    assert rows(p.quarantine("customers"), ["batch_id", "line", "resolved_by"]) == [
        ("b1.csv", 3, "b1.csv#replay-1")
    ]
    assert p.run().batches == []  # the kept copy is not a batch of the folder

    p.reset("customers")  # the replay is applied again, right after b1
    assert rows(p.table("customers"), ["id", "city", "updated_at"]) == expected
    p.unload("customers", ["b1.csv#replay-1"])
    assert rows(p.table("customers"), ["id", "city"]) == [(1, "Kyiv"), (2, "Rome")]
    assert p.run().batches == []


def test_a_replay_needs_a_loaded_batch_and_a_files_source(ws):
    ws.write("in/b1.csv", HEADER + "1,Oslo,2025-01-01\n")
    p = ws.pipeline(CUSTOMERS)
    assert p.run().ok
    fixed = ws.write("fixes/f.csv", HEADER + "2,Rome,2025-01-01\n")
    with pytest.raises(ConfigError, match=r"batch 'b9\.csv' of 'customers' is not a loaded batch"):
        p.replay("customers", "b9.csv", fixed)


def test_a_replay_never_overwrites_an_earlier_replays_file(ws):
    """Each replay's file is its batch's content for good (reset applies it again): a file left
    where the next one would go (a replay whose record a crash lost) moves the number on."""
    ws.write("in/b1.csv", HEADER + "1,Oslo,2025-01-01\n")
    p = ws.pipeline(CUSTOMERS)
    assert p.run().ok
    kept = ws.root / "in" / "_lakefresh_replays" / "customers" / "b1.csv"
    first = p.replay("customers", "b1.csv", ws.write("fixes/1.csv", HEADER + "2,Rome,2025-01-01\n"))
    assert first.replay.status == "published"
    ws.write("in/_lakefresh_replays/customers/b1.csv/replay-2.csv", HEADER + "4,Bern,2025-01-01\n")
    third = p.replay("customers", "b1.csv", ws.write("fixes/3.csv", HEADER + "3,Lima,2025-01-01\n"))
    assert (third.replay.batch_id, third.replay.status) == ("b1.csv#replay-3", "published")
    assert sorted(f.name for f in kept.iterdir() if not f.name.startswith(".")) == [
        "replay-1.csv",
        "replay-2.csv",
        "replay-3.csv",
    ]
    p.reset("customers")
    assert rows(p.table("customers"), ["id", "city"]) == [(1, "Oslo"), (2, "Rome"), (3, "Lima")]
