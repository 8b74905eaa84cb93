"""Property: random event sequences for a few keys, cut into random batches that arrive in a
random order, always give the SCD2 table a simple reference computes from all events at once:
with change detection by columns or by sequence, and deletes that close a version or open a
deletion version (dbt's new_record). And: random full snapshots with their batch times give the
history of applying them in time order, whatever order or groups of runs they arrive in, with
deletes that close a version or open a deletion version, though re-sent rows write nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

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


# full snapshots: batch time (hours after 2025-01-01) -> the snapshot's rows, key -> value
snapshot_map = st.dictionaries(
    st.integers(0, 47),
    st.dictionaries(st.integers(1, 3), st.sampled_from("ab"), min_size=1, max_size=3),
    min_size=1,
    max_size=4,
)


def _h(hour: int) -> datetime:
    return datetime(2025, 1, 1) + timedelta(hours=hour)


def snapshots_reference(snapshots: dict[int, dict[int, str]]) -> list[tuple]:
    """Versions (id, v, valid_from, valid_to, is_current, is_deleted) of the snapshots applied in
    time order: a changed value opens a version, a key a snapshot lacks is closed, deleted."""
    out, current = [], {}  # key -> (start, value)
    for hour in sorted(snapshots):
        rows_now = snapshots[hour]
        for key, value in rows_now.items():
            if key in current and current[key][1] != value:
                out.append((key, current[key][1], _h(current[key][0]), _h(hour), False, False))
            if key not in current or current[key][1] != value:
                current[key] = (hour, value)
        for key in [k for k in current if k not in rows_now]:
            out.append((key, current[key][1], _h(current[key][0]), _h(hour), False, True))
            del current[key]
    out += [(key, value, _h(start), None, True, False) for key, (start, value) in current.items()]
    return sorted(out, key=lambda t: tuple((x is None, str(x)) for x in t))


SNAPSHOT_TABLE = """
- name: %(name)s
  format: %(format)s
  source: {kind: files, path: %(name)s, format: csv, schema: {id: int, v: string}}
  strategy: {kind: scd2, keys: [id], full_snapshots: true, soft_delete_column: is_deleted}
"""


# on Iceberg: the strategy's statements do not depend on the format (test_scd2.py's docstring)
@pytest.mark.parametrize("table_format", ["iceberg"])
@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(snapshots=snapshot_map, data=st.data())
def test_full_snapshots_give_the_history_in_time_order_whatever_their_arrival(
    spark, warehouse, tmp_path_factory, table_format, snapshots, data
):
    hours = sorted(snapshots)
    shuffled = data.draw(st.permutations(hours))
    grouped = data.draw(st.permutations(hours))
    run_after = data.draw(st.lists(st.booleans(), min_size=len(hours), max_size=len(hours)))
    ws = Workspace(tmp_path_factory.mktemp("scd2_snapshots"), spark, warehouse)

    def arrive(name: str, position: int, hour: int) -> None:  # file names sort in arrival order
        body = "".join(f"{k},{v}\n" for k, v in sorted(snapshots[hour].items()))
        mtime = _h(hour).replace(tzinfo=UTC).timestamp()
        ws.write(f"{name}/{position:02d}.csv", "id,v\n" + body, mtime=mtime)

    for name, order in (("in_time", hours), ("shuffled", shuffled)):
        for position, hour in enumerate(order):
            arrive(name, position, hour)
    tables = ["in_time", "shuffled", "grouped"]
    p = ws.pipeline("".join(SNAPSHOT_TABLE % {"name": t, "format": table_format} for t in tables))
    for position, hour in enumerate(grouped):  # runs over random groups of arrivals
        arrive("grouped", position, hour)
        if run_after[position] or position == len(grouped) - 1:
            result = p.run()
            assert result.ok, result.to_dict()
    expected = snapshots_reference(snapshots)
    for table in tables:
        versions = p.table(table).filter("valid_to IS NULL OR valid_from < valid_to")
        got = rows(versions, ["id", "v", "valid_from", "valid_to", "is_current", "is_deleted"])
        assert got == expected, (table, shuffled, grouped)


def snapshots_reference_new_record(snapshots: dict[int, dict[int, str]]) -> list[tuple]:
    """As `snapshots_reference`, with `deletes: new_record`: a key a snapshot lacks is closed and
    a deletion version repeating its last value opens (flagged), closed when the key returns."""
    out, current = [], {}  # key -> (start, value, is a deletion version)
    for hour in sorted(snapshots):
        rows_now = snapshots[hour]
        for key, value in rows_now.items():
            was = current.get(key)
            if was is None or was[2] or was[1] != value:
                if was is not None:
                    out.append((key, was[1], _h(was[0]), _h(hour), False, was[2]))
                current[key] = (hour, value, False)
        for key in [k for k, (_, _, gone) in current.items() if k not in rows_now and not gone]:
            start, value, _ = current[key]
            out.append((key, value, _h(start), _h(hour), False, False))
            current[key] = (hour, value, True)
    out += [(key, value, _h(start), None, True, gone) for key, (start, value, gone) in current.items()]
    return sorted(out, key=lambda t: tuple((x is None, str(x)) for x in t))


# few keys and values, so that many snapshots change nothing (their times only the table's
# witness keeps) and many keys come back unchanged after an absence
repeating_snapshots = st.dictionaries(
    st.integers(0, 23),
    st.dictionaries(st.integers(1, 2), st.sampled_from("ab"), min_size=1, max_size=2),
    min_size=2,
    max_size=5,
)


@pytest.mark.parametrize("deletes", ["close", "new_record"])
@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(snapshots=repeating_snapshots, data=st.data())
def test_snapshots_that_arrive_late_re_cut_history_though_re_sent_rows_write_nothing(
    spark, warehouse, tmp_path_factory, deletes, snapshots, data
):
    # the default for full snapshots (resent_rows: derive): one run per arrival, so each late
    # snapshot finds the re-sends of the newer ones implied by the versions, not stored
    hours = sorted(snapshots)
    order = data.draw(st.permutations(hours))
    ws = Workspace(tmp_path_factory.mktemp("scd2_derive"), spark, warehouse)
    table = SNAPSHOT_TABLE % {"name": "dim", "format": "iceberg"}
    p = ws.pipeline(table.replace("is_deleted}", f"is_deleted, deletes: {deletes}}}"))
    for position, hour in enumerate(order):
        body = "".join(f"{k},{v}\n" for k, v in sorted(snapshots[hour].items()))
        mtime = _h(hour).replace(tzinfo=UTC).timestamp()
        ws.write(f"dim/{position:02d}.csv", "id,v\n" + body, mtime=mtime)
        result = p.run()
        assert result.ok, result.to_dict()
    expected = (snapshots_reference if deletes == "close" else snapshots_reference_new_record)(snapshots)
    stored = p.table("dim")
    versions = stored.filter("valid_to IS NULL OR valid_from < valid_to")
    got = rows(versions, ["id", "v", "valid_from", "valid_to", "is_current", "is_deleted"])
    assert got == expected, order
