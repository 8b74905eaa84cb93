"""Property: random event sequences for a few keys, cut into random batches that arrive in a
random order, always give the SCD2 table a simple reference computes from all events at once:
with change detection by columns or by sequence, and deletes that close a version or open a
deletion version (dbt's new_record)."""

from __future__ import annotations

from datetime import datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import Workspace, rows

DIM = """
- name: dim
  source: {kind: files, path: in, format: csv, schema: {id: int, v: string, day: timestamp, gone: boolean}}
  strategy:
    kind: scd2
    keys: [id]
    sequence_by: day
    delete: {column: gone, value: true}
    soft_delete_column: is_deleted
    change_detection: %s
    deletes: %s
"""

# one event per (key, day): a value, or a delete
event_map = st.dictionaries(
    st.tuples(st.integers(1, 2), st.integers(1, 9)),
    st.one_of(st.sampled_from("ab"), st.none()),
    min_size=1,
    max_size=10,
)


def reference(
    events: dict[tuple[int, int], str | None], detection: str = "columns", deletes: str = "close"
) -> list[tuple]:
    """Versions (id, v, valid_from, valid_to, is_current, is_deleted) from all events at once."""
    out = []
    for key in sorted({k for k, _ in events}):
        current = None  # (day, value, is a deletion version)
        for day in sorted(d for k, d in events if k == key):
            value = events[(key, day)]
            if value is None:
                if current and not current[2]:  # a delete of a live version
                    out.append((key, current[1], day, current[0], False, deletes == "close"))
                    current = (day, current[1], True) if deletes == "new_record" else None
            elif current is None:
                current = (day, value, False)
            elif current[2] or detection == "sequence" or current[1] != value:
                out.append((key, current[1], day, current[0], False, current[2]))
                current = (day, value, False)
        if current:
            out.append((key, current[1], None, current[0], True, current[2]))
    return sorted(
        ((k, v, _d(start), _d(end) if end else None, cur, deleted) for k, v, end, start, cur, deleted in out),
        key=lambda t: tuple((x is None, str(x)) for x in t),
    )


def _d(day: int) -> datetime:
    return datetime(2025, 1, day)


MODES = [("columns", "close"), ("sequence", "close"), ("columns", "new_record")]


@pytest.mark.parametrize(("detection", "deletes"), MODES, ids=["-".join(m) for m in MODES])
@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(events=event_map, data=st.data())
def test_any_batching_and_arrival_order_gives_the_reference_history(
    spark, warehouse, tmp_path_factory, detection, deletes, events, data
):
    items = list(events.items())
    cuts = data.draw(st.lists(st.integers(0, 2), min_size=len(items), max_size=len(items)))
    order = data.draw(st.permutations(range(3)))
    ws = Workspace(tmp_path_factory.mktemp("scd2"), spark, warehouse)
    for position, batch in enumerate(order):
        chosen = [item for item, cut in zip(items, cuts, strict=True) if cut == batch]
        body = "".join(
            f"{k},{v or ''},2025-01-0{day},{'true' if v is None else 'false'}\n" for (k, day), v in chosen
        )
        ws.write(f"in/b{position}.csv", "id,v,day,gone\n" + body)
    p = ws.pipeline(DIM % (detection, deletes))
    result = p.run()
    assert result.ok, result.to_dict()
    # tombstones (valid_from = valid_to) keep deletes of keys with no version: not versions
    versions = p.table("dim").filter("valid_to IS NULL OR valid_from < valid_to")
    got = rows(versions, ["id", "v", "valid_from", "valid_to", "is_current", "is_deleted"])
    assert got == reference(events, detection, deletes)
