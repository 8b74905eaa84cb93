"""Strategy `sequence`: each batch replaces the target's rows inside its [min, max] range of an
increasing numeric column, inclusive (see `lakefresh.strategies.replace`). NULLs are quarantined.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from lakefresh.config.strategies import SequenceStrategyConfig
from lakefresh.errors import SchemaError
from lakefresh.lakehouse.sql import quote
from lakefresh.strategies.replace import RangeReplace

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


class SequenceStrategy(RangeReplace):
    kind = "sequence"
    config_type = SequenceStrategyConfig
    status_codes: ClassVar[dict[str, str]] = {
        "N": "appended",
        "D": "target rows in the batch's range, replaced",
        "W": "outside the batch's explicit range: left out (range.outside: drop)",
    }
    range_type = "sequence"
    config: SequenceStrategyConfig

    def __init__(self, config: SequenceStrategyConfig) -> None:
        self.config = config

    def value(self, df: DataFrame) -> Column:
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        column = self.config.column
        kind = df.schema[column].dataType
        if not isinstance(kind, T.NumericType):
            raise SchemaError(
                f"sequence column {column!r} is {kind.simpleString()}; it must be numeric "
                "(declare its type in the source schema)"
            )
        return F.col(quote(column))
