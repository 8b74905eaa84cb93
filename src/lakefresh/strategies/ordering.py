"""How a batch's rows are put in order where lakefresh must pick one of a key's rows, or number
a log's events: what the table says first (a date, `dedupe`'s column), then where the rows
arrived (file, then record: the last wins), then **their contents**.

The last is what makes the choice a function of the rows alone. Provenance does not always tell
rows apart: a `transform` whose SQL does not keep `_lf_file` and `_lf_record` leaves them NULL,
a change feed's rows of one commit share their ordinal, and a row's record is only as ordered as
its source. Without a last tie-breaker Spark's sort leaves such rows in whatever order its tasks
met them, so the same rows could give another table on a rerun, a replay or a reload. The
contents are a 64-bit hash (`xxhash64`) of the row's values, its data columns and the flags that
come with them (lakehouse/functions.py's `contents`, without what a rerun may give otherwise:
the batch's id and time): rows that tie on it too are equal in every value the table keeps
(barring a collision, about one in 2^64 per pair), and which of them is taken changes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakefresh.columns import FILE_COLUMN, RECORD_COLUMN
from lakefresh.lakehouse.functions import contents

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


def last_row_first(rows: DataFrame, *leading: Column) -> list[Column]:
    """Window order putting the winning row of a key first: by `leading` (e.g. date descending),
    then the last file, then the last record in it, then by contents."""
    from pyspark.sql import functions as F

    last = [F.col(FILE_COLUMN).desc_nulls_last(), F.col(RECORD_COLUMN).desc_nulls_last()]
    return [*leading, *last, contents(rows).desc()]


def first_row_first(rows: DataFrame, *leading: Column, nulls_first: bool = False) -> list[Column]:
    """Window order putting the first row (by `leading`, then file and record, rows without
    provenance last unless `nulls_first`) first, then by contents: the order rows arrived in, as
    `dedupe: first` and a log's offsets read it."""
    from pyspark.sql import functions as F

    arrival = [F.col(FILE_COLUMN), F.col(RECORD_COLUMN)]
    arrival = [c.asc_nulls_first() if nulls_first else c.asc_nulls_last() for c in arrival]
    return [*leading, *arrival, contents(rows).asc()]
