"""Property: for the `key` strategy, applying batches one by one gives the same table as applying
all their rows at once, and both equal a reference model: per key, the record with the latest
date wins, ties going to the later batch, then to the later row. With tombstones
(`soft_delete_column`), a delete is such a record too: the key stays deleted until a row newer
than the delete."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import Workspace, rows
from tests.key_model import key_reference

TABLE = """
- name: t
  source: {kind: files, path: in, format: csv, schema: {id: int, v: string, ts: timestamp}}
  strategy: {kind: key, keys: [id], date_column: ts}
"""

event = st.tuples(st.integers(1, 3), st.sampled_from("abc"), st.integers(1, 3))
batches = st.lists(st.lists(event, min_size=1, max_size=5), min_size=1, max_size=3)


def csv(events):
    return "id,v,ts\n" + "".join(f"{k},{v},2025-01-0{d} 00:00:00\n" for k, v, d in events)


def reference(batches):
    best = {}
    for b, events in enumerate(batches):
        for r, (key, value, day) in enumerate(events):
            rank = (day, b, r)
            if key not in best or rank > best[key][0]:
                best[key] = (rank, value)
    return sorted((key, value) for key, (_, value) in best.items())


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(batches=batches)
def test_one_by_one_equals_all_at_once_equals_the_reference(spark, warehouse, tmp_path_factory, batches):
    one_by_one = Workspace(tmp_path_factory.mktemp("one"), spark, warehouse)
    for n, events in enumerate(batches):
        one_by_one.write(f"in/b{n}.csv", csv(events))
    p1 = one_by_one.pipeline(TABLE)
    assert p1.run().ok

    at_once = Workspace(tmp_path_factory.mktemp("all"), spark, warehouse)
    at_once.write("in/all.csv", csv([e for events in batches for e in events]))
    p2 = at_once.pipeline(TABLE)
    assert p2.run().ok

    expected = reference(batches)
    assert rows(p1.table("t"), ["id", "v"]) == expected
    assert rows(p2.table("t"), ["id", "v"]) == expected


TOMBSTONES = """
- name: t
  source: {kind: files, path: in, format: csv, schema: {id: int, v: string, ts: timestamp, gone: boolean}}
  strategy: {kind: key, keys: [id], date_column: ts, delete: {column: gone}, soft_delete_column: is_deleted}
