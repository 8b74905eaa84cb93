"""`unload`, `reload` and `reset`: the table rebuilt from its retained
raw batches in one commit.

The contract, for every kind of rebuild a strategy makes: after `unload B` the table (and its
batch log's effective counts) equals a fresh table fed every batch but B, in order; later runs
never take B; `reload B` with B's file unchanged gives back the table as it was. DataForge's "as
if deleted batches were never loaded" is the rule (its documentation of batch deletes and
reloads).
"""

from __future__ import annotations

from datetime import datetime

import pytest

from lakefresh.errors import ConfigError
from lakefresh.faults import SimulatedCrash
from tests.conftest import FORMATS, rows
from tests.spark.test_contract_strategies import BATCHES, KINDS, contents, table_yaml
from tests.spark.test_key_history import CUSTOMERS as KEYED  # its batches, too, are below


def other_pipeline(ws, tables: str, suffix: str):
    """The same tables in namespaces of their own (target and control tables)."""
    from lakefresh.api import load_pipeline

    text = (
        ws.pipeline_yaml(tables)
        .replace(
            f"control_namespace: {ws.control_namespace}",
            f"control_namespace: {ws.control_namespace}_{suffix}",
        )
        .replace(f"namespace: {ws.namespace}", f"namespace: {ws.namespace}_{suffix}")
    )
    path = ws.root / f"{suffix}.yml"
    path.write_text(text, encoding="utf-8")
    return load_pipeline(path, spark=ws.spark)


def live_log(p, table: str = "t") -> list[tuple]:
    """The published batches of the log (the verbs' own commits aside), with their counts."""
    return sorted(
        (r["batch_id"], dict(r["status_counts"] or {}), r["effective_count"])
        for r in p.history(table)
        if r["status"] == "published" and not r["batch_id"].startswith("lakefresh:")
    )


def statuses(p, table: str = "t") -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in p.history(table):
        key = "verb" if r["batch_id"].startswith("lakefresh:") else r["batch_id"]
        out.setdefault(key, []).append(r["status"])
    return {k: sorted(v) for k, v in out.items()}


def write_some(ws, folder: str, names: list[str]) -> None:
    """The contract suite's batches (tests/spark/test_contract_strategies.py) of these names."""
    for n, (name, text) in enumerate(BATCHES.items()):
        if name in names:
            ws.write(f"{folder}/{name}", text, mtime=1_736_000_000 + 3600 * n)  # fixed batch times


# The verbs rebuild every strategy's table the same way (verbs/rebuild.py: each live batch read,
# staged and written aside by the strategy, the result replacing the table in one commit); what a
# strategy changes there is a change's tombstones (`key` with tombstone_retention) and ranges
# (`sequence`, replacing a range), and the columns a history derives from earlier batches in the
# rebuild's order (`scd2`'s versions, `snapshot`'s offsets). Each strategy's own writes over a
# sequence of batches are the strategy contract's (tests/spark/test_contract_strategies.py).
REBUILT = [k for k in KINDS if k.name in ("key_tombstones", "scd2", "snapshot", "sequence")]


@pytest.mark.parametrize("kind", REBUILT, ids=[k.name for k in REBUILT])
def test_unload_equals_never_loading_and_reload_gives_the_batch_back(ws, kind):
    """b2 holds a change of key 1, a new key and a bad row; b5 a new column, a new key and
    another change of key 1 (b3 and the empty b4 are left out: the contract suite has them)."""
    write_some(ws, "in", ["b1.csv", "b2.csv", "b5.csv"])
    p = ws.pipeline(table_yaml(kind, "in"))
    assert p.run().ok
    before, log_before = contents(p, kind), live_log(p)

    write_some(ws, "without", ["b1.csv", "b5.csv"])  # the reference: never b2
    reference = other_pipeline(ws, table_yaml(kind, "without"), "ref")
    assert reference.run().ok

    done = p.unload("t", ["b2.csv"])
    assert done.applied == {"t": ["b1.csv", "b5.csv"]}
    assert contents(p, kind) == contents(reference, kind)
    assert live_log(p) == [(b, c, e) for b, c, e in live_log(reference)]
    assert p.run().batches == []  # b2 is never taken again

    p.reload("t", ["b2.csv"])
    assert contents(p, kind) == before
    assert live_log(p) == log_before


HEADER = "id,city,updated_at,gone\n"


def d(day: int) -> datetime:
    return datetime(2025, 1, day)


