"""Schema evolution through Spark SQL DDL, which every table format on Spark runs.

A batch's new columns are added to the table (`ADD COLUMNS`). A column whose type differs is
widened in place when the format can do that (`ALTER COLUMN ... TYPE`: each format says which
changes it makes, as metadata only); a batch whose values fit the column without loss is cast
into it; anything else stops the batch with what to do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from lakefresh.errors import SchemaError
from lakefresh.lakehouse.functions import EXACT_JSON_OPTIONS, sql_type
from lakefresh.lakehouse.sql import quote

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType


@dataclass(frozen=True)
class Widenings:
    """The type changes a format makes in place (metadata only), as pairs of simple type names
    (`("int", "bigint")`), with the format's name for the error that lists them."""

    format_name: str
    pairs: frozenset[tuple[str, str]]


def align(
    spark: SparkSession,
    table: str,
    target: str,
    df: DataFrame,
    keep: tuple[str, ...],
    widenings: Widenings,
) -> DataFrame:
    """Add the batch's new columns to `table` (`target`: its name in SQL), widen the types the
    format can widen, and return the batch with the table's columns in the table's order (NULL
    where the batch lacks one), followed by the `keep` columns, which are not the table's."""
    from pyspark.sql.types import StringType

    table_fields = spark.table(target).schema.fields
    columns = {f.name.lower(): f for f in table_fields}
    additions: list[str] = []
    altered = False
    for field in df.schema.fields:
        if field.name in keep:
            continue
        existing = columns.get(field.name.lower())
        if existing is None:
            additions.append(f"{quote(field.name)} {field.dataType.simpleString()}")
        elif existing.dataType.simpleString() != field.dataType.simpleString():  # not nullability
            altered |= _reconcile_type(
                spark, table, target, field.name, existing.dataType, field.dataType, widenings
            )
    if additions:
        spark.sql(f"ALTER TABLE {target} ADD COLUMNS ({', '.join(additions)})")
    if additions or altered:
        table_fields = spark.table(target).schema.fields
    by_lower = {f.name.lower(): f for f in df.schema.fields}
    out = []
    for field in table_fields:  # one projection as SQL text: a Column call is a round trip
        source = by_lower.get(field.name.lower())
        value = quote(source.name) if source else "NULL"
        if source and isinstance(field.dataType, StringType) and _nested(source.dataType):
            # its JSON text, not Spark's `{Oslo, 1234}`
            value = f"to_json({value}, {EXACT_JSON_OPTIONS})"
        out.append(f"CAST({value} AS {sql_type(field.dataType)}) AS {quote(field.name)}")
    return df.selectExpr(*out, *[quote(k) for k in keep])


def _reconcile_type(
    spark: SparkSession,
    table: str,
    target: str,
    column: str,
    current: DataType,
    incoming: DataType,
    widenings: Widenings,
) -> bool:
    """Whether the column was widened; raises when the batch's type does not fit it."""
    from pyspark.sql.types import NullType

    pair = (current.simpleString(), incoming.simpleString())
    if isinstance(incoming, NullType) or pair in {(b, a) for a, b in widenings.pairs}:
        return False  # narrower or all-null input fits the wider target column
    if pair in widenings.pairs:
        spark.sql(f"ALTER TABLE {target} ALTER COLUMN {quote(column)} TYPE {pair[1]}")
        return True
    if _castable_safely(current, incoming):
        return False
    widened = ", ".join(f"{a}->{b}" for a, b in sorted(widenings.pairs))
    raise SchemaError(
        f"column {column!r} of {table} is {pair[0]} but the batch has {pair[1]}; "
        f"{widenings.format_name} widens only {widened}. "
        "Declare the column's type in the source schema, or rebuild the table from its batches "
        "under the declared types: lakefresh run PIPELINE --table T --full-refresh"
    )


def _nested(kind: DataType) -> bool:
    from pyspark.sql import types as T

    return isinstance(kind, T.StructType | T.ArrayType | T.MapType)


def _castable_safely(current: DataType, incoming: DataType) -> bool:
    """Incoming values that fit the target column without loss (e.g. int into bigint, any into
    string, date into timestamp)."""
    from pyspark.sql import types as T

    if isinstance(current, T.StringType):  # nested values as their JSON text (`align`)
        return not isinstance(incoming, T.BinaryType)  # bytes are no text
    integral = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
    rank = {T.ByteType: 1, T.ShortType: 2, T.IntegerType: 3, T.LongType: 4}
    if isinstance(current, integral) and isinstance(incoming, integral):
        return rank[type(incoming)] <= rank[type(current)]
    if isinstance(current, T.DoubleType) and isinstance(incoming, (*integral, T.FloatType)):
        return True
    if isinstance(current, T.DecimalType) and isinstance(incoming, T.DecimalType):
        return (
            incoming.scale <= current.scale
            and incoming.precision - incoming.scale <= current.precision - current.scale
        )
    return isinstance(current, T.TimestampType) and isinstance(incoming, T.DateType)
