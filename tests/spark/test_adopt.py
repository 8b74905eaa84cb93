"""`adopt`: a table another tool wrote (an Open Data Fabric log, a dbt snapshot, a plain keyed
table) becomes lakefresh's in one commit, and lakefresh's batches continue it exactly: the table
then equals what lakefresh builds from every batch, the old tool's and its own. A table lakefresh
could not continue exactly is refused, every problem named with example rows, and left as it was.

Each test keeps two tables in one pipeline: `ref`, built by lakefresh from all the batches
(folder `all`), and the adopted one, whose first batches the old tool wrote (built here by hand,
in the tool's own layout) and whose later ones lakefresh takes (folder `in`).

An adoption's checks and rows are the same DataFrame work whatever the table's format
(strategies/adopt.py); the verb's commit is the format's (verbs/adopt.py). So each kind of log is
adopted on Iceberg, and the dbt snapshot on Delta too, which takes the verb's Delta side: a column
dropped and the table replaced in one commit.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from lakefresh.errors import ConfigError, SchemaError, TargetError
from tests.conftest import CATALOG, rows

DAY = 86400.0
T0 = datetime(2025, 1, 1).timestamp()


def at(day: int) -> datetime:
    return datetime.utcfromtimestamp(T0 + day * DAY)


def written_by_another_tool(ws, p, table: str, data: list[tuple], schema: str, table_format: str) -> str:
    """The table at `table`'s target name, made as another tool makes it (no lakefresh property,
    column or commit); its name."""
    name = f"{ws.namespace}.{table}"
    ws.spark.createDataFrame(data, schema).createOrReplaceTempView("_adopted_rows")
    if table_format == "iceberg":
        ws.spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{ws.namespace}")
    using = "iceberg" if table_format == "iceberg" else "delta"
    ws.spark.sql(f"CREATE TABLE {p.backend.qualified(name)} USING {using} AS SELECT * FROM _adopted_rows")
    return name


def both(ws, files: dict[str, tuple[str, int]], new: list[str]) -> None:
    """Every batch in `all`; the `new` ones (those lakefresh takes after the adoption) in `in`."""
    for name, (text, day) in files.items():
        ws.write(f"all/{name}", text, mtime=T0 + day * DAY)
        if name in new:
            ws.write(f"in/{name}", text, mtime=T0 + day * DAY)


SNAPSHOTS = """
- name: {name}
  format: {table_format}
  source: {{kind: files, path: {folder}, format: csv, schema: {{sku: string, qty: int}}, order_by: modified}}
  strategy: {{kind: snapshot, keys: [sku]}}
"""
STOCK = {
    "s1.csv": ("sku,qty\na,1\nb,2\n", 0),
    "s2.csv": ("sku,qty\na,1\nb,2\nc,3\n", 1),
    "s3.csv": ("sku,qty\na,5\nb,2\nc,3\n", 2),  # lakefresh's from here
    "s4.csv": ("sku,qty\na,5\nc,3\n", 3),
}
# what kamu's snapshot merge wrote for s1 and s2: offsets from 0, ops, the batch's time
ODF_LOG = [
    (0, "+A", at(0), at(0), "a", 1),
    (1, "+A", at(0), at(0), "b", 2),
    (2, "+A", at(1), at(1), "c", 3),
]
ODF_SCHEMA = "offset bigint, op string, system_time timestamp, event_time timestamp, sku string, qty int"


def stock_pipeline(ws, table_format: str):
    tables = SNAPSHOTS.format(name="ref", folder="all", table_format=table_format)
    tables += SNAPSHOTS.format(name="stock", folder="in", table_format=table_format)
    return ws.pipeline(tables)


def test_an_odf_log_adopted_then_continued_equals_the_log_lakefresh_builds_from_every_snapshot(ws):
    both(ws, STOCK, new=["s3.csv", "s4.csv"])
    p = stock_pipeline(ws, "iceberg")
    name = written_by_another_tool(ws, p, "stock", ODF_LOG, ODF_SCHEMA, "iceberg")

    done = p.adopt("stock")
    assert (done.rows, done.added) == (3, ["_lf_batch_id"])
    assert done.batch_id.startswith("lakefresh:adopt:")
    logged = [(r["batch_id"], r["status"], r["source_kind"]) for r in p.history("stock")]
    assert logged == [(done.batch_id, "published", "lakefresh")]
    assert p.backend.published_batches(name) == {done.batch_id: done.version}

    assert p.run().ok
    columns = ["offset", "op", "system_time", "event_time", "sku", "qty"]
    assert rows(p.table("stock"), columns) == rows(p.table("ref"), columns)
    assert rows(p.table("stock"), ["offset", "op", "sku", "qty"]) == [
        (0, "+A", "a", 1),
        (1, "+A", "b", 2),
        (2, "+A", "c", 3),
        (3, "-C", "a", 1),  # lakefresh's s3
        (4, "+C", "a", 5),
        (5, "-R", "b", 2),  # lakefresh's s4
    ]
    by_batch = rows(p.table("stock"), ["offset", "_lf_batch_id"])
    assert [b for _, b in by_batch] == [done.batch_id] * 3 + ["s3.csv", "s3.csv", "s4.csv"]
    assert [r["batch_id"] for r in p.history("stock")] == [done.batch_id, "s3.csv", "s4.csv"]


KEYED = """
- name: {name}
  format: {table_format}
  source: {{kind: files, path: {folder}, format: csv, schema: {{id: int, city: string, updated_at: date}}}}
  strategy: {{kind: key, keys: [id], date_column: updated_at}}
