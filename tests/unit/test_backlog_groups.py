"""How a backlog is cut into groups (src/lakefresh/run/backlog.py), and which tables are grouped."""

from __future__ import annotations

from datetime import datetime

from lakefresh.run.backlog import groups
from lakefresh.sources import BatchRef


def ref(name: str, backfill: bool = False) -> BatchRef:
    replay = {"kind": "files", "files": [name]} | ({"backfill": "overwrite"} if backfill else {})
    return BatchRef(name, name, (name,), datetime(2025, 1, 1), replay=replay)


def ids(cut) -> list[list[str]]:
    return [[r.batch_id for r in group] for group in cut]


def test_runs_of_at_most_the_group_size_in_order():
    refs = [ref(f"b{n}") for n in range(5)]
    assert ids(groups(refs, 2)) == [["b0", "b1"], ["b2", "b3"], ["b4"]]
    assert ids(groups(refs, 1)) == [["b0"], ["b1"], ["b2"], ["b3"], ["b4"]]


def test_the_batch_that_creates_the_table_and_a_backfill_stand_alone():
    refs = [ref("b0"), ref("b1"), ref("b2"), ref("bf", backfill=True), ref("b3"), ref("b4")]
    assert ids(groups(refs, 10, first_alone=True)) == [["b0"], ["b1", "b2"], ["bf"], ["b3", "b4"]]


def test_a_callable_size_is_asked_as_each_group_starts():
    sizes = iter([3, 1, 2])
    refs = [ref(f"b{n}") for n in range(6)]
    assert ids(groups(refs, lambda: next(sizes))) == [["b0", "b1", "b2"], ["b3"], ["b4", "b5"]]
