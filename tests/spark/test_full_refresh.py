"""`run --full-refresh`: a table rebuilt from every batch its source holds, under today's
configuration, in one commit; a schema the table cannot evolve to makes a new version of it.

dbt's `--full-refresh` ("treat incremental models as table models": docs.getdbt.com, reference
/commands/run) is the model: a wrong declared type is fixed in the YAML, then one command.

What the refresh decides does not depend on the table format, so it is tested on Iceberg; Delta's
new version of a table is its crash drill's (and tests/spark/test_backend_seam.py's).
"""

from __future__ import annotations

import pytest

from lakefresh.errors import ConfigError, SchemaError
from lakefresh.faults import SimulatedCrash
from tests.conftest import CATALOG, FORMATS, cli_in_process, rows
from tests.spark.test_rebuild_verbs import keyed, statuses

AMOUNTS = """
- name: t
  format: {table_format}
  source: {{kind: files, path: in, format: csv, schema: {{id: int, amount: {amount_type}}}}}
  strategy: {{kind: key, keys: [id]}}
"""


def amounts(ws, table_format: str, amount_type: str):
    return ws.pipeline(AMOUNTS.format(table_format=table_format, amount_type=amount_type))


def loaded_as_int(ws, table_format: str):
    """b1 and b2 under `amount: int`: their two decimal amounts go to quarantine."""
    ws.write("in/b1.csv", "id,amount\n1,10\n2,10.50\n", mtime=1_736_000_000)
    ws.write("in/b2.csv", "id,amount\n3,7.25\n4,3\n", mtime=1_736_003_600)
    p = amounts(ws, table_format, "int")
    assert p.run().ok
    assert rows(p.table("t"), ["id", "amount"]) == [(1, 10), (4, 3)]
    return amounts(ws, table_format, "'decimal(10,2)'")  # the fixed type


def as_text(p) -> list[tuple]:
    return [(i, str(a)) for i, a in rows(p.table("t"), ["id", "amount"])]


def test_a_wrong_declared_type_is_fixed_by_a_full_refresh(ws):
    """Given two batches loaded under `amount: int` (10.50 and 7.25 quarantined), the type fixed
    to decimal(10,2): a plain run has nothing new, `reset` points to the full refresh, and
    `run --table t --full-refresh` gives the table every row with the new type, the log new
    attempts (the earlier ones `reloaded`, their bad rows gone); later batches go on top."""
    p = loaded_as_int(ws, "iceberg")
    assert p.run().batches == []
    with pytest.raises(SchemaError, match="--full-refresh"):
        p.reset("t")

    text = cli_in_process("run", "pipeline.yml", "--table", "t", "--full-refresh", cwd=ws.root)
    assert text.returncode == 0, text.stdout + text.stderr
    assert "t: 2 batch(es) applied by a full refresh (a new version of the table), ok" in text.stdout
    assert as_text(p) == [(1, "10.00"), (2, "10.50"), (3, "7.25"), (4, "3.00")]
    assert p.table("t").schema["amount"].dataType.simpleString() == "decimal(10,2)"
    assert statuses(p, "t") == {
        "b1.csv": ["published", "reloaded"],
        "b2.csv": ["published", "reloaded"],
        "verb": ["published"],
    }
    assert p.quarantine("t").count() == 0

    ws.write("in/b3.csv", "id,amount\n1,1.5\n", mtime=1_736_007_200)
    result = p.run()
    assert [b.batch_id for b in result.batches] == ["b3.csv"]
    assert as_text(p) == [(1, "1.50"), (2, "10.50"), (3, "7.25"), (4, "3.00")]