def keyed(ws, table_format: str = "iceberg", history: bool = True):
    """tests/spark/test_key_history.py's three batches; b2 also has a bad row. With
    `table_format` delta, the catalog's targets (the table and its history) are Delta tables;
    without `history`, the table keeps none."""
    ws.write("in/b1.csv", HEADER + "1,Oslo,2025-01-01,false\n2,Rome,2025-01-01,false\n", mtime=1_736_000_000)
    bad = "x,Bad,2025-01-03,false\n"
    ws.write(
        "in/b2.csv", HEADER + "1,Kyiv,2025-01-03,false\n2,Rome,2025-01-04,true\n" + bad, mtime=1_736_003_600
    )
    ws.write("in/b3.csv", HEADER + "1,Lima,2025-01-02,false\n", mtime=1_736_007_200)
    tables = KEYED if history else KEYED.replace("    history: true\n", "")
    if table_format == "iceberg":
        p = ws.pipeline(tables)
    else:
        from lakefresh.api import load_pipeline

        path = ws.root / "pipeline.yml"
        path.write_text(ws.pipeline_yaml(tables).replace("catalog:\n", "catalog:\n  format: delta\n", 1))
        p = load_pipeline(path, spark=ws.spark)
        assert p.config.format_of(p.config.tables[0]) == "delta"
    assert p.run().ok
    return p


@pytest.mark.lease  # a verb that crashed holding the lease: the next run goes on
def test_a_batch_unloaded_from_a_key_table_and_its_history_then_reloaded_corrected(ws, monkeypatch):
    """Unloaded, then reloaded corrected; the first reload crashes before its publish (its
    commits staged and recorded): the next run abandons what it staged, and the operator's
    second reload does it. (Crashes after the publish: the test below.)"""
    p = keyed(ws)
    ws.write("in/b2.csv", HEADER + "1,Kyiv,2025-01-03,false\n", mtime=1_736_003_600)  # b2's order kept
    done = p.unload("customers", ["b2.csv"])
    assert sorted(done.applied) == ["customers", "customers_history"]
    # key 1 falls back to b3's Lima (b1's Oslo is older); key 2 was never deleted
    assert rows(p.table("customers"), ["id", "city", "updated_at"]) == [(1, "Lima", d(2)), (2, "Rome", d(1))]
    assert rows(p.table("customers_history"), ["id", "city", "valid_from", "valid_to", "is_current"]) == [
        (1, "Lima", d(2), None, True),
        (1, "Oslo", d(1), d(2), False),
        (2, "Rome", d(1), None, True),
    ]
    assert statuses(p, "customers") == {
        "b1.csv": ["published"],
        "b2.csv": ["unloaded"],
        "b3.csv": ["published"],
        "verb": ["published"],
    }
    assert p.run().batches == []

    # b2's file corrected (no delete, no bad row), then reloaded in its place between b1 and b3:
    # the first reload crashes with its commit staged and recorded, which the next run abandons
    monkeypatch.setenv("LAKEFRESH_FAULTS", "after_record_staged:crash")
    with pytest.raises(SimulatedCrash):
        p.reload("customers", ["b2.csv"])
    monkeypatch.delenv("LAKEFRESH_FAULTS")
    result = p.run()
    assert result.ok and result.batches == []
    assert rows(p.table("customers"), ["id", "city"]) == [(1, "Lima"), (2, "Rome")]
    assert statuses(p, "customers") == {
        "b1.csv": ["published"],
        "b2.csv": ["abandoned", "unloaded"],
        "b3.csv": ["published"],
        "verb": ["abandoned", "published"],
    }
    reloaded = p.reload("customers", ["b2.csv"])  # the operator runs it again
    assert [(b.batch_id, b.counts, b.quarantined) for b in reloaded.reloaded] == [
        ("b2.csv", {"C": 1}, 0),  # for customers: 1 changed to Kyiv
        ("b2.csv", {"C": 1}, 0),  # for its history: Oslo closed, Kyiv opened
    ]
    assert rows(p.table("customers"), ["id", "city", "updated_at"]) == [(1, "Kyiv", d(3)), (2, "Rome", d(1))]
    assert rows(p.table("customers_history"), ["id", "city", "valid_from", "valid_to", "is_current"]) == [
        (1, "Kyiv", d(3), None, True),
        (1, "Lima", d(2), d(3), False),
        (1, "Oslo", d(1), d(2), False),
        (2, "Rome", d(1), None, True),
    ]
    assert statuses(p, "customers") == {
        "b1.csv": ["published"],
        "b2.csv": ["abandoned", "published", "reloaded"],
        "b3.csv": ["published"],
        "verb": ["abandoned", "published", "published"],
    }
    assert live_log(p, "customers") == [
        ("b1.csv", {"N": 2}, 1),
        ("b2.csv", {"C": 1}, 1),
        ("b3.csv", {"O": 1}, 0),
    ]
    assert p.quarantine("customers").count() == 0  # the corrected b2 has no bad row
    assert p.run().batches == []


