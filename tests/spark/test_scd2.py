"""Strategy `scd2`: given these batches, the dimension holds exactly these versions.

The strategy's statements do not depend on the table format (the contract suites and
tests/spark/test_backend_seam.py check Delta's side of each write), so these tests run on
Iceberg, but for the one whose skipped rows rest on the record each format's commit carries."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from pyspark.sql import functions as F
from pyspark.sql.types import TimestampType

from lakefresh.strategies.scd2.events import decode, encode
from tests.conftest import CATALOG, rows, skip_without_record_in_commit

DIM = """
- name: dim
  source:
    kind: files
    path: in
    format: csv
    schema: {id: int, city: string, note: string, day: timestamp, gone: boolean}
  strategy:
    kind: scd2
    keys: [id]
    sequence_by: day
    track_except: [note]
    delete: {column: gone, value: true}
    soft_delete_column: is_deleted
"""

HEADER = "id,city,note,day,gone\n"
ARRAY_FORM = "array<struct<seq:timestamp,del:boolean>>"  # `_lf_events` before the text form


def d(day: int) -> datetime:
    return datetime(2025, 1, day)


def line(key, city, day, note="", gone="false"):
    return f"{key},{city},{note},2025-01-{day:02d},{gone}\n"


def versions(p):
    return rows(p.table("dim"), ["id", "city", "valid_from", "valid_to", "is_current", "is_deleted"])


def check_invariants(p):
    df = p.table("dim")
    current = [r for r in df.collect() if r["is_current"]]
    assert len({r["id"] for r in current}) == len(current), "one current row per key"
    by_key = {}
    for r in df.collect():
        by_key.setdefault(r["id"], []).append((r["valid_from"], r["valid_to"]))
    for spans in by_key.values():
        spans.sort()
        for (_, end), (start, _) in itertools.pairwise(spans):
            assert end is not None and end <= start, f"overlap in {spans}"


def test_several_changes_of_one_key_in_one_batch_each_become_a_version(ws):
    ws.write("in/b1.csv", HEADER + line(1, "Oslo", 1) + line(1, "Rome", 3) + line(1, "Kyiv", 2))
    p = ws.pipeline(DIM)
    result = p.run()
    assert result.ok, result.to_dict()
    assert result.batches[0].counts == {"N": 1, "C": 2}
    assert versions(p) == [
        (1, "Kyiv", d(2), d(3), False, False),
        (1, "Oslo", d(1), d(2), False, False),
        (1, "Rome", d(3), None, True, False),
    ]


def test_a_late_event_is_slotted_into_history_and_the_versions_around_it_re_cut(ws):
    ws.write("in/b1.csv", HEADER + line(1, "Oslo", 1) + line(1, "Rome", 5))
    ws.write("in/b2.csv", HEADER + line(1, "Kyiv", 3))
    p = ws.pipeline(DIM)
    result = p.run()
    assert result.batches[1].counts == {"L": 1}
    assert versions(p) == [
        (1, "Kyiv", d(3), d(5), False, False),
        (1, "Oslo", d(1), d(3), False, False),
        (1, "Rome", d(5), None, True, False),
    ]
    check_invariants(p)


def test_an_unchanged_row_resent_opens_nothing_and_an_untracked_change_updates_in_place(ws):
    ws.write("in/b1.csv", HEADER + line(1, "Oslo", 1, note="a") + line(2, "Rome", 1))
    ws.write("in/b2.csv", HEADER + line(1, "Oslo", 4, note="b") + line(2, "Rome", 4))
    p = ws.pipeline(DIM)
    result = p.run()
    assert result.batches[1].counts == {"T": 1, "U": 1}
    # a version keeps its valid_from, and records its latest event's values (note, day)
    assert rows(p.table("dim"), ["id", "city", "note", "day", "valid_from", "valid_to"]) == [
        (1, "Oslo", "b", d(4), d(1), None),
        (2, "Rome", None, d(4), d(1), None),
    ]
    ws.write("in/b3.csv", HEADER + line(1, "Oslo", 4, note="b") + line(2, "Rome", 1))
    result = p.run()  # an exact repeat, and a stored event re-sent
    assert result.batches[0].counts == {"U": 2}
    assert rows(p.table("dim"), ["id", "note", "day", "valid_from"]) == [
        (1, "b", d(4), d(1)),
        (2, None, d(4), d(1)),
    ]


def test_a_delete_closes_the_version_and_a_reinsert_opens_a_new_one(ws):
    ws.write("in/b1.csv", HEADER + line(1, "Oslo", 1) + line(2, "Rome", 1))
    ws.write("in/b2.csv", HEADER + line(1, "Oslo", 3, gone="true") + line(3, "Lima", 3, gone="true"))
    ws.write("in/b3.csv", HEADER + line(1, "Bern", 6))
    p = ws.pipeline(DIM)
    result = p.run()
    assert [b.counts for b in result.batches] == [{"N": 2}, {"D": 1, "U": 1}, {"N": 1}]
    assert versions(p) == [
        (1, "Bern", d(6), None, True, False),
        (1, "Oslo", d(1), d(3), False, True),
        (2, "Rome", d(1), None, True, False),
        (3, None, d(3), d(3), False, True),  # a tombstone: key 3 was deleted before it was seen
    ]
    check_invariants(p)
    assert p.run().batches == []  # every batch applied once; a re-run changes nothing


def test_a_late_event_after_a_delete_does_not_reopen_the_key(ws):
    ws.write("in/b1.csv", HEADER + line(1, "Oslo", 1) + line(1, "x", 5, gone="true"))
    ws.write("in/b2.csv", HEADER + line(1, "Rome", 3))
    p = ws.pipeline(DIM)
    assert p.run().ok
    assert versions(p) == [
        (1, "Oslo", d(1), d(3), False, False),
        (1, "Rome", d(3), d(5), False, True),
    ]


def test_a_late_delete_splits_a_version_at_the_events_it_absorbed(ws):
    # found by the property test: a@6 is absorbed into the version a@2.., then a delete at 5
    # arrives; the key must reopen at 6 (the first absorbed event after the delete), not at 7
    ws.write("in/b1.csv", HEADER + line(2, "a", 7) + line(2, "a", 6))
    ws.write("in/b2.csv", HEADER + line(2, "a", 2))
    ws.write("in/b3.csv", HEADER + line(2, "a", 5, gone="true") + line(2, "a", 1))
    p = ws.pipeline(DIM)
    assert p.run().ok
    assert versions(p) == [
        (2, "a", d(1), d(5), False, True),
        (2, "a", d(6), None, True, False),
    ]
    check_invariants(p)


def test_an_early_delete_is_remembered_for_rows_that_arrive_later(ws):
    # found by the property test: the delete arrives first, the rows around it later
    ws.write("in/b1.csv", HEADER + line(2, "a", 5, gone="true"))
    ws.write("in/b2.csv", HEADER + line(2, "a", 1) + line(2, "a", 2) + line(2, "a", 7))
    p = ws.pipeline(DIM)
    result = p.run()
    assert result.ok, result.to_dict()
    assert versions(p) == [
        (2, "a", d(1), d(5), False, True),
        (2, "a", d(7), None, True, False),
    ]
    check_invariants(p)


def test_the_fast_path_writes_exactly_what_recomputing_history_writes(ws, spark):
    # keys with one event newer than all they hold skip the recomputation; the rest of the batch
    # takes it; with the fast path off, everything does: the tables must not differ in any column.
    # The second table keeps `_lf_events` as an array, as tables written before the text form do.
    dim = DIM + "    surrogate_key: {column: dim_sk, generator: sequence}\n"
    batches = {
        "b1": [
            *(line(1, "Oslo", 1), line(2, "Rome", 1), line(3, "Kyiv", 1), line(4, "Lima", 1)),
            *(line(5, "Bern", 1, note="a"), line(6, "x", 1, gone="true")),
        ],
        "b2": [
            *(line(1, "Riga", 3), line(2, "Rome", 3, gone="true"), line(3, "Kyiv", 3)),
            *(line(5, "Bern", 3, note="b"), line(7, "Pisa", 3), line(4, "Nice", 2)),
            *(line(4, "Lima", 4), line(6, "Rome", 2)),
        ],
        "b3": [line(1, "Graz", 2), line(2, "Oslo", 5), line(3, "Kiev", 5), line(8, "Oslo", 5)],
        "b4": [line(3, "Kyiv", 6), line(7, "x", 6, gone="true"), line(5, "Bern", 6, note="c")],
    }
    for name, lines in batches.items():
        ws.write(f"in/{name}.csv", HEADER + "".join(lines))
    fast = ws.pipeline(dim)
    fast_result = fast.run()
    assert [b.counts for b in fast_result.batches] == [
        {"N": 5, "U": 1},
        {"C": 3, "D": 1, "U": 1, "T": 1, "N": 2},  # C, D, U, T and N of keys 1, 2, 3, 5, 7: fast
        {"L": 1, "N": 2, "C": 1},  # C of key 3 and N of key 8: fast
        {"C": 1, "D": 1, "T": 1},  # all fast
    ]
    fast_table = f"{CATALOG}.{ws.namespace}.dim"
    assert spark.table(fast_table).schema["_lf_events"].dataType.simpleString() == "string"
    old_form = ", ".join(
        f"`{f.name}` {ARRAY_FORM if f.name == '_lf_events' else f.dataType.simpleString()}"
        for f in spark.table(fast_table).schema.fields
    )
    spark.sql(
        f"CREATE TABLE {CATALOG}.{ws.namespace}.dim_general ({old_form}) USING iceberg "
        "TBLPROPERTIES ('format-version'='2', 'write.wap.enabled'='true')"
    )
    spark.conf.set("spark.lakefresh.scd2.fastPath", "false")
    try:
        general = ws.pipeline(dim.replace("name: dim", "name: dim_general"), name="general.yml")
        general_result = general.run()
    finally:
        spark.conf.unset("spark.lakefresh.scd2.fastPath")

    def outcome(result):
        return [(b.batch_id, b.counts, b.duplicates, b.effective_count) for b in result.batches]

    assert outcome(fast_result) == outcome(general_result)
    columns = fast.table("dim").columns
    fast_rows = fast.table("dim").withColumn("_lf_events", decode(F.col("_lf_events"), TimestampType()))
    assert rows(fast_rows, columns) == rows(general.table("dim_general"), columns)
    assert general.table("dim_general").schema["_lf_events"].dataType.simpleString() == ARRAY_FORM
    check_invariants(fast)


def test_stored_events_round_trip_exactly_through_their_text_form(spark):
    values = {
        "timestamp": "TIMESTAMP'1969-12-31 23:59:59.999999', TIMESTAMP'2025-03-30 02:30:00.000001'",
        "timestamp_ntz": "TIMESTAMP_NTZ'2025-03-30 02:30:00.5', TIMESTAMP_NTZ'1900-01-01 00:00:00'",
        "date": "DATE'2025-01-31', DATE'0001-01-01'",
        "bigint": "-9223372036854775808L, 42L",
        "decimal(20,4)": "CAST(-1.0500 AS decimal(20,4)), CAST(12345678901234.5678 AS decimal(20,4))",
        "double": "0.1D, -1.7976931348623157E308D",
    }
    for kind, pair in values.items():
        events = spark.sql(
            f"SELECT array(named_struct('seq', CAST(a AS {kind}), 'del', false), "
            f"named_struct('seq', CAST(b AS {kind}), 'del', true)) AS e FROM VALUES ({pair}) t(a, b)"
        )
        seq_type = events.schema["e"].dataType.elementType["seq"].dataType
        text = events.select(F.col("e"), encode(F.col("e"), seq_type).alias("t"))
        back = text.select(F.col("e"), F.col("t"), decode(F.col("t"), seq_type).alias("back")).first()
        assert back["back"] == back["e"], (kind, back["t"])
    empty = spark.sql("SELECT CAST(array() AS array<struct<seq:timestamp,del:boolean>>) AS e")
    assert empty.select(encode(F.col("e"), TimestampType())).first()[0] == ""
    assert spark.sql("SELECT '' AS t").select(decode(F.col("t"), TimestampType())).first()[0] == []


def test_full_snapshots_with_a_date_sequence_retire_keys_on_the_batch_date(ws):
    """with `full_snapshots` and a `date` `sequence_by`, every batch after the
    first failed (`valid_from ... is date but the batch has timestamp`): a retirement now takes
    the sequence column's type, the batch time's date here."""
    dim = (
        DIM.replace("day: timestamp", "day: date")
        .replace("soft_delete_column: is_deleted", "soft_delete_column: is_deleted\n    full_snapshots: true")
        .replace("    delete: {column: gone, value: true}\n", "")
    )
    noon = [datetime(2025, 1, day, 12).timestamp() for day in (1, 2, 3)]
    ws.write("in/b1.csv", HEADER + line(1, "Oslo", 1) + line(2, "Rome", 1), mtime=noon[0])
    ws.write("in/b2.csv", HEADER + line(1, "Bergen", 2), mtime=noon[1])
    ws.write("in/b3.csv", HEADER + line(1, "Bergen", 2) + line(3, "Paris", 3), mtime=noon[2])
    p = ws.pipeline(dim)
    result = p.run()
    assert result.ok, result.to_dict()
    day = lambda n: d(n).date()  # noqa: E731
    assert versions(p) == [
        (1, "Bergen", day(2), None, True, False),
        (1, "Oslo", day(1), day(2), False, False),
        (2, "Rome", day(1), day(2), False, True),
        (3, "Paris", day(3), None, True, False),
    ]
    check_invariants(p)


def test_a_sequence_value_that_cannot_order_versions_is_quarantined(ws):
    """A version keeps the sequence values of its events as comma-separated text, so a text value
    with a comma (`10:00:00,123`) would read back as two events; a NaN sorts above every number."""
    ws.write("text/b1.csv", 'id,city,seq\n1,Oslo,2025-01-01 10:00\n2,Rome,"2025-01-01 10:00:00,123"\n')
    ws.write("number/b1.csv", "id,city,seq\n1,Oslo,1.5\n2,Rome,NaN\n")
    p = ws.pipeline("""
    - name: by_text
      source: {kind: files, path: text, format: csv, schema: {id: int, city: string, seq: string}}
      strategy: {kind: scd2, keys: [id], sequence_by: seq, first_valid_from: sequence}
    - name: by_number
      source: {kind: files, path: number, format: csv, schema: {id: int, city: string, seq: double}}
      strategy: {kind: scd2, keys: [id], sequence_by: seq, first_valid_from: sequence}
    """)
    result = p.run()
    assert result.ok, result.to_dict()
    assert rows(p.table("by_text"), ["id", "city"]) == [(1, "Oslo")]
    assert rows(p.quarantine("by_text"), ["record", "reason"]) == [
        (2, "sequence_by column seq holds a comma")
    ]
    assert rows(p.table("by_number"), ["id", "city"]) == [(1, "Oslo")]
    assert rows(p.quarantine("by_number"), ["record", "reason"]) == [
        (2, "sequence_by column seq is NaN or infinite")
    ]


def test_a_full_snapshots_quarantined_record_keeps_its_version_open(ws):
    ws.write("in/b1.csv", "id,city,n\n1,Oslo,1\n2,Rome,2\n", mtime=1_700_000_000)
    ws.write("in/b2.csv", "id,city,n\n1,Oslo,1\n2,Rome,x\n", mtime=1_700_000_100)  # 2's n is bad
    p = ws.pipeline("""
    - name: dim
      source: {kind: files, path: in, format: csv, schema: {id: int, city: string, n: int}}
      strategy: {kind: scd2, keys: [id], full_snapshots: true}
    """)
    result = p.run()
    assert result.ok, result.to_dict()
    assert rows(p.table("dim"), ["id", "city", "is_current"]) == [(1, "Oslo", True), (2, "Rome", True)]


def snapshot_dim(table_format: str, options: str, schema: str = "id: int, city: string") -> str:
    """`dim` fed by full snapshots (validity from the batch time, the file's mtime, unless
    `options` give a sequence_by)."""
    return f"""
