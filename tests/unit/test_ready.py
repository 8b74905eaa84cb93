"""`sources.ready`: the batches a run takes, and those that wait (a file still being written)."""

from __future__ import annotations

from datetime import datetime

from lakefresh.sources import BatchRef, ready


def ref(batch_id: str, waits: str | None = None) -> BatchRef:
    return BatchRef(batch_id, batch_id, (batch_id,), datetime(2025, 1, 1), waits=waits)


def test_batches_up_to_the_first_that_waits_are_taken_and_the_rest_wait_in_order():
    listed = [ref("a"), ref("b", "still written"), ref("c"), ref("d", "still written")]
    take, waiting = ready(listed, applied=set())
    assert [r.batch_id for r in take] == ["a"]
    assert waiting == [
        ("b", "still written"),
        ("c", "after 'b', which waits (batches stay in order)"),
        ("d", "still written"),
    ]


def test_a_taken_batch_that_would_wait_holds_nothing_up():
    listed = [ref("a", "touched after it was taken"), ref("b"), ref("c")]
    take, waiting = ready(listed, applied={"a"})
    assert ([r.batch_id for r in take], waiting) == (["b", "c"], [])
