"""Steps 3-5 of `scd2` (the package's docstring): the touched keys' histories recomputed from all
their events in sequence order, exactly as if every event had arrived at once, and compared with
the stored versions. Each step is one function; `recompute` runs them in order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from lakefresh.columns import BATCH_ID_COLUMN, FILE_COLUMN, HASH_COLUMN, RECORD_COLUMN, STATUS_COLUMN
from lakefresh.lakehouse.sql import quote
from lakefresh.strategies.base import hashdiff
from lakefresh.strategies.materialize import materialize
from lakefresh.strategies.ordering import last_row_first
from lakefresh.strategies.scd2.events import DEL, SEEN, SEQ, SRC
from lakefresh.strategies.scd2.fast import DIFF_EXTRA
from lakefresh.strategies.scd2.implied import IMPLIED, derives, kept

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, WindowSpec

    from lakefresh.config.strategies import Scd2StrategyConfig

ROW_HASH = "_lf_row_hash"  # hash of every value but the sequence: a change of the row at all


@dataclass(frozen=True)
class Shape:
    """The columns a recomputation works with."""

    config: Scd2StrategyConfig
    all_columns: list[str]  # the batch's and the stored versions' data columns
    tracked: list[str]  # whose change opens a version
    data_hash: list[str]  # whose change is a change of the row (all values but sequence_by)
    first_load: bool = False  # the table does not exist yet

    @property
    def keys(self) -> list[str]:
        return list(self.config.keys)

    @property
    def values(self) -> list[str]:
        return [c for c in self.all_columns if c not in self.config.keys]


def recompute(
    shape: Shape, events: DataFrame, stored: DataFrame | None
) -> tuple[DataFrame, list[tuple[int, str, int]]]:
    """Steps 3-5 for the keys of `events`. Returns the change rows (versions plus the fast
    path's DIFF_EXTRA columns) and the batch rows' counts by (source, status code)."""
    points = one_event_per_point(shape, events)  # 3.
    marked = in_sequence_order(shape, points)  # 4.
    versions = versions_of(shape, marked)
    if shape.config.first_valid_from == "epoch_on_first_load":
        versions = epoch_for_first_load(shape, versions, stored)
    coded = batch_row_codes(shape, marked)
    return against_stored(shape, versions, stored), coded  # 5.


def _by_key(shape: Shape) -> list[Column]:
    from pyspark.sql import functions as F

    return [F.col(quote(k)) for k in shape.keys]


def known() -> Column:
    """Whether an event is one the table knows (stored, or implied by its snapshot times), not
    one of the batch's."""
    from pyspark.sql import functions as F

    return F.col(SRC).isin(0, IMPLIED)


def _in_order(shape: Shape) -> WindowSpec:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    return Window.partitionBy(*_by_key(shape)).orderBy(F.col(SEQ))


def one_event_per_point(shape: Shape, events: DataFrame) -> DataFrame:
    """3. One event per key and sequence value: the batch's over what is stored, then the last
    row (by file, then record, then contents). Each kept event carries what was stored at its
    point, if anything (`_lf_was*`), to judge the batch row against what it replaces."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    by_key = _by_key(shape)
    same_point = Window.partitionBy(*by_key, F.col(SEQ))
    stored_here = known()

    def stored_at_point(column: Column) -> Column:
        return F.max(F.when(stored_here, column)).over(same_point)

    hashed = events.select(
        *[F.col(quote(c)) for c in shape.all_columns],
        F.col(SEQ),
        F.col(DEL),
        F.col(SRC),
        F.col(FILE_COLUMN),
        F.col(RECORD_COLUMN),
        F.when(~F.col(DEL), hashdiff(shape.tracked, events.schema)).alias(HASH_COLUMN),
        F.when(~F.col(DEL), hashdiff(shape.data_hash, events.schema)).alias(ROW_HASH),
    )
    # the batch's event over a retirement over what the table holds
    batch_first = F.when(known(), F.lit(0)).otherwise(F.col(SRC)).desc()
    last_first = Window.partitionBy(*by_key, F.col(SEQ)).orderBy(*last_row_first(hashed, batch_first))
    ranked = (
        hashed.withColumn("_lf_rank", F.row_number().over(last_first))
        .withColumn("_lf_was", stored_at_point(F.lit(True)))
        .withColumn("_lf_was_del", stored_at_point(F.col(DEL)))
        .withColumn("_lf_was_hash", stored_at_point(F.col(HASH_COLUMN)))
        .withColumn("_lf_was_row", stored_at_point(F.col(ROW_HASH)))
    )
    return ranked.filter(F.col("_lf_rank") == 1).drop("_lf_rank", FILE_COLUMN, RECORD_COLUMN)


def deletion_records(shape: Shape, points: DataFrame) -> DataFrame:
    """4a'. With `deletes: new_record`: a delete after a row becomes a row that repeats the key's
    last values, marked (`_lf_marker`), with a tracked hash of its own, so it opens a deletion
    version; a second delete repeats it (the same hash: nothing opens). `_lf_deleting` keeps
    which events were deletes: `_lf_events` stores them as deletes, so the marker is made again
    when a later batch recomputes the key. A delete of a key with no row stays a delete."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    before = _in_order(shape).rowsBetween(Window.unboundedPreceding, -1)
    last_row = F.last(
        F.when(
            ~F.col(DEL),
            F.struct(*[F.col(quote(c)) for c in shape.values], F.col(HASH_COLUMN), F.col(ROW_HASH)),
        ),
        ignorenulls=True,
    ).over(before)
    out = points.withColumn("_lf_deleting", F.col(DEL)).withColumn("_lf_prev_row", last_row)
    marker = F.col(DEL) & F.col("_lf_prev_row").isNotNull()
    out = out.withColumn("_lf_marker", marker)
    for c in shape.values:
        out = out.withColumn(
            c, F.when(F.col("_lf_marker"), F.col(f"_lf_prev_row.{c}")).otherwise(F.col(quote(c)))
        )

    def marked_hash(column: str) -> Column:
        deleted = F.unhex(F.md5(F.concat(F.hex(F.col("_lf_prev_row").getField(column)), F.lit("|deleted"))))
        return F.when(F.col("_lf_marker"), deleted).otherwise(F.col(column))

    out = out.withColumn(HASH_COLUMN, marked_hash(HASH_COLUMN)).withColumn(ROW_HASH, marked_hash(ROW_HASH))
    return out.withColumn(DEL, F.col(DEL) & ~F.col("_lf_marker")).drop("_lf_prev_row")


def in_sequence_order(shape: Shape, points: DataFrame) -> DataFrame:
    """4a. Each key's events in sequence order, marked: where a version opens (a row after
    nothing, a delete or another tracked hash), where one closes (a delete after a row), the
    version an event belongs to and the next boundary after it. Materialized: the versions and
    the status codes both read it."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if shape.config.deletes == "new_record":
        points = deletion_records(shape, points)
    else:
        points = points.withColumn("_lf_deleting", F.col(DEL)).withColumn("_lf_marker", F.lit(False))
    in_order = _in_order(shape)
    after = in_order.rowsBetween(1, Window.unboundedFollowing)
    prev_del = F.lag(F.col(DEL)).over(in_order)
    prev_hash = F.lag(F.col(HASH_COLUMN)).over(in_order)
    is_row = ~F.col(DEL)
    opens = is_row & (prev_del.isNull() | prev_del | (prev_hash != F.col(HASH_COLUMN)))
    closes = F.col(DEL) & prev_del.isNotNull() & ~prev_del
    marked = points.withColumn("_lf_opens", opens).withColumn("_lf_closes", closes)
    boundary = F.col("_lf_opens") | F.col("_lf_closes")
    marked = (
        marked.withColumn("_lf_version", F.sum(F.col("_lf_opens").cast("int")).over(in_order))
        .withColumn("_lf_to", F.first(F.when(boundary, F.col(SEQ)), ignorenulls=True).over(after))
        .withColumn("_lf_to_delete", F.first(F.when(boundary, F.col(DEL)), ignorenulls=True).over(after))
        .withColumn("_lf_prev_row_hash", F.lag(F.col(ROW_HASH)).over(in_order))
        .withColumn("_lf_prev_del", prev_del)
        .withColumn(
            "_lf_stored_max",
            F.max(F.when(known(), F.col(SEQ))).over(Window.partitionBy(*_by_key(shape))),
        )
    )
    return materialize(marked)


def versions_of(shape: Shape, marked: DataFrame) -> DataFrame:
    """4b. The recomputed versions. Every event belongs to the version open at its time (deletes
    to the version they close or follow; those before a key's first row to its first version).
    A key with deletes only keeps them in a tombstone: valid_from = valid_to = its first delete."""
    from pyspark.sql import functions as F

    cfg = shape.config
    vf, vt, cur = cfg.valid_from_column, cfg.valid_to_column, cfg.is_current_column
    is_row = ~F.col(DEL)
    last_row = F.struct(
        F.col(SEQ).alias("_lf_at"),
        *[F.col(quote(c)) for c in shape.values],
        F.col(HASH_COLUMN),
        F.col("_lf_to"),
        F.col("_lf_to_delete"),
        F.col("_lf_marker"),
    )
    version = F.greatest(F.col("_lf_version"), F.lit(1)).alias("_lf_v")
    # an untracked change: a row that differs from the event before it, opening nothing
    changed = (
        is_row & ~F.col("_lf_opens") & F.coalesce(F.col(ROW_HASH) != F.col("_lf_prev_row_hash"), F.lit(False))
    )
    event = F.struct(
        F.col(SEQ).alias("seq"),
        F.col("_lf_deleting").alias("del"),
        (F.col(SRC) == 0).alias("stored"),
        changed.alias("changed"),
    )
    versions = marked.groupBy(*_by_key(shape), version).agg(
        F.min(F.when(is_row, F.col(SEQ))).alias("_lf_from"),
        F.min(F.col(SEQ)).alias("_lf_first"),
        F.array_sort(F.collect_list(event)).alias(SEEN),
        # the values of the version's last row (untracked: update), or of the row that opened it
        (F.max if cfg.untracked == "update" else F.min)(F.when(is_row, last_row)).alias("_lf_last"),
    )
    tombstone = F.col("_lf_from").isNull()
    deleted = (
        tombstone | F.coalesce(F.col("_lf_last._lf_to_delete"), F.lit(False)) | F.col("_lf_last._lf_marker")
    )
    valid_from = F.coalesce(F.col("_lf_from"), F.col("_lf_first"))
    valid_to = F.when(tombstone, F.col("_lf_first")).otherwise(F.col("_lf_last._lf_to"))
    if derives(cfg):  # re-sent rows and implied events are left out (implied.py)
        events = kept(F.col(SEEN), valid_from, valid_to)
    else:
        events = F.transform(
            F.col(SEEN), lambda e: F.struct(e.getField("seq").alias("seq"), e.getField("del").alias("del"))
        )
    if cfg.first_valid_from == "epoch":  # a key's first version is valid since 1970-01-01
        epoch = F.lit("1970-01-01 00:00:00").cast(marked.schema[SEQ].dataType)
        valid_from = F.when((F.col("_lf_v") == 1) & ~tombstone, epoch).otherwise(valid_from)
    return versions.select(
        *_by_key(shape),
        *[F.col("_lf_last").getField(c).alias(c) for c in shape.values],
        valid_from.alias(vf),
        valid_to.alias(vt),
        (~tombstone & F.col("_lf_last._lf_to").isNull()).alias(cur),
        *([deleted.alias(cfg.soft_delete_column)] if cfg.soft_delete_column else []),
        F.col(f"_lf_last.{HASH_COLUMN}").alias(HASH_COLUMN),
        events.alias(SEEN),
    )


def epoch_for_first_load(shape: Shape, versions: DataFrame, stored: DataFrame | None) -> DataFrame:
    """4c. With `first_valid_from: epoch_on_first_load` (SQLMesh's SCD_TYPE_2_BY_COLUMN): the
    first version of a key of the first load is valid since 1970-01-01 (keys first seen later
    open at their first event). A stored key whose first version opens at 1970-01-01 came with
    the first load."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    cfg = shape.config
    vf, vt = F.col(quote(cfg.valid_from_column)), F.col(quote(cfg.valid_to_column))
    epoch = F.lit("1970-01-01 00:00:00").cast(versions.schema[cfg.valid_from_column].dataType)
    if shape.first_load:
        eligible = versions.withColumn("_lf_epoch", F.lit(True))
    elif stored is None:
        return versions
    else:
        first_loaded = (
            stored.groupBy(*_by_key(shape))
            .agg(F.min(vf).alias("_lf_min"))
            .filter(F.col("_lf_min") == epoch)
            .select(*_by_key(shape), F.lit(True).alias("_lf_epoch"))
        )
        eligible = versions.join(first_loaded, on=shape.keys, how="left")
    first = F.min(vf).over(Window.partitionBy(*_by_key(shape)))
    opens = F.coalesce(F.col("_lf_epoch"), F.lit(False)) & (vf == first) & (vt.isNull() | (vt > vf))
    return eligible.withColumn(cfg.valid_from_column, F.when(opens, epoch).otherwise(vf)).drop("_lf_epoch")


def batch_row_codes(shape: Shape, marked: DataFrame) -> list[tuple[int, str, int]]:
    """The batch rows' status codes (the strategy's table), counted by (source, code). A code
    looks at the stored events around its row, so the batch's rows are picked after it."""
    from pyspark.sql import functions as F

    prev_del = F.col("_lf_prev_del")
    untracked = "T" if shape.config.untracked == "update" else "U"  # an untracked change later on
    was, was_del = F.col("_lf_was").isNotNull(), F.coalesce(F.col("_lf_was_del"), F.lit(False))
    same_tracked = F.col(HASH_COLUMN) == F.col("_lf_was_hash")
    marker = F.col("_lf_marker")
    status = (
        # a batch event where one is stored: judged against what it replaces
        F.when(was & F.col("_lf_deleting") & was_del, F.lit("U"))
        # a delete that opens a deletion version (deletes: new_record), or repeats one
        .when(marker & F.col("_lf_opens"), F.lit("D"))
        .when(marker, F.lit("U"))
        .when(was & ~F.col(DEL) & same_tracked & (F.col(ROW_HASH) == F.col("_lf_was_row")), F.lit("U"))
        .when(was & ~F.col(DEL) & same_tracked, F.lit("T"))
        .when(F.col(DEL) & F.col("_lf_closes"), F.lit("D"))
        .when(F.col(DEL), F.lit("U"))
        .when(F.col("_lf_stored_max").isNotNull() & (F.col(SEQ) < F.col("_lf_stored_max")), F.lit("L"))
        .when(F.col("_lf_opens") & (prev_del.isNull() | prev_del), F.lit("N"))
        .when(F.col("_lf_opens"), F.lit("C"))
        .when(F.col(ROW_HASH) != F.col("_lf_prev_row_hash"), F.lit(untracked))
        .otherwise(F.lit("U"))
    )
    coded_rows = marked.withColumn("_lf_code", status).filter(~known())
    by_code = coded_rows.groupBy(SRC, "_lf_code").count().collect()
    return [(int(source), str(code), int(n)) for source, code, n in by_code]


def against_stored(shape: Shape, recomputed: DataFrame, stored: DataFrame | None) -> DataFrame:
    """5. The recomputed versions against the stored ones on (key, valid_from): new versions to
    insert (I), changed ones to update (U), vanished ones to delete (D); equal ones drop out."""
    from pyspark.sql import functions as F

    cfg = shape.config
    keys, vf = shape.keys, cfg.valid_from_column
    sk = cfg.surrogate_key
    fingerprint = [c for c in recomputed.columns if c not in keys and c != vf]
    mine = recomputed.select(
        *[F.col(quote(c)) for c in recomputed.columns],
        hashdiff(fingerprint, recomputed.schema).alias("_lf_fp"),
        F.lit(True).alias("_lf_mine"),
    )
    if stored is not None:
        stored_sk = sk is not None and sk.column in stored.columns
        theirs = stored.select(
            *[F.col(quote(k)) for k in keys],
            F.col(quote(vf)),
            hashdiff([c for c in fingerprint if c in stored.columns], stored.schema).alias("_lf_their_fp"),
            F.col(BATCH_ID_COLUMN).alias("_lf_their_batch"),
            (F.col(quote(sk.column)) if sk and stored_sk else F.lit(None).cast("long")).alias("_lf_their_sk"),
        )
        diff = mine.join(theirs, on=[*keys, vf], how="full_outer")
    else:
        diff = (
            mine.withColumn("_lf_their_fp", F.lit(None).cast("binary"))
            .withColumn("_lf_their_batch", F.lit(None).cast("string"))
            .withColumn("_lf_their_sk", F.lit(None).cast("long"))
        )
    op = (
        F.when(F.col("_lf_mine").isNull(), F.lit("D"))
        .when(F.col("_lf_their_fp").isNull(), F.lit("I"))
        .when(F.col("_lf_fp") != F.col("_lf_their_fp"), F.lit("U"))
    )
    diff = diff.withColumn(STATUS_COLUMN, op).filter(F.col(STATUS_COLUMN).isNotNull())
    return diff.select(*[F.col(quote(c)) for c in recomputed.columns], *DIFF_EXTRA)
