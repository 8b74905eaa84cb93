"""Control-table rows are built as one SQL expression (lakehouse/literals.py): every value reads
back as it was written, whatever its type or characters."""

from __future__ import annotations

import math
from datetime import date, datetime
from decimal import Decimal

import pytest

from lakefresh.lakehouse.literals import literal_rows
from lakefresh.lakehouse.session import parse_schema

SCHEMA = (
    "s string, n bigint, i int, x double, d decimal(10,3), b boolean, at timestamp, day date, "
    "raw binary, counts map<string,bigint>, tags array<string>, span struct<lo: string, hi: string>"
)
ROW = {
    "s": "it's a \\ back'slash\nand a newline, ünïcode",
    "n": 2**40,
    "i": -7,
    "x": 0.1,
    "d": Decimal("1234.567"),
    "b": True,
    "at": datetime(2025, 3, 30, 2, 30, 15, 123456),
    "day": date(2024, 2, 29),
    "raw": b"\x00\xffab",
    "counts": {"N": 3, "C's": 0},
    "tags": ["a", "b'"],
    "span": {"lo": "1", "hi": None},
}
# NULLs, empty collections, -0.0, year 1, and New York's spring gap and autumn overlap
EDGES = [
    {"i": 1, "counts": {}, "tags": [], "span": {"lo": None, "hi": "z"}, "x": -0.0},
    {"i": 2},
    {"i": 3, "at": datetime(2025, 3, 9, 3, 30), "d": Decimal("-0.001")},
    {"i": 4, "at": datetime(2025, 11, 2, 1, 30), "day": date(1, 1, 1)},
]


def test_rows_read_back_as_written(spark):
    empty = {"counts": {}, "tags": [], "x": math.inf}
    schema = parse_schema(SCHEMA)
    got = [r.asDict(recursive=True) for r in literal_rows(spark, [ROW, empty], schema).collect()]
    assert got[0] == {**ROW, "raw": bytearray(ROW["raw"])}
    assert got[1] == {**dict.fromkeys(ROW), **empty}


def test_a_type_written_as_sql_text_reads_back_as_the_same_type(spark):
    """The parsing of a batch's values is SQL text (sources/text.py), its casts to the declared
    types written by `sql_type`: names that need quoting, nested and parametrized types."""
    from lakefresh.lakehouse.functions import try_cast_sql

    nested = "`odd name` struct<`a b`: int, `c``d`: array<timestamp_ntz>>, w map<string, decimal(38,18)>"
    types = parse_schema(f"{SCHEMA}, {nested}")
    casts = [f"{try_cast_sql('NULL', f.dataType)} AS c{n}" for n, f in enumerate(types.fields)]
    got = spark.range(1).selectExpr(*casts).schema
    assert [f.dataType for f in got.fields] == [f.dataType for f in types.fields]


def test_a_session_that_reads_string_literals_without_escapes_is_refused(ws):
    """Values go into SQL with backslash escapes: with spark.sql.parser.escapedStringLiterals
    true, a stored string would change (a backslash doubled) and the patterns of the parsing
    would match other text. lakefresh stops with one line instead."""
    from lakefresh.errors import SetupError

    ws.spark.conf.set("spark.sql.parser.escapedStringLiterals", "true")
    try:
        with pytest.raises(SetupError, match="escapedStringLiterals=false"):
            ws.pipeline(
                "- name: t\n  source: {kind: files, path: in, format: csv}\n  strategy: {kind: append}\n"
            )
    finally:
        ws.spark.conf.unset("spark.sql.parser.escapedStringLiterals")


def _iceberg_table(ws, spark, name: str, ddl: str) -> str:
    from tests.conftest import CATALOG

    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{ws.namespace}")
    spark.sql(f"CREATE TABLE {CATALOG}.{ws.namespace}.{name} ({ddl}) USING iceberg")
    return f"{ws.namespace}.{name}"


def _appended(spark, backend, table: str, rows: list[dict], schema) -> list[dict]:
    backend.append_rows(table, rows, schema)
    return [r.asDict(recursive=True) for r in backend.read(table).orderBy("i").collect()]


def test_rows_appended_through_iceberg_s_java_api_read_back_as_spark_s_append_writes_them(ws, spark):
    """A control table's record goes to an Iceberg table without a Spark job
    (lakehouse/iceberg/rows.py): every type of a control table, NULLs, empty collections and
    characters that need escaping read back as Spark's append of the same rows writes them, in
    a machine zone with a daylight-saving jump (naive datetimes are local time to PySpark)."""
    from lakefresh.lakehouse.iceberg import IcebergBackend
    from tests.conftest import CATALOG, machine_zone

    backend = IcebergBackend(spark, CATALOG)
    ddl = f"{SCHEMA}, ranges array<struct<start: string, end: string, start_inclusive: boolean>>"
    schema = parse_schema(ddl)
    ranges = [{"start": "a", "end": None, "start_inclusive": True}, {"start": "b", "end": "c"}]
    rows = [
        ROW,
        {"i": 1, "counts": {}, "tags": [], "span": {"lo": None, "hi": "z"}, "ranges": ranges},
        {"i": 2},
        # New York's spring gap and autumn overlap; an int in a double column, a decimal at
        # another scale, a datetime in a date column: converted as Spark's casts convert them
        {
            "i": 3,
            "at": datetime(2025, 3, 9, 2, 30),
            "x": 3,
            "d": Decimal("1.5"),
            "day": datetime(2024, 1, 2, 3),
        },
        {"i": 4, "at": datetime(2025, 11, 2, 1, 30), "ranges": []},
    ]
    with machine_zone("America/New_York"):
        by_java = _iceberg_table(ws, spark, "java", ddl)
        _without_a_job(spark, lambda: backend.append_rows(by_java, rows, schema))
        by_spark = _iceberg_table(ws, spark, "spark", ddl)
        backend.append(by_spark, literal_rows(spark, rows, schema))
        got = [r.asDict(recursive=True) for r in backend.read(by_java).orderBy("i").collect()]
        assert got == [r.asDict(recursive=True) for r in backend.read(by_spark).orderBy("i").collect()]
    assert got[0] == {**ROW, "raw": bytearray(ROW["raw"]), "ranges": None}
    assert got[1]["ranges"] == [
        {**r, "end": r.get("end"), "start_inclusive": r.get("start_inclusive")} for r in ranges
    ]
    assert got[2] == {**dict.fromkeys(ROW), "i": 2, "ranges": None}
    assert (got[3]["x"], got[3]["d"], got[3]["day"]) == (3.0, Decimal("1.500"), date(2024, 1, 2))