- name: dim
  format: {table_format}
  source: {{kind: files, path: in, format: csv, schema: {{{schema}}}}}
  strategy: {{kind: scd2, keys: [id], full_snapshots: true, soft_delete_column: is_deleted, {options}}}
"""


def write_snapshots(ws, snapshots: dict[int, str], header: str = "id,city") -> None:
    """One full snapshot per day of January 2025, its batch time that day at 00:00 UTC."""
    for day, body in snapshots.items():
        ws.write(f"in/s{day:02d}.csv", f"{header}\n{body}", mtime=d(day).replace(tzinfo=UTC).timestamp())


def test_a_deletion_version_stays_flagged_when_its_key_returns(ws):
    # keys 2 and 3 leave on the 2nd and return on the 3rd (2 changed, 3 as it was): each deletion
    # version is closed by the return and keeps its flag; later snapshots do not clear it
    write_snapshots(ws, {1: "1,Oslo\n2,Rome\n3,Kyiv\n", 2: "1,Oslo\n", 3: "1,Oslo\n2,Milan\n3,Kyiv\n"})
    p = ws.pipeline(snapshot_dim("iceberg", "deletes: new_record"))
    result = p.run()
    assert result.ok, result.to_dict()
    expected = [
        (1, "Oslo", d(1), None, True, False),
        (2, "Milan", d(3), None, True, False),
        (2, "Rome", d(1), d(2), False, False),
        (2, "Rome", d(2), d(3), False, True),
        (3, "Kyiv", d(1), d(2), False, False),
        (3, "Kyiv", d(2), d(3), False, True),
        (3, "Kyiv", d(3), None, True, False),
    ]
    assert versions(p) == expected
    write_snapshots(ws, {4: "1,Oslo\n2,Milan\n3,Kyiv\n"})
    assert p.run().ok
    assert versions(p) == expected
    check_invariants(p)


def test_an_absence_closes_a_version_that_starts_after_the_snapshot_with_late_rows_ignored(ws):
    # key 1's version starts on the 5th, after the snapshot of the 2nd that lacks it: the version
    # closes just after its latest event (a microsecond), deleted, and the key is no longer current
    schema = "id: int, city: string, day: timestamp"
    p = ws.pipeline(snapshot_dim("iceberg", "sequence_by: day, late_rows: ignore", schema))
    first = "1,Oslo,2025-01-05\n2,Rome,2025-01-01\n3,Kyiv,2025-01-01\n"
    write_snapshots(ws, {1: first, 2: "2,Rome,2025-01-01\n"}, header="id,city,day")
    result = p.run()
    assert result.ok, result.to_dict()
    assert result.batches[1].counts == {"O": 1, "D": 2}  # key 2's row is not newer: ignored
    assert versions(p) == [
        (1, "Oslo", d(5), d(5) + timedelta(microseconds=1), False, True),
        (2, "Rome", d(1), None, True, False),
        (3, "Kyiv", d(1), d(2), False, True),
    ]
    check_invariants(p)


def arrived(ws, folder: str, snapshots: list[tuple[datetime, str]]) -> None:
    """Full snapshots of (id, city) arriving in this order, each with its batch time (UTC)."""
    for n, (when, body) in enumerate(snapshots):
        ws.write(f"{folder}/{n:02d}.csv", "id,city\n" + body, mtime=when.replace(tzinfo=UTC).timestamp())


def test_full_snapshots_give_one_history_whatever_order_they_arrive_in(ws):
    # key 1 is in the snapshots of the 20th and the 22nd, not in the one of the 21st at 12:15:
    # the absence closes its version even when the snapshot of the 20th arrives last
    snapshots = [
        (datetime(2025, 8, 20), "1,Oslo\n"),
        (datetime(2025, 8, 21, 12, 15), "2,Rome\n"),
        (datetime(2025, 8, 22), "1,Oslo\n2,Rome\n"),
    ]
    # (in time order too: tests/spark/test_scd2_properties.py, the snapshots' property)
    orders = {"oldest_last": [*snapshots[1:], snapshots[0]]}
    for folder, order in orders.items():
        arrived(ws, folder, order)
    p = ws.pipeline(
        "".join(
            f"""
