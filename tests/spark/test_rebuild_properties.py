"""Property: for random batch sequences and a random set of unloaded batches, the `key`
table equals what the reference model of tests/spark/test_key_properties.py gives for only the
remaining batches, in order (per key the latest date wins, ties to the later batch, then row);
reloading one of them gives the model of the batches then live."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import Workspace, rows
from tests.spark.test_key_properties import TABLE, batches, csv, reference


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(batches=batches.filter(lambda b: len(b) >= 2), data=st.data())
def test_unload_and_reload_equal_the_reference_of_the_live_batches(
    spark, warehouse, tmp_path_factory, batches, data
):
    ws = Workspace(tmp_path_factory.mktemp("verbs"), spark, warehouse)
    names = [f"b{n}.csv" for n in range(len(batches))]
    for name, events in zip(names, batches, strict=True):
        ws.write(f"in/{name}", csv(events))
    p = ws.pipeline(TABLE)
    assert p.run().ok

    gone = data.draw(st.sets(st.sampled_from(names), min_size=1, max_size=len(names) - 1), label="unloaded")
    p.unload("t", sorted(gone))
    live = [events for name, events in zip(names, batches, strict=True) if name not in gone]
    assert rows(p.table("t"), ["id", "v"]) == reference(live)

    back = data.draw(st.sampled_from(sorted(gone)), label="reloaded")
    p.reload("t", [back])
    live = [events for name, events in zip(names, batches, strict=True) if name not in gone - {back}]
    assert rows(p.table("t"), ["id", "v"]) == reference(live)
    assert p.run().batches == []
