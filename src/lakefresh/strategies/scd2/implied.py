"""`scd2`'s re-sent rows implied by the snapshot times (`resent_rows: derive`).

With full snapshots and validity from the batch time, every batch is a snapshot of every key at
its time: a key is present at an applied snapshot time exactly when one of its versions (not a
deletion version, not a skeleton) covers that time. So the re-sends of a version need not be
stored: a row re-sent unchanged writes nothing (fast.py: KEPT), and `_lf_events` keeps only the
events that changed a version: the row that opened it, rows that updated it in place, the delete
that closed it (`kept`), besides what an earlier lakefresh stored.

A snapshot that arrives late (its time t older than one already applied) re-cuts history exactly
as a computation over all snapshots would with one more event per key it touches, which the
table implies (`at_next_snapshot`): at the next applied snapshot time after t, n, a row with the
values of the version that covers n, or a delete where none does (the key was absent). The batch's
own events are at t, so the version a late row opens ends at n, as in the time-ordered history,
and everything after n is as stored.

The applied snapshot times are the times in `_lf_events` across the table: every version holds the
row that opened it and the delete that closed it, so every snapshot that opened, closed or
updated a version is there; one that changed nothing leaves its time with one version that it
re-sent (`witness`), so every snapshot time stays known. They are read from the rows at each
batch: a rollback, unload or reload changes them with the rows (a snapshot unloaded is gone from
them), and nothing is kept beside the table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakefresh.columns import FILE_COLUMN, RECORD_COLUMN, STATUS_COLUMN
from lakefresh.lakehouse.functions import utc_timestamp
from lakefresh.lakehouse.sql import quote
from lakefresh.strategies.scd2.events import DEL, SEEN, SEQ, SRC, decode, encode

if TYPE_CHECKING:
    from datetime import datetime

    from pyspark.sql import Column, DataFrame

    from lakefresh.config.strategies import Scd2StrategyConfig
    from lakefresh.strategies.base import ChangeSet

IMPLIED = 3  # SRC of an event the snapshot times imply: known to the table, as a stored one


def derives(cfg: Scd2StrategyConfig) -> bool:
    return cfg.resent_rows == "derive"


def next_snapshot_time(cfg: Scd2StrategyConfig, target: DataFrame, at: datetime, as_text: bool) -> int | None:
    """The earliest applied snapshot time after `at` (microseconds since the epoch), from the
    events the table's versions hold; None when no snapshot after `at` was applied."""
    from pyspark.sql import functions as F

    seq_type = target.schema[cfg.valid_from_column].dataType
    after = utc_timestamp(at).cast("timestamp").cast(seq_type)
    events = decode(F.col(SEEN), seq_type) if as_text else F.col(SEEN)
    # a version's events are sorted: its last tells, without reading the rest, if any is later
    last = decode(F.substring_index(F.col(SEEN), ",", -1), seq_type) if as_text else events
    later = target.filter(F.array_max(last.getField("seq")) > after)
    first = F.array_min(F.filter(events.getField("seq"), lambda seq: seq > after))
    found = later.agg(F.min(F.unix_micros(first.cast("timestamp")))).first()[0]  # type: ignore[index]
    return None if found is None else int(found)


def _covering(cfg: Scd2StrategyConfig, stored: DataFrame, at: Column) -> DataFrame:
    """The stored versions (events decoded) that cover a point in time: the key was present then,
    with their values. From the version's first row (a version valid from 1970-01-01 covers
    nothing before its key's first event); never a skeleton row, which absorbed no event."""
    from pyspark.sql import functions as F

    vf, vt = F.col(quote(cfg.valid_from_column)), F.col(quote(cfg.valid_to_column))
    first_row = F.array_min(F.filter(F.col(SEEN), lambda e: ~e.getField("del")).getField("seq"))
    covers = (F.greatest(vf, first_row) <= at) & (vt.isNull() | (at < vt))
    sk = cfg.surrogate_key
    if sk and sk.inferred_column in stored.columns:
        covers = covers & ~F.coalesce(F.col(quote(sk.inferred_column)), F.lit(False))
    return stored.filter(covers)


def _deletion(cfg: Scd2StrategyConfig, stored: DataFrame) -> Column:
    """Whether a version is a deletion version: the key was absent for its whole span. Only
    `deletes: new_record` writes those; with `deletes: close` the flag marks a version a delete
    closed, during which the key was present."""
    from pyspark.sql import functions as F

    soft = cfg.soft_delete_column
    if cfg.deletes != "new_record" or not soft or soft not in stored.columns:
        return F.lit(False)
    return F.coalesce(F.col(quote(soft)), F.lit(False))