- name: {folder}
  source: {{kind: files, path: {folder}, format: csv, schema: {{id: int, city: string}}}}
  strategy: {{kind: scd2, keys: [id], full_snapshots: true, soft_delete_column: is_deleted}}
"""
            for folder in orders
        )
    )
    result = p.run()
    assert result.ok, result.to_dict()
    columns = ["id", "city", "valid_from", "valid_to", "is_current", "is_deleted"]
    for folder in orders:
        assert rows(p.table(folder), columns) == [
            (1, "Oslo", datetime(2025, 8, 20), datetime(2025, 8, 21, 12, 15), False, True),
            (1, "Oslo", datetime(2025, 8, 22), None, True, False),
            (2, "Rome", datetime(2025, 8, 21, 12, 15), None, True, False),
        ], folder


def run_each_day(ws, p, snapshots: dict[int, str], expected: dict[int, tuple[dict, int]]) -> list[str]:
    """Each day's snapshot taken by a run of its own; each batch's status codes and the rows it
    wrote (opened or closed versions) as `expected` says; key 1's `_lf_events` after each."""
    events_of_key_1 = []
    for day, body in snapshots.items():
        write_snapshots(ws, {day: body})
        result = p.run()
        assert result.ok, result.to_dict()
        [batch] = result.batches
        table = p.table("dim")
        written = table.filter(F.col("_lf_batch_id") == batch.batch_id).count()
        assert (batch.counts, written, batch.effective_count) == (*expected[day], written), day
        events_of_key_1.append(table.filter("id = 1").first()["_lf_events"])
    return events_of_key_1


