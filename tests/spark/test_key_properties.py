"""Property: for the `key` strategy, applying batches one by one gives the same table as applying
all their rows at once, and both equal a reference model: per key, the record with the latest
date wins, ties going to the later batch, then to the later row."""

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
