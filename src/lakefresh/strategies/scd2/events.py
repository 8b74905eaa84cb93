"""How an `scd2` version stores the events it absorbed (`_lf_events`).

Inside a batch they are an array of (seq, del) structs, sorted. In the table they are text:
`+` (a row) or `-` (a delete) and the sequence value, comma-separated, e.g. `+1735689600000000,-…`.
A nested column would cost every scan of the table: Iceberg 1.10 reads Parquet vectorized only
when no projected column is nested (apache/iceberg#521), and a copy-on-write MERGE rewrites whole
files, so each batch would read its target row by row (at 1 M rows, a MERGE took about 1 s more
with the array column, and a full scan about twice as long).

The text round-trips exactly: timestamps as microseconds since the epoch (no time zone is
involved), dates, timestamps without time zone and numbers as Spark's own text for them, which it
casts back to the same value. Tables written before this kept the array column; they are read
and written in their own form.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakefresh.columns import SCD2_SEQ_COLUMN

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql.types import DataType

SEEN = "_lf_events"  # target column: (sequence value, is delete) of every event a version absorbed
# an event's columns while a batch is staged: its sequence value, whether it is a delete, and
# where it came from (0 stored, 1 the batch, 2 a full snapshot's retirement)
SEQ, DEL, SRC = SCD2_SEQ_COLUMN, "_lf_del", "_lf_src"


def stored_as_text(kind: DataType) -> bool:
    from pyspark.sql.types import StringType

    return isinstance(kind, StringType)


def encode(events: Column, seq_type: DataType) -> Column:
    """The text form of an array of (seq, del) structs; NULL stays NULL, empty is ''."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampType

    def one(event: Column) -> Column:
        seq = event.getField("seq")
        text = F.unix_micros(seq) if isinstance(seq_type, TimestampType) else seq
        return F.concat(F.when(event.getField("del"), F.lit("-")).otherwise(F.lit("+")), text.cast("string"))

    return F.array_join(F.transform(events, one), ",")


def decode(text: Column, seq_type: DataType) -> Column:
    """The array of (seq, del) structs that `encode` wrote, with seq of `seq_type`."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampType

    def one(item: Column) -> Column:
        body = F.substring(item, 2, 1 << 20)
        if isinstance(seq_type, TimestampType):
            seq = F.timestamp_micros(body.cast("long"))
        else:
            seq = body.cast(seq_type)
        return F.struct(seq.alias("seq"), (F.substring(item, 1, 1) == F.lit("-")).alias("del"))

    return F.transform(F.filter(F.split(text, ","), lambda item: item != F.lit("")), one)
