"""Column functions that behave the same on every supported Spark line, whatever
`spark.sql.ansi.enabled` says.

Spark 4 turns ANSI SQL mode on by default, where a CAST or `to_timestamp` of text that does not
convert raises instead of giving NULL. lakefresh's parsing relies on the NULL (a value that is
present but converts to NULL is quarantined with its reason), so every parsing cast goes through
the TRY forms here: NULL on both lines, and never an exception in the middle of a batch.
Arithmetic and casts in users' own expressions keep the session's mode (ANSI on both lines by
lakefresh's default: an overflow is an error, never a silent NULL).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from lakefresh.lakehouse.sql import quote, sql_literal

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import DataType, StructType


# `to_json`'s options for a value stored as text: its timestamps in UTC and to the microsecond
# (Spark's default writes the session's zone and milliseconds)
EXACT_JSON_OPTIONS = "map({})".format(
    ", ".join(
        sql_literal(v)
        for v in (
            "timeZone",
            "UTC",
            "timestampFormat",
            "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX",
            "timestampNTZFormat",
            "yyyy-MM-dd'T'HH:mm:ss.SSSSSS",
        )
    )
)


def try_cast(column: Column, type_: DataType) -> Column:
    """CAST(column AS type_) that gives NULL for a value that does not convert."""
    from pyspark import SparkContext
    from pyspark.sql import Column as SparkColumn

    if hasattr(SparkColumn, "try_cast"):  # pyspark 4
        method: Any = SparkColumn.try_cast
        return method(column, type_)  # type: ignore[no-any-return]
    # pyspark 3.5 has TRY_CAST in SQL only: build the same expression (a Cast in TRY mode).
    # The JVM comes from the SparkContext, not the active session: 3.5's active session is
    # per thread, and a run may be started from any thread.
    context: Any = SparkContext._active_spark_context
    assert context is not None, "try_cast needs a running Spark context"
    jvm: Any = context._jvm
    expressions = jvm.org.apache.spark.sql.catalyst.expressions
    mode = getattr(expressions, "EvalMode$").__getattr__("MODULE$").TRY()
    jtype = jvm.org.apache.spark.sql.types.DataType.fromJson(type_.json())
    jcolumn: Any = column._jc
    cast = expressions.Cast(jcolumn.expr(), jtype, jvm.scala.Option.apply(None), mode)
    wrap: Any = SparkColumn  # a class in pyspark 3.5 (a Protocol-like base from 4 on)
    return wrap(jvm.org.apache.spark.sql.Column(cast))  # type: ignore[no-any-return]


def try_to_timestamp(text: Column, pattern: str | None = None) -> Column:
    """Text to a timestamp (with a Spark datetime pattern, else as CAST reads it), NULL when it
    does not parse."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampType

    if pattern is None:
        return try_cast(text, TimestampType())
    return F.try_to_timestamp(text, F.lit(pattern))


def try_to_date(text: Column, pattern: str) -> Column:
    """Text to a date with a Spark datetime pattern, NULL when it does not parse."""
    from pyspark.sql.types import DateType

    return try_cast(try_to_timestamp(text, pattern), DateType())


# --- the same as SQL text -------------------------------------------------------------------
# A batch's read builds its parsing as one SQL expression per column, parsed once by Spark, rather
# than a tree of Column calls: each Column call is a round trip to the JVM, and a CSV batch's read
# made hundreds of them before its first job (bench/bench_read.py counts them).


def sql_type(type_: DataType) -> str:
    """A Spark type as SQL writes it, struct field names quoted. SQL has no words for an array's
    or a map's values that cannot be NULL: those come out nullable."""
    from pyspark.sql import types as T

    if isinstance(type_, T.StructType):
        fields = ", ".join(
            f"{quote(f.name)}: {sql_type(f.dataType)}{'' if f.nullable else ' NOT NULL'}"
            for f in type_.fields
        )
        return f"STRUCT<{fields}>"
    if isinstance(type_, T.ArrayType):
        return f"ARRAY<{sql_type(type_.elementType)}>"
    if isinstance(type_, T.MapType):
        return f"MAP<{sql_type(type_.keyType)}, {sql_type(type_.valueType)}>"
    if isinstance(type_, T.TimestampType):
        return "TIMESTAMP_LTZ"  # `timestamp` is what spark.sql.timestampType says
    return type_.simpleString()


