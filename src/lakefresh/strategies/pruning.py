"""A batch's key range, so that reads and MERGEs of the target skip files that cannot hold its keys.

A strategy that looks a batch's keys up in the target (`key`) names a key column whose range
bounds every key of the batch (`KeyPruning.pruning_key`). The read observes that column's lowest
and highest value among the rows to load, in the pass that materializes them (no job of its
own), and the stage step adds `key BETWEEN lowest AND highest` to its read of the stored rows and
to its MERGE's condition. Iceberg and Delta skip the data files whose statistics lie outside the
range, and Parquet the row groups. Files in no order all span the whole range, so the predicate
prunes nothing there and costs a comparison per stored row; with a sort order on the key
(`sort_by`) and keys that arrive in order, most files are skipped.

Only a range that provably holds every key of the rows compared is used: the rows to load as
read (a transform has run; lookups, which may add rows, drop it), and, in the MERGE, only a
change set made of those rows alone (not a full snapshot's retirements or a truncation's
deletes, which name stored keys outside the batch).
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from lakefresh.lakehouse.sql import quote, sql_literal

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

KeyRange = tuple[str, Any, Any]  # the key column, its lowest and its highest value


@runtime_checkable
class KeyPruning(Protocol):
    """A strategy whose reads of the target are bounded by the batch's keys."""

    def pruning_key(self, schema: StructType) -> str | None:
        """A key column of the batch (`schema`) whose range bounds the target rows a batch can
        touch, one that `prunable` accepts (the read takes it as it is); None when there is none."""


def prunable(schema: StructType, column: str) -> bool:
    """Whether a column's range can be written as SQL literals that compare exactly in Spark,
    Iceberg and Delta: whole numbers, text (compared byte by byte in each) and dates.
    Timestamps (a literal passes through a zone), floats (NaN) and decimals are left out."""
    from pyspark.sql import types as T

    names = {f.name: f for f in schema.fields}
    return column in names and isinstance(names[column].dataType, T.IntegralType | T.StringType | T.DateType)


def observed_range(column: str, lowest: Any, highest: Any) -> KeyRange | None:
    """The range the read observed (None when it saw no value)."""
    if lowest is None or highest is None:
        return None
    return column, lowest, highest


def range_condition(key_range: KeyRange, alias: str | None = None) -> str:
    """SQL: the column (of `alias`, when given) between the range's ends."""
    column, lowest, highest = key_range
    name = f"{alias}.{quote(column)}" if alias else quote(column)
    return f"{name} BETWEEN {_literal(lowest)} AND {_literal(highest)}"


def _literal(value: Any) -> str:
    if isinstance(value, date):
        return f"DATE'{value.isoformat()}'"
    return sql_literal(value)
