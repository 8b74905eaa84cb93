"""Strategy `scd2`: slowly changing dimension type 2, correct under late and bunched events.

Every key has versions `[valid_from, valid_to)`; the open one (`valid_to` NULL) is current. A
version opens when the *tracked* columns change (all non-key columns by default, or `track` /
`track_except`; never the `sequence_by` or delete-marker columns); a change to untracked columns
only updates the version it falls in. A delete closes the open version (and sets
`soft_delete_column` on it when configured); a later row for the key opens a new one. Validity
comes from `sequence_by` (a timestamp, date or number) or else the batch time.

How a batch is applied, so that the result never depends on how events were cut into batches or
in which order the batches came:

1. The *touched* keys are those in the batch (with `full_snapshots`, also the keys with a current
   version that the batch lacks: each gets a delete at the batch time).
2. The stored versions of the touched keys are turned back into events: a row at every
   `valid_from`, and a delete at a `valid_to` that no version of the key starts at.
3. The batch's events join them. On one key and one sequence value the batch wins over what is
   stored, and inside the batch the last row (by file, then record) wins; the others count as
   `duplicates`.
4. The touched keys' histories are recomputed from all their events in sequence order (windows
   over key, sequence), exactly as if every event had arrived at once.
5. The recomputed versions are compared with the stored ones on (key, valid_from): new versions
   are inserted, changed ones (valid_to, current flag, untracked values) updated, vanished ones
   deleted, in ONE MERGE: the single atomic commit the runner stages, audits and publishes.

Steps 2-5 are skipped for the keys `scd2_fast` can write directly (one batch event, newer than
every stored one, over a live current version or nothing): their change rows, the same as the
recomputation's, join the others' in that MERGE.

So several changes of one key in a batch each become a version; an event older than the current
version is slotted into history and the versions around it are re-cut so intervals chain with no
gap and no overlap; a re-sent unchanged row changes nothing.

A version stores the values of its latest event, and in `_lf_events` the sequence value of every
event it absorbed (re-sent rows, the delete that closed it, deletes of the already-deleted key),
so that a late event that splits it later re-cuts it exactly where a computation over all events
would: the part after a late delete starts at the first absorbed row after it. A key that has only
ever been deleted keeps its deletes in a *tombstone* row (valid_from = valid_to, not current,
soft-deleted, NULL values), replaced by real versions when rows for the key arrive. The cost is
one entry per event (stored as text, see `scd2_events`): a feed that re-sends unchanged rows
every day grows its current versions by one entry a day. Untracked columns of the earlier
part of a split version keep the version's latest values (only those are stored); its
`sequence_by` column is exact. Status codes of batch rows:

| code | meaning                                                          |
| ---- | ---------------------------------------------------------------- |
| N    | opens the first version of a key, or reopens a deleted key       |
| C    | a tracked change: opens a new version                            |
| T    | only untracked columns changed: the version is updated in place  |
| U    | nothing changed: a re-sent row or delete, a delete of nothing, a  |
|      | row equal to its version but for a newer `sequence_by` (recorded) |
| D    | a delete that closed a version                                   |
| L    | late: older than the key's latest stored event; slotted in       |

Target system columns: `valid_from`, `valid_to`, `is_current` (names configurable), the optional
soft-delete flag, `_lf_hash` (hashdiff of the tracked columns) and `_lf_batch_id` (the batch that
last wrote the version).

With `surrogate_key`, every version has a key that follows it through re-cuts (see
`_surrogate_keys`), plus `is_inferred`. Skeleton rows (made by fact lookups for keys not seen yet)
are current versions that absorbed no event: they contribute nothing to the recomputation, so
the key's real events replace them, and the real version covering the skeleton's start (or the
key's first one) takes over the skeleton's surrogate key. A full snapshot does not retire them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakefresh.columns import BATCH_ID_COLUMN, FILE_COLUMN, HASH_COLUMN, RECORD_COLUMN, STATUS_COLUMN
from lakefresh.config.strategies import Scd2StrategyConfig
from lakefresh.lakehouse.backend import MergeClauses
from lakefresh.lakehouse.sql import quote
from lakefresh.strategies.base import (
    ChangeSet,
    StageContext,
    broadcast_if_small,
    counts_and_superseded,
    data_columns,
    delete_flag,
    hashdiff,
    is_temporal,
    last_row_first,
    materialize,
    null_key_problems,
    require_columns,
)
from lakefresh.strategies.scd2_events import DEL, SEEN, SEQ, SRC, decode, encode, stored_as_text
from lakefresh.strategies.scd2_fast import DIFF_EXTRA, fast_changes, fast_path_enabled
from lakefresh.strategies.surrogate import largest_key, with_surrogate_key

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructType

ROW_HASH = "_lf_row_hash"


class Scd2Strategy:
    kind = "scd2"
    range_type = None

    def __init__(self, config: Scd2StrategyConfig) -> None:
        self.config = config

    def unique_keys(self) -> list[str]:
        return [*self.config.keys, self.config.valid_from_column]

    def system_columns(self) -> list[str]:
        cfg = self.config
        out = [cfg.valid_from_column, cfg.valid_to_column, cfg.is_current_column]
        out += [cfg.soft_delete_column] if cfg.soft_delete_column else []
        sk = cfg.surrogate_key
        return out + ([sk.column, sk.inferred_column] if sk else [])

    def row_problems(self, df: DataFrame) -> list[tuple[Column, str]]:
        return null_key_problems(df, self.config.keys, self.config.sequence_by, "sequence_by")

    def tracked(self, columns: list[str]) -> list[str]:
        cfg = self.config
        if cfg.track is not None:
            return [c for c in cfg.track if c in columns]
        skip = {*cfg.keys, *cfg.track_except, cfg.sequence_by, cfg.delete.column if cfg.delete else None}
        return [c for c in columns if c not in skip]

    def stage(self, ctx: StageContext, batch: DataFrame) -> ChangeSet:
        from pyspark.sql import functions as F

        cfg = self.config
        keys = list(cfg.keys)
        vf, vt, cur = cfg.valid_from_column, cfg.valid_to_column, cfg.is_current_column
        sk = cfg.surrogate_key
        require_columns(batch, keys, "key column(s)")
        if cfg.sequence_by:
            require_columns(batch, [cfg.sequence_by], "sequence_by")
        system = set(self.system_columns())
        columns = [c for c in data_columns(batch) if c not in system]
        seq = F.col(quote(cfg.sequence_by)) if cfg.sequence_by else F.lit(ctx.batch_time).cast("timestamp")
        new = batch.select(
            *[F.col(quote(c)) for c in columns],
            seq.alias(SEQ),
            delete_flag(cfg.delete).alias(DEL),
            F.lit(1).alias(SRC),
            F.col(FILE_COLUMN),
            F.col(RECORD_COLUMN),
        )
        total = ctx.rows_of(batch)

        # 1-2. stored versions of the touched keys, back as events
        stored = None
        stored_data: list[str] = []
        target = ctx.target() if ctx.target_exists else None
        as_text = self._events_as_text(None if target is None else target.schema)
        if target is not None:
            touched = batch.select(*[quote(k) for k in keys]).distinct()
            if cfg.full_snapshots:
                live = F.col(quote(cur))
                if sk and sk.inferred_column in target.columns:  # skeletons wait for their record
                    live = live & ~F.coalesce(F.col(quote(sk.inferred_column)), F.lit(False))
                absent = (
                    target.filter(live)
                    .select(*[quote(k) for k in keys])
                    .join(touched, on=keys, how="left_anti")
                )
                # retired at the batch time, in the sequence's own type (a date sequence: the
                # batch time's date); a numeric sequence retires at the batch's highest value
                deletion_time = F.lit(ctx.batch_time).cast("timestamp")
                if cfg.sequence_by:
                    seq_type = batch.schema[cfg.sequence_by].dataType
                    if is_temporal(seq_type):
                        deletion_time = deletion_time.cast(seq_type)
                    else:
                        deletion_time = F.lit(batch.agg(F.max(quote(cfg.sequence_by))).first()[0])  # type: ignore[index]
                retired = absent.select(
                    *[F.col(quote(k)) for k in keys],
                    deletion_time.alias(SEQ),
                    F.lit(True).alias(DEL),
                    F.lit(2).alias(SRC),  # a batch event the batch did not send: never a duplicate
                    F.lit(None).cast("string").alias(FILE_COLUMN),
                    F.lit(None).cast("long").alias(RECORD_COLUMN),
                )
                new = new.unionByName(retired, allowMissingColumns=True)
                touched = touched.unionByName(absent).distinct()
            touched = broadcast_if_small(ctx, touched, total)
            stored_rows = target.join(touched, on=keys, how="left_semi")
            if as_text and SEEN in target.columns:
                stored_rows = stored_rows.withColumn(SEEN, decode(F.col(SEEN), target.schema[vf].dataType))
            stored = materialize(stored_rows)
            stored_data = [c for c in stored.columns if c not in system and not c.startswith("_lf_")]
        all_columns = columns + [c for c in stored_data if c not in columns]

        # keys with one batch event newer than all they hold (on a first load: one row) are
        # written without recomputing; the other keys go on to steps 2-5
        fast = None
        if fast_path_enabled(ctx):
            with_stored = new if stored is None else self._with_rows_back(new, stored, stored_data)
            values = [c for c in all_columns if c not in keys]
            tracked, data_hash = self.tracked(all_columns), self._data_hash(values)
            fast = fast_changes(cfg, new, stored, with_stored.schema, values, tracked, data_hash)
        general_stored = stored
        if fast is not None:
            new = new.join(fast.keys, on=keys, how="left_anti")
            if stored is not None:
                general_stored = stored.join(fast.keys, on=keys, how="left_anti")
        events = new if general_stored is None else self._with_rows_back(new, general_stored, stored_data)
        version_columns = [
            *keys,
            *[c for c in all_columns if c not in keys],
            vf,
            vt,
            cur,
            *([cfg.soft_delete_column] if cfg.soft_delete_column else []),
            HASH_COLUMN,
            SEEN,
        ]
        # with no other key touched (no retirements either), the fast path wrote the whole batch
        retirements = cfg.full_snapshots and ctx.target_exists
        coded: list[tuple[int, str, int]] = []
        if fast is not None and fast.batch_rows == total and not retirements:
            diff = fast.rows
        else:
            diff, coded = self._recompute(events, general_stored, all_columns)
            if fast is not None:
                diff = diff.unionByName(fast.rows)
        counts: dict[str, int] = dict(fast.counts) if fast is not None else {}
        for _, code, n in coded:
            counts[code] = counts.get(code, 0) + n
        # the batch rows that lost to a later row of theirs on the same key and sequence value
        handled = sum(n for source, _, n in coded if source == 1) + (fast.batch_rows if fast else 0)
        duplicates = total - handled

        own: list[str] = []
        stored_sk = sk is not None and stored is not None and sk.column in stored.columns
        if sk:
            diff = self._surrogate_keys(ctx, diff, stored if stored_sk else None)
            own = [sk.column, sk.inferred_column]
        seq_type = diff.schema[SEEN].dataType.elementType["seq"].dataType  # type: ignore[attr-defined]
        changes = materialize(
            diff.select(
                *[
                    encode(F.col(SEEN), seq_type).alias(SEEN) if c == SEEN and as_text else F.col(quote(c))
                    for c in version_columns
                ],
                *[F.col(quote(c)) for c in own],
                F.lit(ctx.batch_id).alias(BATCH_ID_COLUMN),
                F.col(STATUS_COLUMN),
                F.col("_lf_their_batch"),
            )
        )
        # (skeletons belong to no batch)
        ops, superseded = counts_and_superseded(changes, STATUS_COLUMN, "_lf_their_batch", ("U", "D"))
        return ChangeSet(
            rows=changes.drop("_lf_their_batch"),
            counts=counts,
            record_count=total,
            duplicates=duplicates,
            expected_delta=ops.get("I", 0) - ops.get("D", 0),
            written=ops.get("I", 0) + ops.get("U", 0),
            superseded=superseded,
        )

    def _events_as_text(self, target: StructType | None) -> bool:
        """Whether the target (its schema; None: not created yet) keeps `_lf_events` as text.
        Tables it creates do (see scd2_events); older ones keep their array."""
        return target is None or SEEN not in target.fieldNames() or stored_as_text(target[SEEN].dataType)

    def _data_hash(self, values: list[str]) -> list[str]:
        """The columns whose change is a change of the row: all values but `sequence_by`."""
        return [c for c in values if c != self.config.sequence_by]

    def _with_rows_back(self, new: DataFrame, stored: DataFrame, stored_data: list[str]) -> DataFrame:
        """The batch's events and every event a stored version absorbed, back at its own sequence
        value (kept in `_lf_events`): rows with the version's values, and deletes, so a late event
        splits or closes the version exactly where a computation over all events would."""
        from pyspark.sql import functions as F

        cfg = self.config
        point = F.explode(F.col(SEEN)).alias("_lf_point")
        rows_back = stored.select(*[F.col(quote(c)) for c in stored_data], point).select(
            *[
                (
                    F.col("_lf_point.seq").cast(stored.schema[c].dataType).alias(c)
                    if c == cfg.sequence_by
                    else F.col(quote(c))
                )
                for c in stored_data
            ],
            F.col("_lf_point.seq").alias(SEQ),
            F.col("_lf_point.del").alias(DEL),
            F.lit(0).alias(SRC),
        )
        return new.unionByName(rows_back, allowMissingColumns=True)

    def _recompute(
        self, events: DataFrame, stored: DataFrame | None, all_columns: list[str]
    ) -> tuple[DataFrame, list[tuple[int, str, int]]]:
        """Steps 3-5 for the keys of `events`: their histories recomputed and compared with the
        `stored` versions. Returns the change rows (versions plus the fast path's DIFF_EXTRA
        columns) and the batch rows' counts by (source, status code)."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        cfg = self.config
        keys = list(cfg.keys)
        vf, vt, cur = cfg.valid_from_column, cfg.valid_to_column, cfg.is_current_column
        sk = cfg.surrogate_key

        # 3. one event per key and sequence value: the batch over what is stored, then the last row
        by_key = [F.col(quote(k)) for k in keys]
        last_first = Window.partitionBy(*by_key, F.col(SEQ)).orderBy(*last_row_first(F.col(SRC).desc()))
        same_point = Window.partitionBy(*by_key, F.col(SEQ))
        values = [c for c in all_columns if c not in keys]
        tracked = self.tracked(all_columns)
        data_hash = self._data_hash(values)
        stored_here = F.col(SRC) == 0

        def stored_at_point(column: Column) -> Column:
            return F.max(F.when(stored_here, column)).over(same_point)

        hashed = events.select(
            *[F.col(quote(c)) for c in all_columns],
            F.col(SEQ),
            F.col(DEL),
            F.col(SRC),
            F.col(FILE_COLUMN),
            F.col(RECORD_COLUMN),
            F.when(~F.col(DEL), hashdiff(tracked)).alias(HASH_COLUMN),
            F.when(~F.col(DEL), hashdiff(data_hash)).alias(ROW_HASH),
        )
        # what the batch replaces at the same key and sequence value, if anything is stored there
        ranked = (
            hashed.withColumn("_lf_rank", F.row_number().over(last_first))
            .withColumn("_lf_was", stored_at_point(F.lit(True)))
            .withColumn("_lf_was_del", stored_at_point(F.col(DEL)))
            .withColumn("_lf_was_hash", stored_at_point(F.col(HASH_COLUMN)))
            .withColumn("_lf_was_row", stored_at_point(F.col(ROW_HASH)))
        )
        events = ranked.filter(F.col("_lf_rank") == 1).drop("_lf_rank", FILE_COLUMN, RECORD_COLUMN)

        # 4. histories, recomputed in sequence order
        in_order = Window.partitionBy(*by_key).orderBy(F.col(SEQ))
        after = in_order.rowsBetween(1, Window.unboundedFollowing)
        prev_del = F.lag(F.col(DEL)).over(in_order)
        prev_hash = F.lag(F.col(HASH_COLUMN)).over(in_order)
        is_row = ~F.col(DEL)
        opens = is_row & (prev_del.isNull() | prev_del | (prev_hash != F.col(HASH_COLUMN)))
        closes = F.col(DEL) & prev_del.isNotNull() & ~prev_del
        marked = events.withColumn("_lf_opens", opens).withColumn("_lf_closes", closes)
        boundary = F.col("_lf_opens") | F.col("_lf_closes")
        marked = (
            marked.withColumn("_lf_version", F.sum(F.col("_lf_opens").cast("int")).over(in_order))
            .withColumn("_lf_to", F.first(F.when(boundary, F.col(SEQ)), ignorenulls=True).over(after))
            .withColumn("_lf_to_delete", F.first(F.when(boundary, F.col(DEL)), ignorenulls=True).over(after))
            .withColumn("_lf_prev_row_hash", F.lag(F.col(ROW_HASH)).over(in_order))
            .withColumn(
                "_lf_stored_max",
                F.max(F.when(F.col(SRC) == 0, F.col(SEQ))).over(Window.partitionBy(*by_key)),
            )
        )
        marked = materialize(marked)
        # Every event belongs to the version open at its time (deletes to the version they close
        # or follow; those before a key's first row to its first version). A key with deletes
        # only keeps them in a tombstone: valid_from = valid_to = its first delete.
        last_row = F.struct(
            F.col(SEQ).alias("_lf_at"),
            *[F.col(quote(c)) for c in all_columns if c not in keys],
            F.col(HASH_COLUMN),
            F.col("_lf_to"),
            F.col("_lf_to_delete"),
        )
        versions = marked.groupBy(*by_key, F.greatest(F.col("_lf_version"), F.lit(1)).alias("_lf_v")).agg(
            F.min(F.when(is_row, F.col(SEQ))).alias("_lf_from"),
            F.min(F.col(SEQ)).alias("_lf_first"),
            F.array_sort(F.collect_list(F.struct(F.col(SEQ).alias("seq"), F.col(DEL).alias("del")))).alias(
                SEEN
            ),
            F.max(F.when(is_row, last_row)).alias("_lf_last"),
        )
        tombstone = F.col("_lf_from").isNull()
        fields = [c for c in all_columns if c not in keys]
        recomputed = versions.select(
            *by_key,
            *[F.col("_lf_last").getField(c).alias(c) for c in fields],
            F.coalesce(F.col("_lf_from"), F.col("_lf_first")).alias(vf),
            F.when(tombstone, F.col("_lf_first")).otherwise(F.col("_lf_last._lf_to")).alias(vt),
            (~tombstone & F.col("_lf_last._lf_to").isNull()).alias(cur),
            *(
                [
                    (tombstone | F.coalesce(F.col("_lf_last._lf_to_delete"), F.lit(False))).alias(
                        cfg.soft_delete_column
                    )
                ]
                if cfg.soft_delete_column
                else []
            ),
            F.col(f"_lf_last.{HASH_COLUMN}").alias(HASH_COLUMN),
            F.col(SEEN),
        )

        # batch rows' status codes
        was, was_del = F.col("_lf_was").isNotNull(), F.coalesce(F.col("_lf_was_del"), F.lit(False))
        same_tracked = F.col(HASH_COLUMN) == F.col("_lf_was_hash")
        status = (
            # a batch event where one is stored: judged against what it replaces
            F.when(was & F.col(DEL) & was_del, F.lit("U"))
            .when(was & ~F.col(DEL) & same_tracked & (F.col(ROW_HASH) == F.col("_lf_was_row")), F.lit("U"))
            .when(was & ~F.col(DEL) & same_tracked, F.lit("T"))
            .when(F.col(DEL) & F.col("_lf_closes"), F.lit("D"))
            .when(F.col(DEL), F.lit("U"))
            .when(F.col("_lf_stored_max").isNotNull() & (F.col(SEQ) < F.col("_lf_stored_max")), F.lit("L"))
            .when(F.col("_lf_opens") & (prev_del.isNull() | prev_del), F.lit("N"))
            .when(F.col("_lf_opens"), F.lit("C"))
            .when(F.col(ROW_HASH) != F.col("_lf_prev_row_hash"), F.lit("T"))
            .otherwise(F.lit("U"))
        )
        # (the code looks at stored events around a batch row: the filter comes after it)
        coded_rows = marked.withColumn("_lf_code", status).filter(F.col(SRC) >= 1)
        by_code = coded_rows.groupBy(SRC, "_lf_code").count().collect()
        coded = [(int(source), str(code), int(n)) for source, code, n in by_code]

        # 5. the versions to insert, update and delete
        fingerprint = [c for c in recomputed.columns if c not in keys and c != vf]
        mine = recomputed.select(
            *[F.col(quote(c)) for c in recomputed.columns],
            hashdiff(fingerprint).alias("_lf_fp"),
            F.lit(True).alias("_lf_mine"),
        )
        stored_sk = sk is not None and stored is not None and sk.column in stored.columns
        if stored is not None:
            theirs = stored.select(
                *[F.col(quote(k)) for k in keys],
                F.col(quote(vf)),
                hashdiff([c for c in fingerprint if c in stored.columns]).alias("_lf_their_fp"),
                F.col(BATCH_ID_COLUMN).alias("_lf_their_batch"),
                (F.col(quote(sk.column)) if stored_sk else F.lit(None).cast("long")).alias("_lf_their_sk"),  # type: ignore[union-attr]
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
        return diff.select(*[F.col(quote(c)) for c in recomputed.columns], *DIFF_EXTRA), coded

    def _surrogate_keys(self, ctx: StageContext, diff: DataFrame, stored: DataFrame | None) -> DataFrame:
        """Surrogate keys follow versions, so facts that hold one keep pointing at a live row:

        - an updated version keeps its key;
        - a new version takes over the key of a vanished version that started inside it (a late
          event moved a version's start, or a skeleton row was inside it), or that started
          before the key's first version, if the new version is that first one (a skeleton for
          an early fact, replaced by the key's real history); of several, the earliest;
        - any other new version gets a new key.
        """
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        cfg = self.config
        sk = cfg.surrogate_key
        assert sk is not None
        keys, vf, vt = list(cfg.keys), cfg.valid_from_column, cfg.valid_to_column
        status = F.col(STATUS_COLUMN)
        existing = F.col("_lf_their_sk")
        if stored is not None:
            first_from = F.min(F.when(F.col("_lf_mine"), F.col(quote(vf)))).over(
                Window.partitionBy(*[F.col(quote(k)) for k in keys])
            )
            diff = diff.withColumn("_lf_first_from", first_from)
            old = diff.filter((status == "D") & F.col("_lf_their_sk").isNotNull()).select(
                *[F.col(quote(k)) for k in keys],
                F.col(quote(vf)).alias("_lf_old_from"),
                F.col("_lf_their_sk").alias("_lf_old_sk"),
                F.col("_lf_first_from"),
            )
            renamed = [f"_lf_new_key{i}" for i in range(len(keys))]
            new = diff.filter(status == "I").select(
                *[F.col(quote(k)).alias(r) for k, r in zip(keys, renamed, strict=True)],
                F.col(quote(vf)).alias("_lf_new_from"),
                F.col(quote(vt)).alias("_lf_new_to"),
            )
            old_from, new_from, new_to = F.col("_lf_old_from"), F.col("_lf_new_from"), F.col("_lf_new_to")
            inside = (new_from <= old_from) & (new_to.isNull() | (old_from < new_to))
            before_first = (old_from < F.col("_lf_first_from")) & (new_from == F.col("_lf_first_from"))
            same_key = [F.col(quote(k)) == F.col(r) for k, r in zip(keys, renamed, strict=True)]
            claims = (
                old.join(new, on=[*same_key, inside | before_first])
                .groupBy(*[F.col(r).alias(k) for k, r in zip(keys, renamed, strict=True)], new_from.alias(vf))
                .agg(F.min_by(F.col("_lf_old_sk"), old_from).alias("_lf_claimed_sk"))
            )
            diff = diff.join(claims, on=[*keys, vf], how="left")
            existing = F.coalesce(existing, F.when(status == "I", F.col("_lf_claimed_sk")))
        start = largest_key(ctx, sk.column)
        diff = with_surrogate_key(diff, sk, keys, existing, status.isin("I", "U"), start, also=(vf,))
        return diff.withColumn(sk.inferred_column, F.lit(False))

    def skeleton_rows(self, ctx: StageContext, missing: DataFrame) -> DataFrame:
        """Target-shaped skeleton rows for natural keys the table lacks: `missing` holds the key
        columns, any default values and `_lf_at`, the earliest time a fact needs the key at. A
        skeleton is a current version from `_lf_at` that absorbed no event, so the key's real
        events later replace it entirely; its first real version takes over its surrogate key."""
        from pyspark.sql import functions as F

        cfg = self.config
        sk = cfg.surrogate_key
        assert sk is not None
        vf = cfg.valid_from_column
        target = ctx.target().schema if ctx.target_exists else None
        at_type = missing.schema["_lf_at"].dataType
        if target is not None and vf in target.fieldNames():
            at_type = target[vf].dataType
        as_text = self._events_as_text(target)
        rows = missing.withColumn(vf, F.col("_lf_at").cast(at_type))
        start = largest_key(ctx, sk.column)
        rows = with_surrogate_key(rows, sk, list(cfg.keys), F.lit(None), F.lit(True), start, also=(vf,))
        events = f"array<struct<seq:{at_type.simpleString()},del:boolean>>"
        return rows.select(
            *[F.col(quote(c)) for c in missing.columns if not c.startswith("_lf_")],
            F.col(quote(vf)),
            F.lit(None).cast(at_type).alias(cfg.valid_to_column),
            F.lit(True).alias(cfg.is_current_column),
            *([F.lit(False).alias(cfg.soft_delete_column)] if cfg.soft_delete_column else []),
            F.col(quote(sk.column)),
            F.lit(True).alias(sk.inferred_column),
            F.lit(None).cast("binary").alias(HASH_COLUMN),
            (F.lit("") if as_text else F.array().cast(events)).alias(SEEN),
            F.lit(None).cast("string").alias(BATCH_ID_COLUMN),
        )

    def write(self, ctx: StageContext, change: ChangeSet) -> None:
        from pyspark.sql import functions as F

        columns = [c for c in change.rows.columns if c != STATUS_COLUMN]
        if not ctx.target_exists or not (change.written or change.expected_delta):
            inserts = change.rows.filter(F.col(STATUS_COLUMN) == "I").select(*map(quote, columns))
            ctx.backend.append(ctx.table, inserts)
            return
        ctx.backend.merge(
            ctx.table,
            change.rows,
            MergeClauses(
                keys=[*self.config.keys, self.config.valid_from_column],
                update_columns=columns,
                insert_columns=columns,
                update_when=f"s.{STATUS_COLUMN} = 'U'",
                delete_when=f"s.{STATUS_COLUMN} = 'D'",
                insert_when=f"s.{STATUS_COLUMN} = 'I'",
            ),
        )
