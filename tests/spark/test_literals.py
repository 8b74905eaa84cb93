"""Control-table rows are built as one SQL expression (lakehouse/literals.py): every value reads
back as it was written, whatever its type or characters."""

from __future__ import annotations

import math
from datetime import date, datetime
from decimal import Decimal

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
