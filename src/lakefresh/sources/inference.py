"""The types of a batch's columns that neither the source's `schema` nor the target gives:
inferred by Spark, with two corrections that keep data."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from lakefresh.lakehouse.sql import quote, sql_literal
from lakefresh.sources.json_text import is_nested

if TYPE_CHECKING:
    from pyspark.sql import DataFrameReader, SparkSession
    from pyspark.sql.types import DataType

    from lakefresh.config.sources import CsvOptions

LEADING_ZERO = sql_literal("^[ \\t]*[+-]?0[0-9]")


def inferred_types(
    spark: SparkSession,
    csv_reader: Callable[[], DataFrameReader],
    files: list[str],
    fmt: str,
    csv: CsvOptions,
) -> dict[str, DataType]:
    """The batch's types as Spark infers them, but a nested JSON value is text (its JSON, for
    want of a declared type), and so is a CSV column of numbers that one writes with a leading
    zero (a postcode, an account: `00123` would be stored as 123)."""
    from pyspark.sql.types import NumericType, StringType

    if fmt != "csv":
        schema = spark.read.json(files).schema
        return {
            f.name: StringType() if is_nested(f.dataType) else f.dataType
            for f in schema.fields
            if f.name != "_corrupt_record"
        }
    reader = csv_reader().option("inferSchema", True)
    if csv.timestamp_format:
        reader = reader.option("timestampFormat", csv.timestamp_format)
    types = {f.name: f.dataType for f in reader.csv(files).schema.fields}
    types.pop("_corrupt_record", None)
    numbers = [name for name, kind in types.items() if isinstance(kind, NumericType)]
    if numbers:
        found = (
            csv_reader().csv(files).selectExpr(*[f"max({quote(c)} RLIKE {LEADING_ZERO})" for c in numbers])
        )
        for name, leading in zip(numbers, found.first() or [], strict=False):
            if leading:
                types[name] = StringType()
    return types