def at_next_snapshot(
    cfg: Scd2StrategyConfig, new: DataFrame, stored: DataFrame, micros: int, stored_data: list[str]
) -> DataFrame:
    """For a snapshot older than one already applied: each touched key's event at the next
    applied snapshot time (`micros`), unless one is stored there: a row with the values of the
    version covering it, or a delete where none covers it or a deletion version does."""
    from pyspark.sql import functions as F

    keys = list(cfg.keys)
    seq_type = stored.schema[cfg.valid_from_column].dataType
    at = F.timestamp_micros(F.lit(micros)).cast(seq_type)
    there = stored.filter(F.exists(F.col(SEEN), lambda e: e.getField("seq") == at))
    touched = new.select(*[quote(k) for k in keys]).distinct()
    touched = touched.join(there.select(*[quote(k) for k in keys]), on=keys, how="left_anti")
    covering = _covering(cfg, stored, at).select(
        *[F.col(quote(c)) for c in [*keys, *[c for c in stored_data if c not in keys]]],
        _deletion(cfg, stored).alias("_lf_gone"),
        F.lit(True).alias("_lf_covered"),
    )
    values = [c for c in stored_data if c not in keys]
    return touched.join(covering, on=keys, how="left").select(
        *[F.col(quote(c)) for c in [*keys, *values]],
        at.alias(SEQ),
        (F.col("_lf_covered").isNull() | F.col("_lf_gone")).alias(DEL),
        F.lit(IMPLIED).alias(SRC),
        F.lit(None).cast("string").alias(FILE_COLUMN),
        F.lit(None).cast("long").alias(RECORD_COLUMN),
    )


def kept(events: Column, first: Column, valid_to: Column) -> Column:
    """Of a recomputed version's events (seq, del, stored, changed), sorted: those it keeps in
    `_lf_events`, as (seq, del). What was stored stays; of the rest, the event that opened it
    (its first row, or a tombstone's first delete), rows that changed it in place, and the
    delete that closed it. A re-sent row or an implied event does not: the snapshot times say it."""
    from pyspark.sql import functions as F

    def keep(e: Column) -> Column:
        seq = e.getField("seq")
        closing = e.getField("del") & (seq == valid_to)
        return (
            e.getField("stored") | (seq == first) | e.getField("changed") | F.coalesce(closing, F.lit(False))
        )

    return F.transform(
        F.filter(events, keep),
        lambda e: F.struct(e.getField("seq").alias("seq"), e.getField("del").alias("del")),
    )


def witness(
    cfg: Scd2StrategyConfig, at: datetime, new: DataFrame, stored: DataFrame, change: ChangeSet, as_text: bool
) -> ChangeSet:
    """A batch that opened, closed and updated nothing leaves its time in no version: one version
    it re-sent (the first by key) records it, so the snapshot's time stays known (the module's
    doc). Its batch id stays the version's: no batch's rows change hands."""
    from pyspark.sql import functions as F

    from lakefresh.strategies.materialize import materialize

    if change.written or change.rewrites:
        return change
    keys = list(cfg.keys)
    seq_type = stored.schema[cfg.valid_from_column].dataType
    point = utc_timestamp(at).cast("timestamp").cast(seq_type)
    senders = new.filter((F.col(SRC) == 1) & ~F.col(DEL)).select(*[quote(k) for k in keys])
    covering = _covering(cfg, stored, point).filter(~_deletion(cfg, stored))
    one = (
        covering.join(senders.distinct(), on=keys, how="left_semi")
        .orderBy(*[quote(k) for k in keys])
        .limit(1)
    )
    event = F.struct(point.alias("seq"), F.lit(False).alias("del"))
    seen = F.array_sort(F.array_distinct(F.concat(F.col(SEEN), F.array(event))))
    types = change.rows.schema

    def column(c: str) -> Column:
        if c == STATUS_COLUMN:
            return F.lit("U").alias(c)
        if c == SEEN:
            return (encode(seen, seq_type) if as_text else seen).alias(c)
        return F.col(quote(c)) if c in stored.columns else F.lit(None).cast(types[c].dataType).alias(c)

    recorded = materialize(one.select(*[column(c) for c in change.rows.columns]))
    if recorded.isEmpty():  # nothing re-sent to record it with (every key absent or deleted)
        return change
    change.rows = materialize(change.rows.unionByName(recorded))
    change.rewrites = 1
    return change
