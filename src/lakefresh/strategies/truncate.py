"""`key`'s truncate markers (Databricks' apply_as_truncates): a batch row that says "the source
table was emptied here".

A marker's position is its record date (`date_column`, or the batch's time), then its file and
record. Of a batch holding markers, the latest counts:

- the batch's rows before it are dropped (they were emptied away): status O;
- every stored live key whose record date is not newer than the marker's, and that the batch's
  remaining rows do not name, is deleted: status E (a later write at the same date wins, so a
  stored row at the marker's date goes);
- the markers themselves are not stored: status Z. They may have NULL keys.

Stored keys newer than the marker (rows that arrived before a late marker) stay.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakefresh.columns import FILE_COLUMN, RECORD_COLUMN, UPDATED_AT_COLUMN
from lakefresh.strategies.base import absent_from_snapshot

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

TRUNCATE_FLAG = "_lf_truncate"


@dataclass(frozen=True)
class Truncation:
    """The batch's latest marker, and how many batch rows it took out."""

    at: Any  # the marker's record date
    markers: int  # marker rows (Z)
    older: int  # batch rows before the marker (O)


def _before(at: Any, file: str | None, record: int | None) -> Column:
    """Batch rows that come before the position (date, file, record)."""
    from pyspark.sql import functions as F

    date, f, r = F.col(UPDATED_AT_COLUMN), F.col(FILE_COLUMN), F.col(RECORD_COLUMN)
    same_file_earlier = (f == F.lit(file)) & (r < F.lit(record)) if record is not None else F.lit(False)
    earlier_file = f < F.lit(file) if file is not None else F.lit(False)
    before = (date < F.lit(at)) | ((date == F.lit(at)) & (earlier_file | same_file_earlier))
    return F.coalesce(before, F.lit(False))  # a row without a date or place is kept


def split_at_marker(rows: DataFrame) -> tuple[DataFrame, Truncation | None]:
    """The batch's rows after its latest truncate marker (all of them when it has none), and the
    marker. One small aggregate over the batch."""
    from pyspark.sql import functions as F

    flag = F.col(TRUNCATE_FLAG)
    position = F.struct(F.col(UPDATED_AT_COLUMN), F.col(FILE_COLUMN), F.col(RECORD_COLUMN))
    found = rows.agg(
        F.max(F.when(flag, position)).alias("last"), F.sum(flag.cast("int")).alias("markers")
    ).first()
    assert found is not None
    if not found["markers"]:
        return rows.filter(~flag), None
    at, file, record = found["last"]
    before = _before(at, file, record) & ~flag
    older = rows.filter(before).count()
    kept = rows.filter(~flag & ~before)
    return kept, Truncation(at=at, markers=int(found["markers"]), older=older)


def erased(
    target: DataFrame,
    batch: DataFrame,
    keys: list[str],
    live: Column,
    skeleton: str | None,
    at: Any,
    carry: tuple[str, ...],
) -> DataFrame:
    """The stored live keys (with the `carry` columns) not newer than the marker that the
    batch's remaining rows do not name: the keys the truncate deletes."""
    from pyspark.sql import functions as F

    old_enough = live & (F.col(UPDATED_AT_COLUMN) <= F.lit(at))
    return absent_from_snapshot(target, batch, keys, old_enough, skeleton, [], carry)


def marker_problems(
    problems: list[tuple[Column, str]], keys: list[str], marker: Column
) -> list[tuple[Column, str]]:
    """A marker (rows where `marker` holds) may have NULL keys: the NULL-key problems spare it."""
    null_key = {f"key column {k} is NULL" for k in keys}
    return [(cond & ~marker, why) if why in null_key else (cond, why) for cond, why in problems]
