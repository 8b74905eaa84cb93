"""Control-table rows are built as one SQL expression (lakehouse/literals.py): every value reads
back as it was written, whatever its type or characters."""

from __future__ import annotations

import math
from datetime import date, datetime
from decimal import Decimal

import pytest
from pyspark.sql.types import StructType

from lakefresh.lakehouse.literals import literal_rows

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


def test_rows_read_back_as_written(spark):
    empty = {"counts": {}, "tags": [], "x": math.inf}
    schema = StructType.fromDDL(SCHEMA)
    got = [r.asDict(recursive=True) for r in literal_rows(spark, [ROW, empty], schema).collect()]
    assert got[0] == {**ROW, "raw": bytearray(ROW["raw"])}
    assert got[1] == {**dict.fromkeys(ROW), **empty}


def test_a_type_written_as_sql_text_reads_back_as_the_same_type(spark):
    """The parsing of a batch's values is SQL text (sources/text.py), its casts to the declared
    types written by `sql_type`: names that need quoting, nested and parametrized types."""
    from lakefresh.lakehouse.functions import try_cast_sql

    nested = "`odd name` struct<`a b`: int, `c``d`: array<timestamp_ntz>>, w map<string, decimal(38,18)>"
    types = StructType.fromDDL(f"{SCHEMA}, {nested}")
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