"""
# a value, or None: a delete
change = st.tuples(st.integers(1, 3), st.one_of(st.sampled_from("abc"), st.none()), st.integers(1, 3))
change_batches = st.lists(st.lists(change, min_size=1, max_size=5), min_size=1, max_size=4)


def csv_with_deletes(events):
    return "id,v,ts,gone\n" + "".join(
        f"{k},{v or ''},2025-01-0{d} 00:00:00,{'true' if v is None else 'false'}\n" for k, v, d in events
    )


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(batches=change_batches)
def test_tombstones_one_by_one_equal_the_reference(spark, warehouse, tmp_path_factory, batches):
    ws = Workspace(tmp_path_factory.mktemp("tomb"), spark, warehouse)
    for n, events in enumerate(batches):
        ws.write(f"in/b{n}.csv", csv_with_deletes(events))
    p = ws.pipeline(TOMBSTONES)
    result = p.run()
    assert result.ok, result.to_dict()
    # the reference: the latest record of a key wins, a delete leaving (key, NULL, deleted)
    expected = [(k, v, v is None) for k, v in reference(batches)]
    assert rows(p.table("t"), ["id", "v", "is_deleted"]) == sorted(
        expected, key=lambda t: tuple((x is None, str(x)) for x in t)
    )


# --- a plain table's MERGE judges its batch rows (src/lakefresh/strategies/key/merge.py) ---------

PLAIN = "{{kind: key, keys: [id], date_column: ts, delete: {{column: op, value: D}}, {options}}}"
PLAIN_SCHEMA = "{id: int, v: string, ts: timestamp, op: string}"
# (when_matched, when_not_matched)
CLAUSES = [("update", "insert"), ("delete", "insert"), ("ignore", "insert"), ("update", "ignore")]


def plain_yaml(clauses: tuple[str, str]) -> str:
    options = f"when_matched: {clauses[0]}, when_not_matched: {clauses[1]}"
    return (
        "- name: t\n"
        f"  source: {{kind: files, path: in, format: csv, schema: {PLAIN_SCHEMA}}}\n"
        f"  strategy: {PLAIN.format(options=options)}\n"
        "  backlog: {max_batches: 1}\n"
    )


def plain_csv(events) -> str:
    return "id,v,ts,op\n" + "".join(f"{k},{v},2025-01-0{d} 00:00:00,{op}\n" for k, v, d, op in events)


def plain_run(ws, batches, clauses, fast: bool = True):
    """The batches, each alone (`max_batches: 1`), under `clauses` (a list: each batch's own,
    each batch then taken by a run of its own that accepts the changed configuration)."""
    runs = [(clauses, list(enumerate(batches)))]
    if isinstance(clauses, list):
        runs = [(c, [(n, events)]) for n, (c, events) in enumerate(zip(clauses, batches, strict=True))]
    ws.spark.conf.set("spark.lakefresh.key.fastPath", str(fast).lower())
    try:
        for run_clauses, numbered in runs:
            for n, events in numbered:
                ws.write(f"in/b{n:02d}.csv", plain_csv(events))
            p = ws.pipeline(plain_yaml(run_clauses))
            result = p.run(accept_config_change=True)
            assert result.ok and len(result.batches) == len(numbered), result.to_dict()
    finally:
        ws.spark.conf.unset("spark.lakefresh.key.fastPath")
    logged = sorted(
        (r["batch_id"], dict(r["status_counts"]), r["duplicate_count"], r["effective_count"])
        for r in p.history("t")
        if r["status"] == "published"
    )
    return rows(p.table("t"), ["id", "v", "_lf_batch_id"]), logged


plain_event = st.tuples(
    st.integers(1, 4), st.sampled_from("ab"), st.integers(1, 3), st.sampled_from(["", "", "D"])
)


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    batches=st.lists(st.lists(plain_event, min_size=1, max_size=6), min_size=2, max_size=4),
    clauses=st.sampled_from(CLAUSES),
)
def test_a_plain_table_batch_by_batch_equals_the_reference_model(
    spark, warehouse, tmp_path_factory, batches, clauses
):
    """Each batch's status counts, duplicates and effective count, and the table, as key/strategy.py's rules
    give them, for a table whose MERGE judges each batch (hard deletes, `when_matched`,
    `when_not_matched`, duplicates, older rows): the batches where the writes outnumber the rows
    that change nothing take that path, the others the materialized change set."""
    ws = Workspace(tmp_path_factory.mktemp("plain"), spark, warehouse)
    assert plain_run(ws, batches, clauses) == key_reference(batches, clauses=clauses)


JUDGED = [
    [(1, "a", 1, ""), (2, "b", 1, ""), (3, "c", 2, ""), (4, "d", 2, ""), (5, "e", 1, "")],
    # 1: C, 2: D, 3: O, 4: S, 6: N, 7: U (a delete of a key not stored), 5: C
    [(1, "A", 2, ""), (2, "b", 2, "D"), (3, "C", 1, ""), (4, "d", 3, ""),
     (6, "f", 2, ""), (7, "g", 2, "D"), (5, "E", 2, "")],
]  # fmt: skip


def judged_batches(clauses: tuple[str, str]) -> list[list[tuple[int, str, int, str]]]:
    """`JUDGED`, with as many more writes as `clauses` need for the MERGE to judge the second
    batch: with `when_matched: ignore` its changed rows change nothing (M), so six more new keys;
    with `when_not_matched: ignore` its new keys change nothing (X), so eight more stored keys
    changed (deleted, if changes are ignored too; the first batch is inserted: `judged_clauses`)."""
    first, second = list(JUDGED[0]), list(JUDGED[1])
    if clauses == ("ignore", "insert"):
        second += [(k, "n", 2, "") for k in range(12, 18)]
    if clauses[1] == "ignore":
        first += [(k, "s", 1, "") for k in range(8, 16)]
        second += [(k, "S", 2, "D" if clauses[0] == "ignore" else "") for k in range(8, 16)]
    return [first, second]


EVERY_CLAUSE = [(m, n) for m in ("update", "delete", "ignore") for n in ("insert", "ignore")]


@pytest.mark.parametrize("clauses", EVERY_CLAUSE)
def test_the_merges_clauses_judge_as_the_status_codes_do(ws, clauses, monkeypatch):
    """A batch with a row of every status its clauses give, no duplicate keys, and more writes
    than rows that change nothing, so its MERGE judges it: the same counts, effective counts and
    table as the reference model, and as the materialized change set
    (`spark.lakefresh.key.fastPath` false), under every pair of `when_matched` and
    `when_not_matched`. A spy on `merge_judging` checks which road each batch took."""
    from lakefresh.strategies.key import merge, strategy

    judged = []  # the batches the MERGE judged
    monkeypatch.setattr(strategy, "merge_judging", lambda *a: judged.append(a) or merge.merge_judging(*a))
    batches, each = judged_batches(clauses), judged_clauses(clauses)
    expected = in_order(key_reference(batches, clauses=each))
    assert in_order(plain_run(ws, batches, each)) == expected
    assert len(judged) == 1  # the second batch (the first creates the table)
    again = Workspace(ws.root / "general", ws.spark, ws.warehouse)
    assert in_order(plain_run(again, batches, each, fast=False)) == expected
    assert len(judged) == 1


def judged_clauses(clauses: tuple[str, str]) -> tuple[str, str] | list[tuple[str, str]]:
    """A table that never inserts holds only rows another writer stored: here its first batch is
    inserted (`when_not_matched: insert`) and the table's configuration changed after it."""
    return [(clauses[0], "insert"), clauses] if clauses[1] == "ignore" else clauses


def in_order(run):
    """A run's table (sorted by key: `rows` sorts as text, so 12 before 3) and its log."""
    table, logged = run
    return sorted(table), logged