"""
CUSTOMERS = {
    "b1.csv": ("id,city,updated_at\n1,Oslo,2025-01-01\n2,Rome,2025-01-01\n", 0),
    "b2.csv": ("id,city,updated_at\n1,Kyiv,2025-01-03\n3,Lima,2025-01-03\n", 1),
    "b3.csv": ("id,city,updated_at\n2,Pisa,2025-01-04\n1,Riga,2025-01-02\n", 2),  # 1: older, kept out
}


def test_a_key_table_a_merge_job_kept_adopted_then_continued_equals_lakefresh_s(ws):
    both(ws, CUSTOMERS, new=["b2.csv", "b3.csv"])
    tables = KEYED.format(name="ref", folder="all", table_format="iceberg")
    tables += KEYED.format(name="customers", folder="in", table_format="iceberg")
    p = ws.pipeline(tables)
    merged = [(1, "Oslo", datetime(2025, 1, 1).date()), (2, "Rome", datetime(2025, 1, 1).date())]
    written_by_another_tool(ws, p, "customers", merged, "id int, city string, updated_at date", "iceberg")

    done = p.adopt("customers")
    assert sorted(done.added) == ["_lf_batch_id", "_lf_hash", "_lf_updated_at"]
    result = p.run()
    assert result.ok
    counts = {b.batch_id: b.counts for b in result.batches if b.table.endswith(".customers")}
    assert counts == {"b2.csv": {"C": 1, "N": 1}, "b3.csv": {"C": 1, "O": 1}}
    assert rows(p.table("customers")) == rows(p.table("ref"))
    assert rows(p.table("customers"), ["id", "city"]) == [(1, "Kyiv"), (2, "Pisa"), (3, "Lima")]
    with pytest.raises(ConfigError, match="it was adopted"):
        p.reset("customers")
    with pytest.raises(ConfigError, match="lakefresh's already"):
        p.adopt("customers")


SCD2 = """
- name: {name}
  format: {table_format}
  source:
    {{kind: files, path: {folder}, format: csv, schema: {{id: int, name: string, updated_at: timestamp}}}}
  strategy:
    kind: scd2
    keys: [id]
    sequence_by: updated_at
    valid_from_column: dbt_valid_from
    valid_to_column: dbt_valid_to
    valid_from_copy: dbt_updated_at
