"""Strategy `timestamp` (DataForge's timestamp refresh): each batch replaces the target's rows
inside its [min, max] range of a timestamp column, inclusive (see `lakefresh.strategies.replace`).

A string column is parsed with `format` (a Spark datetime pattern) or, without one, as ISO-8601;
a value that does not parse is quarantined, as is a NULL. Date and timestamp columns keep their
type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from lakefresh.config.strategies import TimestampStrategyConfig
from lakefresh.errors import SchemaError
from lakefresh.lakehouse.functions import try_to_timestamp
from lakefresh.lakehouse.sql import quote
from lakefresh.strategies.base import is_temporal
from lakefresh.strategies.replace import RangeReplace

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


class TimestampStrategy(RangeReplace):
    kind = "timestamp"
    config_type = TimestampStrategyConfig
    status_codes: ClassVar[dict[str, str]] = {
        "N": "appended",
        "D": "target rows in the batch's range, replaced",
        "W": "outside the batch's explicit range: left out (range.outside: drop)",
    }
    range_type = "timestamp"
    config: TimestampStrategyConfig

    def __init__(self, config: TimestampStrategyConfig) -> None:
        self.config = config

    def _parsed(self, df: DataFrame) -> Column:
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        column = self.config.column
        kind = df.schema[column].dataType
        raw = F.col(quote(column))
        if is_temporal(kind):
            return raw
        if isinstance(kind, T.StringType):
            fmt = self.config.format
            return try_to_timestamp(raw, fmt)
        raise SchemaError(
            f"timestamp column {column!r} is {kind.simpleString()}; it must be a timestamp, a date "
            "or a string (with `format` when it is not ISO-8601)"
        )

    def value(self, df: DataFrame) -> Column:
        return self._parsed(df)

    def row_problems(self, df: DataFrame) -> list[tuple[Column, str]]:
        from pyspark.sql import functions as F

        problems = super().row_problems(df)
        column = self.config.column
        if column in df.columns:
            how = f"with format {self.config.format!r}" if self.config.format else "as ISO-8601"
            bad = F.col(quote(column)).isNotNull() & self._parsed(df).isNull()
            problems.append((bad, f"cannot parse timestamp column {column} {how}"))
        return problems
