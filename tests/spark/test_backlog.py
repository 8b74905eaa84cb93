"""Backlogs in one commit (src/lakefresh/run/backlog.py): the batches waiting for a
table are applied in groups, one staged commit per group, with each batch's counts exact and its
id in the lineage; the result is the one applying them one by one gives.

The property test checks the `key` strategy's group fold against a small reference model of
key/strategy.py's rules (status per row, then the table), over random backlogs with duplicates, deletes,
older rows and re-sent rows; the other tests compare grouped runs with one-by-one runs of the
same files, through faults, and the verbs that meet a group commit.
"""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakefresh.errors import ConfigError
from lakefresh.faults import SimulatedCrash
from tests.conftest import Workspace, record_in_commit, rows, skip_without_record_in_commit
from tests.key_model import key_reference

KEY = "{kind: key, keys: [id], date_column: ts, delete: {column: op, value: D}}"
KEY_BY_BATCH_TIME = "{kind: key, keys: [id], delete: {column: op, value: D}}"
SCHEMA = "{id: int, v: string, ts: timestamp, op: string}"


def table_yaml(strategy: str, max_batches: int = 50) -> str:
    return (
        "- name: t\n"
        f"  source: {{kind: files, path: in, format: csv, schema: {SCHEMA}}}\n"
        f"  strategy: {strategy}\n"
        f"  backlog: {{max_batches: {max_batches}}}\n"
    )


def csv(events) -> str:
    return "id,v,ts,op\n" + "".join(f"{k},{v},2025-01-0{d} 00:00:00,{op}\n" for k, v, d, op in events)


def write_backlog(ws, batches) -> list[str]:
    names = []
    for n, events in enumerate(batches):
        name = f"b{n:02d}.csv"
        ws.write(f"in/{name}", csv(events), mtime=1_736_000_000 + 3600 * n)  # batch time: its order
        names.append(name)
    return names


def logged(p) -> list[tuple]:
    return sorted(
        (r["batch_id"], dict(r["status_counts"]), r["duplicate_count"], r["effective_count"])
        for r in p.history("t")
        if r["status"] == "published"
    )


event = st.tuples(st.integers(1, 4), st.sampled_from("ab"), st.integers(1, 3), st.sampled_from(["", "", "D"]))
backlogs = st.lists(st.lists(event, max_size=5), min_size=2, max_size=6)