def test_re_sent_rows_write_nothing_and_leave_the_event_memory_as_it_was(ws, spark):
    # daily full snapshots that re-send every key: with resent_rows: skip, a batch writes only the
    # versions it opens or closes, and an unchanged key's `_lf_events` stays as its first batch left it
    # (on Iceberg: Delta's side of these writes, a MERGE and an empty batch, is the strategy
    # contract's on Delta, tests/spark/test_delta.py)
    skip_without_record_in_commit(spark)
    p = ws.pipeline(snapshot_dim("iceberg", "resent_rows: skip"))
    first = "1,Oslo\n2,Rome\n3,Kyiv\n4,Lima\n"
    snapshots = {
        1: first,
        2: first.replace("Rome", "Milan"),  # 2 changes: one version closed, one opened
        3: first.replace("Rome", "Milan"),  # nothing changes
        4: "1,Oslo\n2,Milan\n4,Quito\n5,Bern\n",  # 3 leaves, 4 changes, 5 arrives
    }
    expected = {  # per batch: its status codes, and the versions it opened or closed
        1: ({"N": 4}, 4),
        2: ({"U": 3, "C": 1}, 2),
        3: ({"U": 4}, 0),
        4: ({"U": 2, "D": 1, "C": 1, "N": 1}, 4),
    }
    events_of_key_1 = run_each_day(ws, p, snapshots, expected)
    assert len(set(events_of_key_1)) == 1, events_of_key_1
    assert versions(p) == [
        (1, "Oslo", d(1), None, True, False),
        (2, "Milan", d(2), None, True, False),
        (2, "Rome", d(1), d(2), False, False),
        (3, "Kyiv", d(1), d(4), False, True),
        (4, "Lima", d(1), d(4), False, False),
        (4, "Quito", d(4), None, True, False),
        (5, "Bern", d(4), None, True, False),
    ]
    check_invariants(p)


