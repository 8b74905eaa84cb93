"""Small DataFrames from Python values, built from one SQL expression in the JVM.

`spark.createDataFrame(list)` ships pickled rows to Python worker processes to convert them; for
the one or two rows of a control-table record that costs more than the write itself (about 0.3 s
a call on two cores, and seconds for the first). A column expression per value needs no worker
but costs a few Py4J calls per value: 0.14 s a row of the `batches` log (33 columns), 7 s for
the 50 rows of a backlog group. So the rows are written as the text of one SQL expression
(`inline(array(named_struct(...), ...))`) and parsed once: one call, whatever the rows.

Every value is cast to its column's type. Timestamps go in as epoch microseconds computed as
PySpark's own `TimestampType` computes them, so a value reads back as the same Python datetime,
whatever the machine's time zone.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from lakefresh.lakehouse.connect import is_connect
from lakefresh.lakehouse.sql import sql_literal

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructType


def literal_rows(spark: SparkSession, rows: list[dict[str, Any]], schema: StructType) -> DataFrame:
    """A DataFrame of `rows` (dicts by column name; missing keys are NULL) with `schema`."""
    from pyspark.sql import functions as F

    if not rows:
        return empty_rows(spark, schema)
    structs = ", ".join(literal_sql(row, schema) for row in rows)
    return spark.range(1).select(F.expr(f"inline(array({structs}))"))


def empty_rows(spark: SparkSession, schema: StructType) -> DataFrame:
    """No rows, with `schema` (its nullability kept). Over an empty RDD: with no partition, no
    task and no Python worker runs. `spark.createDataFrame([], schema)` ships its empty list to a
    worker on every action (about 200 ms a `count` on two cores, against 40 ms here)."""
    if is_connect(spark):  # a local relation the server makes without a worker
        return spark.createDataFrame([], schema)
    return spark.createDataFrame(spark.sparkContext.emptyRDD(), schema)


def literal_sql(value: Any, kind: DataType) -> str:
    """`value` as Spark SQL text of type `kind`: scalars, dicts for maps and structs, lists."""
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        BooleanType,
        DateType,
        MapType,
        StringType,
        StructType,
        TimestampNTZType,
        TimestampType,
    )

    type_sql = kind.simpleString()
    if value is None:
        return f"CAST(NULL AS {type_sql})"
    if isinstance(kind, StructType):
        fields = ", ".join(
            f"{sql_literal(f.name)}, {literal_sql(value.get(f.name), f.dataType)}" for f in kind.fields
        )
        return f"named_struct({fields})"
    if isinstance(kind, MapType):
        pairs = [
            f"{literal_sql(k, kind.keyType)}, {literal_sql(v, kind.valueType)}" for k, v in value.items()
        ]
        return f"CAST(map({', '.join(pairs)}) AS {type_sql})"
    if isinstance(kind, ArrayType):
        items = ", ".join(literal_sql(v, kind.elementType) for v in value)
        return f"CAST(array({items}) AS {type_sql})"
    if isinstance(kind, TimestampType):
        return f"timestamp_micros({int(TimestampType().toInternal(as_datetime(value)))})"
    if isinstance(kind, TimestampNTZType):
        return f"CAST({sql_literal(as_datetime(value).isoformat(sep=' '))} AS timestamp_ntz)"
    if isinstance(kind, DateType):
        return f"DATE {sql_literal(value.isoformat())}"
    if isinstance(kind, BinaryType):
        return f"X'{bytes(value).hex()}'"
    if isinstance(kind, BooleanType):
        return "TRUE" if value else "FALSE"
    if isinstance(kind, StringType):
        return sql_literal(str(value))
    if isinstance(value, float | Decimal):  # text: exact, and inf/nan too
        return f"CAST({sql_literal(str(value))} AS {type_sql})"
    return f"CAST({sql_literal(value)} AS {type_sql})"


def as_datetime(value: Any) -> dt.datetime:
    """A datetime, a date (at midnight) or ISO text as a datetime."""
    if isinstance(value, dt.datetime):
        return value
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day)
    return dt.datetime.fromisoformat(str(value))
