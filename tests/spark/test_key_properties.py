"""Property: for the `key` strategy, applying batches one by one gives the same table as applying
all their rows at once, and both equal a reference model: per key, the record with the latest
date wins, ties going to the later batch, then to the later row. With tombstones
(`soft_delete_column`), a delete is such a record too: the key stays deleted until a row newer
than the delete."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import Workspace, rows

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