def test_a_snapshot_older_than_the_latest_is_refused_when_re_sent_rows_are_left_out(ws, spark):
    # key 1 is re-sent unchanged on the 3rd and 4th (not recorded): the snapshot of the 2nd,
    # arriving last, would open a Kyiv version ending on the 3rd, which the table no longer knows.
    # The batch is refused: nothing is written
    skip_without_record_in_commit(spark)
    p = ws.pipeline(snapshot_dim("iceberg", "resent_rows: skip"))
    write_snapshots(ws, {1: "1,Oslo\n2,Rome\n", 3: "1,Oslo\n2,Milan\n", 4: "1,Oslo\n2,Milan\n"})
    assert p.run().ok
    before = versions(p)
    assert before == [
        (1, "Oslo", d(1), None, True, False),
        (2, "Milan", d(3), None, True, False),
        (2, "Rome", d(1), d(3), False, False),
    ]
    write_snapshots(ws, {2: "1,Kyiv\n2,Rome\n"})
    [batch] = p.run().batches
    assert batch.status == "refused", batch
    assert "older than one already applied" in (batch.error or "")
    assert "--skip-batch s02.csv" in (batch.error or "")
    assert versions(p) == before


# snapshots of the 1st, 2nd, 4th and 5th, then the 3rd (Kyiv for key 1) arriving last: the
# history of all five in time order
THIRD_LAST = [
    (1, "Kyiv", d(3), d(4), False, False),
    (1, "Oslo", d(1), d(3), False, False),
    (1, "Oslo", d(4), None, True, False),
    (2, "Milan", d(2), None, True, False),
    (2, "Rome", d(1), d(2), False, False),
    (3, "Lima", d(1), d(5), False, True),
]


