"""Properties of `snapshot` and `sequence` against simple reference models, on random batches."""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import Workspace, rows

SNAPSHOTS = """
- name: t
  source: {kind: files, path: in, format: csv, schema: {id: int, v: string}}
  strategy: {kind: snapshot, keys: [id]}
"""

SEQUENCE = """
- name: t
  source: {kind: files, path: in, format: csv, schema: {seq: int, v: string}}
  strategy: {kind: sequence, column: seq}
"""

snapshot = st.dictionaries(st.integers(1, 4), st.sampled_from("abc"), max_size=4)
ranged = st.lists(st.tuples(st.integers(0, 12), st.sampled_from("xyz")), max_size=4)


def snapshot_events(before: dict[int, str], after: dict[int, str]) -> Counter[str]:
    events: Counter[str] = Counter()
    events["+A"] = len(after.keys() - before.keys())
    events["-R"] = len(before.keys() - after.keys())
    for key in after.keys() & before.keys():
        if after[key] != before[key]:
            events["-C"] += 1
            events["+C"] += 1
    return +events  # drop zero counts


@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(snapshots=st.lists(snapshot, min_size=1, max_size=4))
def test_the_log_holds_exactly_the_differences_and_its_state_is_the_last_snapshot(
    spark, warehouse, tmp_path_factory, snapshots
):
    ws = Workspace(tmp_path_factory.mktemp("snap"), spark, warehouse)
    for n, snap in enumerate(snapshots):
        ws.write(f"in/s{n}.csv", "id,v\n" + "".join(f"{k},{v}\n" for k, v in snap.items()))
    p = ws.pipeline(SNAPSHOTS)
    result = p.run()
    assert result.ok, result.to_dict()
    previous: dict[int, str] = {}
    for batch, snap in zip(result.batches, snapshots, strict=True):
        assert Counter(batch.counts) == snapshot_events(previous, snap)
        previous = snap
    assert rows(p.current("t"), ["id", "v"]) == sorted(snapshots[-1].items())
    offsets = [r[0] for r in p.table("t").select("offset").collect()]
    assert sorted(offsets) == list(range(len(offsets)))


@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(batches=st.lists(ranged, min_size=1, max_size=4))
def test_each_batch_replaces_its_range_as_the_reference_does(spark, warehouse, tmp_path_factory, batches):
    ws = Workspace(tmp_path_factory.mktemp("seq"), spark, warehouse)
    table: list[tuple[int, str, str]] = []
    for n, batch in enumerate(batches):
        name = f"b{n}.csv"
        ws.write(f"in/{name}", "seq,v\n" + "".join(f"{s},{v}\n" for s, v in batch))
        if batch:
            low, high = min(s for s, _ in batch), max(s for s, _ in batch)
            table = [r for r in table if not low <= r[0] <= high]
        table += [(s, v, name) for s, v in batch]
    p = ws.pipeline(SEQUENCE)
    assert p.run().ok
    assert rows(p.table("t"), ["seq", "v", "_lf_batch_id"]) == rows_sorted(table)
    effective = {r["batch_id"]: r["effective_count"] for r in p.history("t")}
    assert effective == {
        f"b{n}.csv": sum(1 for r in table if r[2] == f"b{n}.csv") for n in range(len(batches))
    }


def rows_sorted(items):
    return sorted(items, key=lambda t: tuple((x is None, str(x)) for x in t))
