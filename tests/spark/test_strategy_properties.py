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


SOURCE = (
    "{kind: files, path: in, format: csv, order_by: modified, schema: {id: int, v: string, gone: boolean}}"
)
UPSERT_TWINS = f"""
- name: table
  source: {SOURCE}
  strategy: {{kind: key, keys: [id], delete: {{column: gone}}, drop_columns: [gone]}}
- name: log
  source: {SOURCE}
  strategy: {{kind: key, keys: [id], delete: {{column: gone}}, drop_columns: [gone], output: change_log}}
"""
upserts = st.lists(st.tuples(st.integers(1, 4), st.sampled_from("ab"), st.booleans()), max_size=4)


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(batches=st.lists(upserts, min_size=1, max_size=4))
def test_an_upsert_streams_log_folds_to_the_key_table_of_the_same_batches(
    spark, warehouse, tmp_path_factory, batches
):
    """`key` with `output: change_log` against `key` itself: the log's current state, and the
    log folded event by event (+A/+C set a key, -R removes it; -C precedes its +C), equal the
    table the same batches make; its offsets run 0, 1, 2, ... without a gap."""
    ws = Workspace(tmp_path_factory.mktemp("upserts"), spark, warehouse)
    for n, batch in enumerate(batches):
        body = "".join(f"{k},{'' if gone else v},{str(gone).lower()}\n" for k, v, gone in batch)
        ws.write(f"in/b{n}.csv", "id,v,gone\n" + body, mtime=1.7e9 + n * 60)
    p = ws.pipeline(UPSERT_TWINS)
    result = p.run()
    assert result.ok, result.to_dict()
    table = rows(p.table("table"), ["id", "v"])
    assert rows(p.current("log"), ["id", "v"]) == table
    folded: dict[int, str] = {}
    events = p.table("log").orderBy("offset").collect()
    for event in events:
        if event["op"] in ("+A", "+C"):
            folded[event["id"]] = event["v"]
        elif event["op"] == "-R":
            del folded[event["id"]]
    assert sorted(folded.items()) == table
    assert [e["offset"] for e in events] == list(range(len(events)))