def test_by_default_a_snapshot_writes_only_what_it_opens_or_closes_and_a_late_one_still_re_cuts(ws):
    # daily full snapshots, no resent_rows given: a re-sent unchanged key writes nothing and its
    # `_lf_events` stays as its first batch left it; the snapshot of the 4th changes nothing and
    # leaves its time with one version it re-sent (no batch's rows change hands). The snapshot of
    # the 3rd, arriving last, opens Kyiv for key 1 until the next snapshot, the 4th's, which the
    # versions alone no longer show
    p = ws.pipeline(snapshot_dim("iceberg", ""))
    first = "1,Oslo\n2,Rome\n3,Lima\n"
    snapshots = {
        1: first,
        2: first.replace("Rome", "Milan"),  # 2 changes: one version closed, one opened
        4: first.replace("Rome", "Milan"),  # nothing changes
        5: "1,Oslo\n2,Milan\n",  # 3 leaves
    }
    expected = {1: ({"N": 3}, 3), 2: ({"U": 2, "C": 1}, 2), 4: ({"U": 3}, 0), 5: ({"U": 2, "D": 1}, 1)}
    events_of_key_1 = run_each_day(ws, p, snapshots, expected)
    stamp = int(d(1).replace(tzinfo=UTC).timestamp() * 1_000_000)
    recorded = f"+{int(d(4).replace(tzinfo=UTC).timestamp() * 1_000_000)}"
    assert events_of_key_1 == [f"+{stamp}", f"+{stamp}", f"+{stamp},{recorded}", f"+{stamp},{recorded}"]
    write_snapshots(ws, {3: "1,Kyiv\n2,Milan\n3,Lima\n"})
    result = p.run()
    assert result.ok, result.to_dict()
    assert result.batches[0].counts == {"L": 3}
    assert versions(p) == THIRD_LAST
    assert max(len(r["_lf_events"].split(",")) for r in p.table("dim").collect()) <= 2
    check_invariants(p)