def test_a_batch_that_can_no_longer_be_read_refuses_the_rebuild_and_changes_nothing(ws):
    p = keyed(ws)
    (ws.root / "in" / "b1.csv").unlink()
    tables = [f"{ws.namespace}.customers", f"{ws.namespace}.customers_history"]
    before = ws.version_counts(tables)
    with pytest.raises(
        ConfigError, match=r"1 of its batches can no longer be read from its files source \(b1.csv\)"
    ):
        p.reset("customers")
    with pytest.raises(ConfigError, match=r"cannot unload \['b9.csv'\] from 'customers': not loaded"):
        p.unload("customers", ["b9.csv"])
    assert ws.version_counts(tables) == before


def test_a_configuration_change_is_taken_by_reset_and_refused_by_unload(ws):
    keyed(ws)
    changed = ws.pipeline(KEYED.replace("    date_column: updated_at\n", ""))  # the last write wins
    with pytest.raises(Exception, match="configuration of table 'customers' changed"):
        changed.unload("customers", ["b3.csv"])
    ws.write("in/b4.csv", HEADER + "1,Paris,2025-01-01,false\n", mtime=1_736_010_800)
    assert changed.run().tables[0].error.startswith("the configuration of table 'customers' changed")

    changed.reset("customers")  # every batch again, under the new configuration
    assert rows(changed.table("customers"), ["id", "city"]) == [(1, "Lima")]  # b3 wins, b2 deleted 2
    assert changed.run().ok  # the reset recorded the configuration: no stop
    assert rows(changed.table("customers"), ["id", "city"]) == [(1, "Paris")]  # older, but later


@pytest.mark.lease  # a verb that crashed holding the lease: the next run goes on
@pytest.mark.parametrize("table_format", FORMATS)
def test_a_crash_during_an_unload_or_a_reload_is_settled_by_the_next_run(ws, monkeypatch, table_format):
    """The unload's commit, and the reloaded batch's new attempt, are staged beside the verb's
    record before the publish: a crash after the publish leaves the log exactly as an
    uninterrupted verb does once the next run has reconciled (one before it changes nothing: the
    test above). On Delta, which commits at once, the record is staged before the commit, and a
    crash after the commit is one after the publish: a commit the next run finds in the table's
    history. (The crash comes at the first table the verb commits: the table keeps no history,
    which the verb would rebuild after it.)"""
    p = keyed(ws, table_format, history=False)
    unloaded_after_a_crash(p, monkeypatch)
    ws.write("in/b2.csv", HEADER + "1,Kyiv,2025-01-03,false\n", mtime=1_736_003_600)
    monkeypatch.setenv("LAKEFRESH_FAULTS", "after_publish:crash")
    with pytest.raises(SimulatedCrash):
        p.reload("customers", ["b2.csv"])
    monkeypatch.delenv("LAKEFRESH_FAULTS")
    result = p.run(["customers"])
    assert result.ok and result.batches == []
    assert rows(p.table("customers"), ["id", "city"]) == [(1, "Kyiv"), (2, "Rome")]
    assert statuses(p, "customers")["b2.csv"] == ["published", "reloaded"]
    assert live_log(p, "customers") == [
        ("b1.csv", {"N": 2}, 1),
        ("b2.csv", {"C": 1}, 1),
        ("b3.csv", {"O": 1}, 0),
    ]
    assert p.quarantine("customers").count() == 0


def unloaded_after_a_crash(p, monkeypatch) -> None:
    """b2 unloaded by a process that crashed right after the unload's publish, then the next run."""
    monkeypatch.setenv("LAKEFRESH_FAULTS", "after_publish:crash")
    with pytest.raises(SimulatedCrash):
        p.unload("customers", ["b2.csv"])
    monkeypatch.delenv("LAKEFRESH_FAULTS")
    assert rows(p.table("customers"), ["id", "city"]) == [(1, "Lima"), (2, "Rome")]
    result = p.run(["customers"])
    assert result.ok and result.batches == []
    assert statuses(p, "customers") == {
        "b1.csv": ["published"],
        "b2.csv": ["unloaded"],
        "b3.csv": ["published"],
        "verb": ["published"],
    }
    # the crash came before the log's counts were corrected; effective counts are recounted
    assert [(b, e) for b, _, e in live_log(p, "customers")] == [("b1.csv", 1), ("b3.csv", 1)]