@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(batches=backlogs, size=st.sampled_from([2, 50]), by_batch_time=st.booleans())
def test_a_grouped_backlog_equals_the_reference_model(
    spark, warehouse, tmp_path_factory, batches, size, by_batch_time
):
    """Every row's status, each batch's duplicates and effective count, and the table, as key/strategy.py's
    rules give them one batch at a time; the backlog after the first batch (which creates the
    table) in groups of `size`."""
    ws = Workspace(tmp_path_factory.mktemp("backlog"), spark, warehouse)
    write_backlog(ws, batches)
    p = ws.pipeline(table_yaml(KEY_BY_BATCH_TIME if by_batch_time else KEY, size))
    result = p.run()
    assert result.ok, result.to_dict()

    table, per_batch = key_reference(batches, by_batch_time)
    assert rows(p.table("t"), ["id", "v", "_lf_batch_id"]) == table
    assert logged(p) == sorted(per_batch)
    commits = {r["published_snapshot_id"] for r in p.history("t") if r["status"] == "published"}
    rest = len(batches) - 1
    assert len(commits) == 1 + ((rest + size - 1) // size if record_in_commit(spark) else rest)


BACKLOG = [
    [(1, "a", 1, ""), (2, "b", 1, "")],
    [(1, "A", 2, ""), (3, "c", 2, ""), (3, "c2", 2, "")],
    [(2, "b", 3, "D"), (4, "d", 1, "")],
    [],
    [(1, "A", 1, ""), (2, "b", 4, ""), (4, "d", 4, "")],
    [(3, "C", 5, ""), (5, "e", 5, "D")],
]
STRATEGIES = {"key": KEY, "append": "{kind: append}"}


@pytest.mark.usefixtures("needs_record_in_commit")
@pytest.mark.parametrize("kind", list(STRATEGIES))
def test_a_backlog_in_one_commit_equals_one_by_one(ws, kind):
    """The same files, grouped and one by one: the same table (system columns included), the
    same log; the grouped run makes one commit for the five waiting batches, and its lineage
    names every one of them."""
    names = write_backlog(ws, BACKLOG)
    alone = ws.pipeline(
        table_yaml(STRATEGIES[kind], max_batches=1).replace("name: t", "name: t1"), name="one.yml"
    )
    grouped = ws.pipeline(table_yaml(STRATEGIES[kind]), name="grouped.yml")
    assert alone.run().ok
    result = grouped.run()
    assert result.ok and [b.batch_id for b in result.batches] == names

    def everything(p, table):
        df = p.table(table)
        return rows(df, sorted(c for c in df.columns if c != "_lf_updated_at" or kind == "key"))

    assert everything(grouped, "t") == everything(alone, "t1")
    assert logged_table(grouped, "t") == logged_table(alone, "t1")
    lineage = grouped.backend.published_batches(f"{ws.namespace}.t")
    assert sorted(lineage) == names and len(set(lineage.values())) == 2
    assert ws.version_counts([f"{ws.namespace}.t"])[f"{ws.namespace}.t"] == 2
    again = grouped.run()
    assert again.ok and again.batches == []


def logged_table(p, table: str) -> list[tuple]:
    return sorted(
        (
            r["batch_id"],
            dict(r["status_counts"]),
            r["record_count"],
            r["duplicate_count"],
            r["effective_count"],
        )
        for r in p.history(table)
        if r["status"] == "published"
    )


@pytest.mark.lease  # crash drills: a crashed run's lease must not keep the next run out
@pytest.mark.usefixtures("needs_record_in_commit")
def test_a_fault_in_a_group_leaves_the_target_at_a_published_batch_and_the_next_run_finishes(ws, monkeypatch):
    """A raise or a crash at the fault points of a group's middle batch (the contract suite,
    tests/spark/test_contract_strategies.py, passes every point with lone batches): before the
    publish the target keeps what it had (a raise falls back to one by one, which stops at that
    batch); after it, the group is in; either way the next run ends with the reference's table
    and log."""
    names = write_backlog(ws, BACKLOG)
    ref = ws.pipeline(table_yaml(KEY, max_batches=1).replace("name: t", "name: ref"), name="ref.yml")
    assert ref.run().ok
    expected_table, expected_log = (
        rows(ref.table("ref"), ["id", "v", "_lf_batch_id"]),
        logged_table(ref, "ref"),
    )
    middle = names[3]
    faults = [("after_read", "raise"), ("after_record_staged", "crash")]
    faults += [("after_publish", "raise"), ("after_publish", "crash")]
    for n, (point, action) in enumerate(faults):
        name = f"t{n}"
        p = ws.pipeline(table_yaml(KEY).replace("name: t", f"name: {name}"), name=f"{name}.yml")
        monkeypatch.setenv("LAKEFRESH_FAULTS", f"{point}@{middle}:{action}")
        with contextlib.suppress(SimulatedCrash):
            p.run()
        monkeypatch.delenv("LAKEFRESH_FAULTS")
        final = p.run()
        assert final.ok, (point, action, final.to_dict())
        assert rows(p.table(name), ["id", "v", "_lf_batch_id"]) == expected_table, (point, action)
        assert logged_table(p, name) == expected_log, (point, action)


@pytest.mark.usefixtures("needs_record_in_commit")
def test_rolling_back_into_a_group_is_refused_and_to_its_last_batch_is_not(ws):
    """A group's batches share one commit: a rollback can only stop before or after the group."""
    names = write_backlog(ws, BACKLOG)
    p = ws.pipeline(table_yaml(KEY))
    assert p.run().ok
    with pytest.raises(ConfigError, match="one commit with the later batch"):
        p.rollback("t", to_batch=names[2])
    assert rows(p.table("t"), ["id"]) != []
    done = p.rollback("t", to_batch=names[0])
    assert done.unloaded["t"] == list(reversed(names[1:]))
    assert rows(p.table("t"), ["id", "v"]) == [(1, "a"), (2, "b")]


@pytest.mark.usefixtures("needs_record_in_commit")
def test_groups_shrink_when_their_batches_hold_more_rows_than_max_rows(ws):
    """`backlog.max_rows`: a group that read more rows than that makes the next groups smaller."""
    names = write_backlog(ws, [[(n, "a", 1, "")] + [(n + 10, "b", 1, "")] * 2 for n in range(1, 8)])
    p = ws.pipeline(table_yaml(KEY).replace("{max_batches: 50}", "{max_batches: 3, max_rows: 4}"))
    assert p.run().ok
    commits: dict[int, list[str]] = {}
    for r in p.history("t"):
        commits.setdefault(r["published_snapshot_id"], []).append(r["batch_id"])
    # b00 creates the table; b01-b03 read 9 rows (> 4): the next groups take 4 * 3 // 9 = 1 batch
    assert sorted(sorted(c) for c in commits.values()) == [[n] for n in names[:1]] + [names[1:4]] + [
        [n] for n in names[4:]
    ]


@pytest.mark.lease
@pytest.mark.parametrize("backlog", [1, 50], ids=["one_by_one", "grouped"])
def test_a_publish_whose_outcome_is_unknown_is_settled_by_the_next_run(ws, monkeypatch, backlog):
    """The commit of the publish happens, then the catalog fails before lakefresh reads it back:
    nothing is undone or applied again (a new column stays, no row twice); the next run finds the
    batches in the lineage and completes their record, as after a crash at that point."""
    if backlog > 1:
        skip_without_record_in_commit(ws.spark)
    ws.write("in/b00.csv", csv([(1, "a", 1, "U")]), mtime=1_736_000_000)
    p = ws.pipeline(table_yaml(KEY, backlog))
    assert p.run().ok
    head = "id,v,ts,op,extra\n"
    ws.write(
        "in/b01.csv", head + "1,b,2025-01-02 00:00:00,U,y\n2,c,2025-01-02 00:00:00,U,y\n", mtime=1_736_003_600
    )
    ws.write("in/b02.csv", head + "3,d,2025-01-03 00:00:00,U,x\n", mtime=1_736_007_200)

    real = p.backend.publish

    def commits_then_fails(staged):
        real(staged)
        raise RuntimeError("the catalog went away")

    monkeypatch.setattr(p.backend, "publish", commits_then_fails)
    result = p.run()
    assert not result.ok
    assert "may have" in result.batches[0].error
    monkeypatch.undo()

    again = p.run()
    assert again.ok, again.to_dict()
    assert rows(p.table("t"), ["id", "v", "extra"]) == [(1, "b", "y"), (2, "c", "y"), (3, "d", "x")]
    published = [r["batch_id"] for r in p.history("t") if r["status"] == "published"]
    assert sorted(published) == ["b00.csv", "b01.csv", "b02.csv"]