def test_a_table_that_recorded_re_sent_rows_moves_to_the_default_without_a_config_change(ws):
    # snapshots of the 1st, 2nd and 4th applied under `resent_rows: record` (re-sends stored),
    # then the configuration leaves it unset (derive): the 5th's run is no config change, and the
    # 3rd, arriving last, re-cuts history from the re-sends the older batches stored, as the
    # default's own history would be; a reload of a batch recorded under `record` is no other
    # configuration either
    first = "1,Oslo\n2,Rome\n3,Lima\n"
    write_snapshots(ws, {1: first, 2: first.replace("Rome", "Milan"), 4: first.replace("Rome", "Milan")})
    assert ws.pipeline(snapshot_dim("iceberg", "resent_rows: record")).run().ok
    write_snapshots(ws, {5: "1,Oslo\n2,Milan\n"})
    p = ws.pipeline(snapshot_dim("iceberg", ""))
    result = p.run()
    assert result.ok and result.batches[0].counts == {"U": 2, "D": 1}, result.to_dict()
    write_snapshots(ws, {3: "1,Kyiv\n2,Milan\n3,Lima\n"})
    assert p.run().ok
    assert versions(p) == THIRD_LAST
    p.reload("dim", ["s04.csv"])
    assert versions(p) == THIRD_LAST
    check_invariants(p)


def test_an_update_older_than_a_hard_delete_arriving_later_never_brings_the_key_back(ws):
    """Databricks AUTO CDC's out-of-order case (docs.databricks.com/aws/en/ldp/cdc: the DELETE of
    a user arrives before an UPDATE with a lower sequence number), for `scd2` with hard deletes:
    the delete's time stays in the dimension's own event column (`_lf_events`), out of readers'
    sight, so the late update is slotted into history before the delete instead of reopening the
    key."""
    hard = DIM.replace("    soft_delete_column: is_deleted\n", "")
    ws.write("in/b1.csv", HEADER + line(1, "Oslo", 1) + line(2, "Lima", 1))
    ws.write("in/b2.csv", HEADER + line(1, "", 6, gone="true"))
    p = ws.pipeline(hard)
    assert p.run().ok
    ws.write("in/b3.csv", HEADER + line(1, "Rome", 5))  # older than the delete, arriving after it
    result = p.run()
    assert result.ok, result.to_dict()
    assert rows(p.table("dim"), ["id", "city", "valid_from", "valid_to", "is_current"]) == [
        (1, "Oslo", d(1), d(5), False),
        (1, "Rome", d(5), d(6), False),
        (2, "Lima", d(1), None, True),
    ]
    check_invariants(p)