def _without_a_job(spark, action):
    """What `action` returns, asserting that it ran no Spark job."""
    tracker, group = spark.sparkContext.statusTracker(), f"no-job-{id(action)}"
    spark.sparkContext.setJobGroup(group, "without a job")
    try:
        done = action()
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    assert list(tracker.getJobIdsForGroup(group)) == []
    return done


def test_a_control_table_s_rows_read_through_iceberg_s_java_api_are_what_spark_s_collect_gives(ws, spark):
    """The `leases` table is read twice a run without a Spark job (lakehouse/iceberg/rows.py:
    `read_rows`): every type a control table has (but binary), NULLs, empty collections and
    New York's daylight-saving jumps read as PySpark's `collect()` gives them. A table with a
    type not read there (binary) or with delete files is read by Spark, with the same rows."""
    from lakefresh.lakehouse.iceberg import IcebergBackend
    from tests.conftest import CATALOG, machine_zone

    backend = IcebergBackend(spark, CATALOG)
    ddl = SCHEMA.replace("raw binary, ", "")
    schema = parse_schema(ddl)
    typed = {k: v for k, v in ROW.items() if k != "raw"}
    rows = [typed, *EDGES]

    def spark_read(table):
        return [r.asDict(recursive=True) for r in backend.read(table).collect()]

    with machine_zone("America/New_York"):
        table = _iceberg_table(ws, spark, "java", ddl)
        backend.append_rows(table, rows, schema)
        marker, got = _without_a_job(spark, lambda: backend.read_rows(table))
        assert marker == backend.head(table)
        assert sorted(got, key=lambda r: r["i"]) == sorted(spark_read(table), key=lambda r: r["i"])
        assert sorted(got, key=lambda r: r["i"])[0] == typed
        spark.sql(f"ALTER TABLE {CATALOG}.{table} SET TBLPROPERTIES ('write.delete.mode'='merge-on-read')")
        spark.sql(f"DELETE FROM {CATALOG}.{table} WHERE i = 2")
        assert backend.deletes(table).rows == 1  # a delete file: Spark reads the rows
        assert sorted(backend.read_rows(table)[1], key=lambda r: r["i"]) == sorted(
            spark_read(table), key=lambda r: r["i"]
        )
        binary = _iceberg_table(ws, spark, "binary", "i int, raw binary")
        backend.append_rows(binary, [{"i": 1, "raw": b"\x00"}], parse_schema("i int, raw binary"))
        assert backend.read_rows(binary)[1] == [{"i": 1, "raw": bytearray(b"\x00")}]


def test_a_value_without_a_json_form_is_appended_through_spark(ws, spark):
    """Iceberg's single-value JSON has no NaN or infinity, and its parser no NULL value in a
    map: such rows take Spark's append."""
    from lakefresh.lakehouse.iceberg import IcebergBackend
    from tests.conftest import CATALOG

    backend = IcebergBackend(spark, CATALOG)
    ddl = "i int, x double, counts map<string, bigint>"
    table = _iceberg_table(ws, spark, "t", ddl)
    written = [{"i": 1, "x": math.inf}, {"i": 2, "x": 0.5}, {"i": 3, "counts": {"a": None}}]
    got = _appended(spark, backend, table, written[:2], parse_schema(ddl))
    got = _appended(spark, backend, table, written[2:], parse_schema(ddl))
    assert got == [{"x": None, "counts": None, **r} for r in written]


def test_a_null_in_a_required_column_is_refused_and_leaves_the_table_as_it_was(ws, spark):
    """Before anything is written, with the column's name (Iceberg's Parquet writer would fail
    mid-file with a NullPointerException that names nothing)."""
    from lakefresh.errors import StateError
    from lakefresh.lakehouse.iceberg import IcebergBackend
    from tests.conftest import CATALOG

    backend = IcebergBackend(spark, CATALOG)
    table = _iceberg_table(ws, spark, "t", "i int NOT NULL, s string")
    schema = parse_schema("i int, s string")
    _appended(spark, backend, table, [{"i": 1, "s": "kept"}], schema)
    with pytest.raises(StateError, match="column 'i' is NOT NULL, and a row to append has no value"):
        backend.append_rows(table, [{"i": 2, "s": "x"}, {"i": None, "s": "y"}], schema)
    assert _appended(spark, backend, table, [], schema) == [{"i": 1, "s": "kept"}]
    data = next(ws.warehouse.rglob(f"{ws.namespace}*/t/data"))
    assert len(list(data.glob("*.parquet"))) == 1  # nothing written by the refused append