def test_a_full_refresh_takes_every_batch_the_source_holds_once(ws):
    """Given b1 and b2 loaded, b3 skipped by the operator, b1's file then removed and b4 new: the
    table is rebuilt from b2 and b4 (same schema: a staged replace, one commit); b1 leaves the
    table (`unloaded`), b3 stays out, b4 is taken by the refresh and never again."""
    ws.write("in/b1.csv", "id,amount\n1,10\n", mtime=1_736_000_000)
    ws.write("in/b2.csv", "id,amount\n2,20\n", mtime=1_736_003_600)
    ws.write("in/b3.csv", "id,amount\n3,x\n", mtime=1_736_007_200)
    p = amounts(ws, "iceberg", "int")
    assert [b.status for b in p.run().batches] == ["published", "published", "refused"]
    assert p.run(["t"], skip_batches=["b3.csv"]).ok
    (ws.root / "in" / "b1.csv").unlink()
    ws.write("in/b4.csv", "id,amount\n4,40\n", mtime=1_736_010_800)

    result = p.run(full_refresh=["t"])
    assert result.ok
    assert result.tables[0].refreshed == {
        "batches": ["b2.csv", "b4.csv"],
        "rows": 2,
        "new_version": False,
        "dropped": ["b1.csv"],
    }
    assert rows(p.table("t"), ["id", "amount"]) == [(2, 20), (4, 40)]
    assert statuses(p, "t") == {
        "b1.csv": ["unloaded"],
        "b2.csv": ["published", "reloaded"],
        "b3.csv": ["refused", "skipped"],
        "b4.csv": ["published"],
        "verb": ["published"],
    }
    assert p.run().batches == []


def test_a_dropped_table_and_its_history_are_made_again(ws):
    """A `key` table with `history: true` whose table was dropped: the run fails as the table is
    gone; `full_refresh` makes the table and its history again from the batches."""
    p = keyed(ws)
    before = rows(p.table("customers"), ["id", "city"])
    history_before = rows(p.table("customers_history"), ["id", "city"])
    ws.spark.sql(f"DROP TABLE {CATALOG}.{ws.namespace}.customers")
    failed = p.run(["customers"])
    assert "the table was dropped. Make it again from its batches" in failed.tables[0].error
    result = p.run(full_refresh=["customers"])
    assert result.ok, [t.error for t in result.tables]
    assert [t.table for t in result.tables if t.refreshed] == ["customers", "customers_history"]
    assert rows(p.table("customers"), ["id", "city"]) == before == [(1, "Kyiv")]
    assert rows(p.table("customers_history"), ["id", "city"]) == history_before
    assert p.run().batches == []


def test_a_source_that_keeps_no_batches_is_refused_by_name(ws):
    ws.write("in/b1.csv", "id,amount\n1,10\n")
    p = ws.pipeline(
        AMOUNTS.format(table_format="iceberg", amount_type="int")
        + f"- name: d\n  source: {{kind: table_changes, table: {ws.namespace}.t, keys: [id]}}\n"
        "  strategy: {kind: key, keys: [id]}\n"
    )
    with pytest.raises(ConfigError, match=r"cannot refresh 'd' \(table_changes\) in full"):
        p.run(full_refresh=["d"])


@pytest.mark.parametrize("table_format", FORMATS)
def test_a_crash_after_the_new_version_is_committed_is_settled_by_the_next_run(ws, monkeypatch, table_format):
    """The new version's log rows are recorded before its commit (visible at once): a crash
    right after the commit leaves the log that an uninterrupted refresh leaves, once the next
    run has reconciled; no batch is applied twice."""
    p = loaded_as_int(ws, table_format)
    monkeypatch.setenv("LAKEFRESH_FAULTS", "after_publish:crash")
    with pytest.raises(SimulatedCrash):
        p.run(full_refresh=["t"])
    monkeypatch.delenv("LAKEFRESH_FAULTS")
    result = p.run()
    assert result.ok and result.batches == []
    assert as_text(p) == [(1, "10.00"), (2, "10.50"), (3, "7.25"), (4, "3.00")]
    assert statuses(p, "t") == {
        "b1.csv": ["published", "reloaded"],
        "b2.csv": ["published", "reloaded"],
        "verb": ["published"],
    }