"""
PEOPLE = {
    "p1.csv": ("id,name,updated_at\n1,Ann,2025-01-01 00:00:00\n2,Bob,2025-01-01 00:00:00\n", 0),
    "p2.csv": ("id,name,updated_at\n1,Anna,2025-01-02 00:00:00\n", 1),
    "p3.csv": ("id,name,updated_at\n2,Rob,2025-01-03 00:00:00\n", 2),  # lakefresh's from here
    "p4.csv": ("id,name,updated_at\n1,Hanna,2025-01-04 00:00:00\n3,Cy,2025-01-04 00:00:00\n", 3),
}
# a dbt snapshot (timestamp strategy, unique_key id, updated_at updated_at) after p1 and p2, in the
# layout dbt-core's snapshot materialization writes: the source's columns, then dbt_scd_id,
# dbt_updated_at, dbt_valid_from and dbt_valid_to (NULL while current)
DBT_SCHEMA = (
    "id int, name string, updated_at timestamp, dbt_scd_id string, dbt_updated_at timestamp, "
    "dbt_valid_from timestamp, dbt_valid_to timestamp"
)


def dbt_rows(*versions: tuple) -> list[tuple]:
    """Versions (id, name, valid_from, valid_to) as dbt writes them."""
    return [(i, n, f, "md5-of-key-and-time", f, f, t) for i, n, f, t in versions]


JAN = [datetime(2025, 1, d) for d in range(1, 6)]


def continued_as_lakefresh_builds_it(p) -> None:
    """The adopted `people`, after p3 and p4, equals `ref` (every batch lakefresh's), row for row."""
    versions = ["id", "name", "dbt_valid_from", "dbt_valid_to", "is_current", "dbt_updated_at"]
    assert rows(p.table("people"), versions) == rows(p.table("ref"), versions)
    assert rows(p.table("people"), versions[:4]) == [
        (1, "Ann", JAN[0], JAN[1]),
        (1, "Anna", JAN[1], JAN[3]),
        (1, "Hanna", JAN[3], None),
        (2, "Bob", JAN[0], JAN[2]),
        (2, "Rob", JAN[2], None),
        (3, "Cy", JAN[3], None),
    ]


def test_a_dbt_snapshot_on_delta_adopted_then_continued_equals_the_history_lakefresh_builds(ws):
    """On Iceberg, the table a real `dbt snapshot` wrote is adopted (tests/spark/test_adopt_dbt.py)."""
    both(ws, PEOPLE, new=["p3.csv", "p4.csv"])
    tables = SCD2.format(name="ref", folder="all", table_format="delta")
    tables += SCD2.format(name="people", folder="in", table_format="delta")
    p = ws.pipeline(tables)
    snapshot = dbt_rows((1, "Ann", JAN[0], JAN[1]), (1, "Anna", JAN[1], None), (2, "Bob", JAN[0], None))
    name = written_by_another_tool(ws, p, "people", snapshot, DBT_SCHEMA, "delta")

    done = p.adopt("people")
    assert done.dropped == ["dbt_scd_id"] and "is_current" in done.added
    assert p.backend.published_batches(name) == {done.batch_id: done.version}
    assert p.run().ok
    continued_as_lakefresh_builds_it(p)
    hashes = ["id", "dbt_valid_from", "_lf_hash", "_lf_events"]
    assert rows(p.table("people"), hashes) == rows(p.table("ref"), hashes)  # as lakefresh keeps them


# --- refusals: each names what is wrong, with example rows, and changes nothing ---------------


def refused(ws, p, table: str, error: type, *said: str) -> None:
    name = f"{ws.namespace}.{table}"
    before = rows(p.backend.read(name))
    with pytest.raises(error) as raised:
        p.adopt(table)
    for text in said:
        assert text in str(raised.value)
    assert rows(p.backend.read(name)) == before
    assert not [c for c in p.backend.schema(name).fieldNames() if c.startswith("_lf_")]
    assert p.history(table) == []


def test_an_odf_log_with_a_gap_an_unknown_op_and_a_repeated_offset_is_refused(ws):
    p = stock_pipeline(ws, "iceberg")
    broken = [*ODF_LOG, (2, "+A", at(1), at(1), "d", 4), (5, "+X", at(2), at(2), "e", 5)]
    written_by_another_tool(ws, p, "stock", broken, ODF_SCHEMA, "iceberg")
    refused(
        ws,
        p,
        "stock",
        TargetError,
        "op not one of ['-R', '-C', '+C', '+A']: 1 row(s), e.g. {offset: 5, op: +X",
        "offset held by more than one row: 2 row(s)",
        "offset not continuous: the row before these is missing: 1 row(s), e.g. {offset: 5",
    )


def test_refusals_name_what_is_missing_or_wrong(ws):
    p = stock_pipeline(ws, "iceberg")
    with pytest.raises(ConfigError, match=r"there is no iceberg table .*stock to adopt"):
        p.adopt("stock")
    written_by_another_tool(
        ws, p, "stock", [(0, 1, "a", 1)], "offset bigint, op int, sku string, qty int", "iceberg"
    )
    refused(ws, p, "stock", SchemaError, "missing column(s) ['system_time', 'event_time']")


def test_a_keyed_table_with_duplicate_and_null_keys_is_refused(ws):
    tables = KEYED.format(name="customers", folder="in", table_format="iceberg")
    p = ws.pipeline(tables)
    day = datetime(2025, 1, 1).date()
    data = [(1, "Oslo", day), (1, "Rome", day), (None, "Lima", day)]
    written_by_another_tool(ws, p, "customers", data, "id int, city string, updated_at date", "iceberg")
    refused(
        ws,
        p,
        "customers",
        TargetError,
        "key held by more than one row: 2 row(s), e.g. {id: 1",
        "NULL key column: 1 row(s), e.g. {id: None, city: Lima",
    )


def test_a_dbt_snapshot_with_overlapping_versions_or_two_open_ones_is_refused(ws):
    p = ws.pipeline(SCD2.format(name="people", folder="in", table_format="iceberg"))
    snapshot = dbt_rows(
        (1, "Ann", JAN[0], JAN[2]),
        (1, "Anna", JAN[1], None),  # starts before Ann ends
        (2, "Bob", JAN[0], None),
        (2, "Rob", JAN[1], None),  # a second open version
        (3, "Cy", JAN[2], JAN[1]),  # ends before it starts
    )
    written_by_another_tool(ws, p, "people", snapshot, DBT_SCHEMA, "iceberg")
    refused(
        ws,
        p,
        "people",
        TargetError,
        "more than one open version of a key: 2 row(s), e.g. {id: 2",
        "versions overlapping the one before them: 2 row(s)",
        "dbt_valid_to not after dbt_valid_from: 1 row(s), e.g. {id: 3",
    )


def test_a_dbt_snapshot_with_the_wrong_types_is_refused(ws):
    p = ws.pipeline(SCD2.format(name="people", folder="in", table_format="iceberg"))
    schema = DBT_SCHEMA.replace("dbt_valid_to timestamp", "dbt_valid_to string")
    written_by_another_tool(
        ws, p, "people", [(1, "Ann", JAN[0], "x", JAN[0], JAN[0], None)], schema, "iceberg"
    )
    refused(ws, p, "people", SchemaError, "dbt_valid_from is timestamp, dbt_valid_to string: not one type")
