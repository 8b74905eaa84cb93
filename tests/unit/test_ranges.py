"""Effective ranges: what part of its range each batch still owns. No JVM."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lakefresh.ranges import Interval, effective_ranges, sort_key, subtract


def texts(pieces: list[Interval]) -> list[str]:
    return [str(p) for p in pieces]


def test_a_later_range_inside_an_earlier_one_splits_it_in_two():
    assert texts(subtract([Interval("1", "10")], "4", "6", sort_key("sequence"))) == ["[1, 4)", "(6, 10]"]


def test_overlapping_contained_and_disjoint_batches():
    owned = effective_ranges(
        [("a", "1", "10"), ("b", "8", "12"), ("c", "3", "3"), ("d", "20", "30")],
        "sequence",
    )
    assert {b: texts(p) for b, p in owned.items()} == {
        "a": ["[1, 3)", "(3, 8)"],
        "b": ["[8, 12]"],
        "c": ["[3, 3]"],
        "d": ["[20, 30]"],
    }


def test_a_batch_covering_everything_leaves_earlier_batches_nothing():
    owned = effective_ranges([("a", "1", "5"), ("b", "2", "2"), ("c", "0", "9")], "sequence")
    assert {b: texts(p) for b, p in owned.items()} == {"a": [], "b": [], "c": ["[0, 9]"]}


def test_an_empty_batch_owns_nothing_and_takes_nothing():
    owned = effective_ranges([("a", "1", "5"), ("b", None, None)], "sequence")
    assert {b: texts(p) for b, p in owned.items()} == {"a": ["[1, 5]"], "b": []}


def test_numbers_compare_as_numbers_and_timestamps_as_fixed_width_text():
    assert texts(subtract([Interval("9", "100")], "10", "20", sort_key("sequence"))) == [
        "[9, 10)",
        "(20, 100]",
    ]
    day = "2025-01-0{} 00:00:00.000000"
    pieces = subtract(
        [Interval(day.format(1), day.format(5))], day.format(2), day.format(3), sort_key("timestamp")
    )
    assert texts(pieces) == [f"[{day.format(1)}, {day.format(2)})", f"({day.format(3)}, {day.format(5)}]"]


spans = st.lists(
    st.tuples(st.integers(0, 30), st.integers(0, 10)).map(lambda t: (t[0], t[0] + t[1])),
    min_size=1,
    max_size=8,
)


@given(spans)
def test_each_point_is_owned_by_the_last_batch_whose_range_holds_it(batches):
    """The oracle: for every integer point (and every half point, for open ends), the owner is
    the latest batch whose closed range contains it."""
    named = [(f"b{i}", str(lo), str(hi)) for i, (lo, hi) in enumerate(batches)]
    owned = effective_ranges(named, "sequence")
    for doubled in range(0, 2 * 41):
        x = doubled / 2
        expected = None
        for name, lo, hi in named:
            if int(lo) <= x <= int(hi):
                expected = name
        holders = [name for name, pieces in owned.items() for p in pieces if _contains_half(p, x)]
        assert holders == ([expected] if expected else []), (x, owned)


def _contains_half(piece: Interval, x: float) -> bool:
    lo, hi = float(piece.start), float(piece.end)
    return (lo < x or (lo == x and piece.start_inclusive)) and (x < hi or (x == hi and piece.end_inclusive))
