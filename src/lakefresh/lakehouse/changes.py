"""Change rows of a table between two commits, the same for every format."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakefresh.columns import (
    CHANGE_ORDINAL_COLUMN,
    CHANGE_SNAPSHOT_COLUMN,
    CHANGE_TIME_COLUMN,
    CHANGE_TYPE_COLUMN,
)
from lakefresh.lakehouse.functions import row_document
from lakefresh.lakehouse.sql import quote

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def without_carry_overs(changes: DataFrame, keys: list[str]) -> DataFrame:
    """Without the update pairs whose before and after images are the same row: with
    `compute_updates`, the rows a copy-on-write commit rewrote unchanged come back as such
    pairs instead of being dropped as carry-overs."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    change_columns = (CHANGE_TYPE_COLUMN, CHANGE_ORDINAL_COLUMN, CHANGE_SNAPSHOT_COLUMN, CHANGE_TIME_COLUMN)
    data = [c for c in changes.columns if c not in change_columns]
    image = F.md5(row_document(data, changes.schema))
    pair = Window.partitionBy(*[F.col(quote(k)) for k in keys], F.col(CHANGE_ORDINAL_COLUMN))
    is_update = F.col(CHANGE_TYPE_COLUMN).isin("UPDATE_BEFORE", "UPDATE_AFTER")
    unchanged = is_update & (F.min(image).over(pair) == F.max(image).over(pair))
    return changes.withColumn("_lf_carry_over", unchanged).filter("NOT _lf_carry_over").drop("_lf_carry_over")