def try_cast_sql(expression: str, type_: DataType) -> str:
    """`try_cast` as SQL text: TRY_CAST, in SQL on both lines."""
    return f"TRY_CAST({expression} AS {sql_type(type_)})"


def try_to_timestamp_sql(text: str, pattern: str | None = None) -> str:
    """`try_to_timestamp` as SQL text."""
    from pyspark.sql.types import TimestampType

    if pattern is None:
        return try_cast_sql(text, TimestampType())
    return f"try_to_timestamp({text}, {sql_literal(pattern)})"


def try_to_date_sql(text: str, pattern: str) -> str:
    """`try_to_date` as SQL text."""
    from pyspark.sql.types import DateType

    return try_cast_sql(try_to_timestamp_sql(text, pattern), DateType())


def row_document(
    columns: list[str], schema: StructType, value: Callable[[str], Column] | None = None
) -> Column:
    """A row's values as one text that changes whenever one of them does: the JSON object of
    `columns` in the given order (NULL fields left out), followed by the sub-millisecond digits
    of its timestamps where they are not zero. `schema` gives each column's type; `value(name)`,
    when given, is the value under a name (default: the column itself).

    Spark's JSON writes a timestamp to the millisecond and in the session's zone, so two values
    1 µs apart were one text, and the same row had another text in another zone. The text is
    written in UTC, which is what lakefresh's own sessions wrote, and the microseconds follow
    the object only when there are any: a row whose timestamps are whole milliseconds keeps the
    text, and so the hash, that was stored for it before.
    """
    import json

    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampNTZType, TimestampType

    if not columns:
        return F.lit("{}")
    values = {c: value(c) if value else F.col(quote(c)) for c in columns}
    document = F.to_json(F.struct(*[values[c].alias(c) for c in columns]), {"timeZone": "UTC"})
    extras = []
    for c in columns:
        if isinstance(schema[c].dataType, TimestampType | TimestampNTZType):
            micros = F.unix_micros(values[c].cast("timestamp")) % 1000
            extras.append(F.when(micros != 0, F.concat(F.lit(json.dumps(c) + ":"), micros.cast("string"))))
    if not extras:
        return document
    return F.concat(document, F.concat_ws(",", *extras))


def utc_timestamp(value: datetime) -> Column:
    """A TIMESTAMP literal of a naive datetime in UTC (lakefresh's batch times), the same instant
    on every machine: PySpark reads a naive datetime in the machine's own zone (a batch time of
    10:00 became 15:00 UTC on a computer in New York, and two times an hour apart became one
    across a daylight saving change)."""
    from datetime import UTC

    from pyspark.sql import functions as F

    return F.lit(value.replace(tzinfo=UTC) if value.tzinfo is None else value)


def _nested(kind: DataType) -> bool:
    """Whether a type holds other values (an array, struct, map or variant): Spark's hashes skip
    NULL elements and fields inside it, and refuse maps and variants."""
    from pyspark.sql import types as T

    variant = getattr(T, "VariantType", None)
    nested = (T.ArrayType, T.StructType, T.MapType)
    return isinstance(kind, nested) or (variant is not None and isinstance(kind, variant))


def contents(rows: DataFrame) -> Column:
    """A hash of a row's values: every column but provenance and those the same for the whole
    batch or taken from its time (`columns.NOT_CONTENTS`: not the same on a rerun). lakefresh's
    other columns stay in: a change feed's change type, which a delete rule may read, and flags
    derived from the data. Spark's `xxhash64` skips a NULL (`(NULL, 'x')` and `('x', NULL)` hash
    alike), so which columns are NULL is hashed too, and a nested value as its JSON text, which
    writes a NULL inside it. It breaks the last tie when rows are put in order
    (strategies/ordering.py, the `table_changes` source's own dedupe)."""
    from pyspark.sql import functions as F

    from lakefresh.columns import NOT_CONTENTS

    values, nulls = [], []
    for f in rows.schema.fields:
        if f.name in NOT_CONTENTS:
            continue
        column = F.col(quote(f.name))
        values.append(F.to_json(F.struct(column)) if _nested(f.dataType) else column)
        nulls.append(column.isNull())
    return F.xxhash64(*values, *nulls) if values else F.lit(0)
