"""Small DataFrames from Python values, built from literals in the JVM.

`spark.createDataFrame(list)` ships pickled rows to Python worker processes to convert them; for
the one or two rows of a control-table record that costs more than the write itself (about 0.3 s
a call on two cores, and seconds for the first). Literals need no Python worker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructType


def literal_rows(spark: SparkSession, rows: list[dict[str, Any]], schema: StructType) -> DataFrame:
    """A DataFrame of `rows` (dicts by column name; missing keys are NULL) with `schema`."""
    from pyspark.sql import functions as F

    if not rows:
        return spark.createDataFrame([], schema)
    structs = [
        F.struct(*[literal(row.get(f.name), f.dataType).alias(f.name) for f in schema.fields]) for row in rows
    ]
    return spark.range(1).select(F.inline(F.array(*structs)))


def literal(value: Any, kind: DataType) -> Column:
    """`value` as a column of type `kind`: scalars, dicts for maps, lists, dicts for structs."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, MapType, StructType

    if value is None:
        return F.lit(None).cast(kind)
    if isinstance(kind, MapType):
        if not value:
            return F.create_map().cast(kind)
        pairs = [c for k, v in value.items() for c in (literal(k, kind.keyType), literal(v, kind.valueType))]
        return F.create_map(*pairs)
    if isinstance(kind, ArrayType):
        if not value:
            return F.array().cast(kind)
        return F.array(*[literal(v, kind.elementType) for v in value])
    if isinstance(kind, StructType):
        return F.struct(*[literal(value.get(f.name), f.dataType).alias(f.name) for f in kind.fields])
    return F.lit(value).cast(kind)
