"""Strategy `key` (alias `scd1`): upsert by natural key, with record status codes.

Every batch row gets a status against the stored record with the same key:

| code | meaning                                                  | target     |
| ---- | -------------------------------------------------------- | ---------- |
| N    | new key                                                  | inserted   |
| C    | changed: other hash, date not older than the stored one  | updated    |
| U    | unchanged: same hash, same date                          | untouched  |
| S    | unchanged, but with a more recent date                   | untouched  |
| O    | older than the stored record                             | untouched  |
| D    | a delete (marker column or condition) of a stored key    | deleted    |
| R    | a stored key absent from a full snapshot                 | deleted    |
| M    | a change of a stored key, `when_matched: ignore`         | untouched  |
| X    | a new key, `when_not_matched: ignore`                    | untouched  |
| T    | a delete of a key not stored, with `soft_delete_column`  | tombstone  |

A stored row with no hash (written by another writer, or a skeleton row) is replaced by a batch
row that is not older (C). A key stored twice stops the batch with an error naming the keys.

The hash covers the non-key columns minus `exclude_from_cdc` and minus `date_column`. The record's
date is `date_column`, or, without one, the batch time (for files, the modification time), so a
batch produced later wins and one produced earlier counts as O. A delete of
a key the target does not hold changes nothing and counts as U; an older delete counts as O.

Duplicate keys inside one batch: the row with the latest date wins; on equal dates, the row that
comes last (by file name, then by record in the file; `dedupe: first` takes the first), or, with
`dedupe: {by: column}`, the row with the highest (or lowest) value, ties to the first. The others
count as `duplicates`. On equal dates across batches the later batch wins, as Hudi's ordering
field and Databricks' sequence_by do ("the later write wins").

Options (see KeyStrategyConfig): `soft_delete_column` keeps a deleted key as a tombstone (values
NULL, the flag true, the delete's date), so an older row arriving later is O and never brings the
key back, while a newer one does (C); `full_snapshots` deletes stored keys the batch lacks (R);
`when_matched` (update, delete, ignore) and `when_not_matched` (insert, ignore) are a MERGE's
clauses; `drop_columns` are read but not stored. A tombstone counts as not matched.
`tombstone_retention` keeps the same memory out of sight: each key a batch deletes (D, R, E, or
a delete of a key not stored, U) is kept with its delete's date in `<table>__tombstones`, written
with the batch's commit (state/tombstones.py), and a later row of the key older than that is O
(tested with Databricks' AUTO CDC example, docs.databricks.com/aws/en/ldp/cdc, cut into batches
so that the delete arrives before the older update). `undated_deletes: apply`: a delete whose
`date_column` is NULL deletes its key whatever the stored date (Hudi's rule for a delete without
an ordering value).

Target system columns: `_lf_hash`, `_lf_updated_at` (the record's date), `_lf_batch_id`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from lakefresh.columns import (
    BATCH_ID_COLUMN,
    FILE_COLUMN,
    HASH_COLUMN,
    RECORD_COLUMN,
    SEQ_COLUMN,
    STATUS_COLUMN,
    UPDATED_AT_COLUMN,
)
from lakefresh.config.strategies import DedupeBy, KeyStrategyConfig
from lakefresh.lakehouse.backend import MergeClauses
from lakefresh.lakehouse.functions import try_to_timestamp, utc_timestamp
from lakefresh.lakehouse.sql import quote, sql_literal
from lakefresh.state import tombstones as hidden
from lakefresh.strategies.base import (
    ChangeSet,
    StageContext,
    appends,
    broadcast_if_small,
    data_columns,
    delete_flag,
    hashdiff,
    null_key_problems,
    ordering_problems,
    raise_stored_duplicates,
    require_columns,
)
from lakefresh.strategies.group import GroupChange, Member, stage_key_group
from lakefresh.strategies.key.deletes import REMOVES, retired, tombstones, truncated
from lakefresh.strategies.key.merge import intents, judgeable, judged_by_merge, merge_judging
from lakefresh.strategies.materialize import (
    counts_and_superseded,
    counts_with_superseded,
    materialize,
    materialize_with_counts,
)
from lakefresh.strategies.ordering import first_row_first, last_row_first
from lakefresh.strategies.pruning import prunable, range_condition
from lakefresh.strategies.surrogate import largest_key, skeleton_rows, with_surrogate_key
from lakefresh.strategies.truncate import TRUNCATE_FLAG, Truncation, marker_problems, split_at_marker

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructType

DELETE_FLAG = "_lf_delete"
WRITES = ("N", "C", "D", "R", "T", "E")
# every status the change set of a batch can give its rows (retirements and truncations add R, E)
STATUS_CODES = ("dup", "N", "X", "C", "D", "M", "O", "U", "S", "T")
DEDUPE = "_lf_dedupe"  # the dedupe column's value, while a key's winning row is picked
UNHELD = "_lf_unheld"  # a delete of a key the target does not hold: its tombstone is kept


class KeyStrategy:
    kind = "key"
    config_type = KeyStrategyConfig
    status_codes: ClassVar[dict[str, str]] = {
        "N": "new key",
        "C": "changed",
        "U": "unchanged",
        "S": "unchanged, more recent date",
        "O": "older than the stored record (ignored)",
        "D": "deleted",
        "R": "absent from the full snapshot: deleted",
        "M": "matched, left alone (when_matched: ignore)",
        "X": "not matched, left alone (when_not_matched: ignore)",
        "T": "a delete of a key not stored: its tombstone is kept (soft_delete_column)",
        "Z": "a truncate marker (not stored)",
        "E": "a stored key not newer than a truncate marker: deleted",
    }
    range_type = None
    judging = True  # a plain table's MERGE may judge its batch rows (merge.py)

    def __init__(self, config: KeyStrategyConfig) -> None:
        self.config = config

    def unique_keys(self) -> list[str]:
        return list(self.config.keys)

    def pruning_key(self, schema: StructType) -> str | None:
        """The first key column whose range prunes (strategies/pruning.py)."""
        return next((k for k in self.config.keys if prunable(schema, k)), None)

    def row_problems(self, df: DataFrame) -> list[tuple[Column, str]]:
        """NULL keys and dates (a delete's date may be NULL with `undated_deletes: apply`), and
        dates that cannot order rows."""
        from pyspark.sql import functions as F

        cfg = self.config
        undated = cfg.undated_deletes == "apply"
        problems = null_key_problems(df, cfg.keys, None if undated else cfg.date_column, "date")
        if undated and cfg.date_column in df.columns:
            undated_row = F.col(quote(cfg.date_column)).isNull() & ~delete_flag(cfg.delete)
            problems.append((undated_row, f"date column {cfg.date_column} is NULL"))
        problems += ordering_problems(df, cfg.date_column, "date")
        if cfg.truncate:
            return marker_problems(problems, cfg.keys, delete_flag(cfg.truncate))
        return problems

    def stage(self, ctx: StageContext, batch: DataFrame) -> ChangeSet:
        """Each batch row's status against the stored record of its key, in named phases: the
        rows prepared and ranked by key (the winner first), joined with the stored rows of their
        keys (`_against_stored`), given their status (`_status`) and the target's columns
        (`_with_target_columns`), counted (and materialized, or left to the MERGE to judge:
        `_counted`), then told as a change set (`_change_set`)."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        cfg = self.config
        columns, rows = self.prepared(batch, utc_timestamp(ctx.batch_time), F.lit(ctx.batch_id))
        truncation = None
        if cfg.truncate:
            rows, truncation = split_at_marker(rows)
        latest_first = Window.partitionBy(*[quote(k) for k in cfg.keys]).orderBy(*self.winner_first(rows))
        ranked = rows.withColumn("_lf_rank", F.row_number().over(latest_first))
        batch_rows = ctx.rows_of(batch) if ctx.target_exists else 0
        joined = self._against_stored(ctx, batch, rows, ranked, batch_rows)
        joined = self._against_tombstones(ctx, batch, joined, batch_rows)
        # the status of each batch row, as one SQL expression (a chain of Column calls costs a
        # round trip to the JVM per call)
        joined = joined.withColumn(STATUS_COLUMN, self._status())
        staged, target_columns = self._with_target_columns(ctx, joined, columns)
        staged, counts, superseded, judging = self._counted(ctx, batch, rows, staged, truncation)
        return self._change_set(
            ctx, batch, rows, staged, (counts, superseded), target_columns, judging, truncation, batch_rows
        )

    def _against_stored(
        self, ctx: StageContext, batch: DataFrame, rows: DataFrame, ranked: DataFrame, batch_rows: int
    ) -> DataFrame:
        """The ranked batch rows, each with the stored row of its key (`_lf_t_*` columns: its
        hash, date, batch, surrogate key, whether it is a skeleton or a tombstone; NULL for a
        new key)."""
        from pyspark.sql import functions as F

        cfg = self.config
        sk = cfg.surrogate_key
        stored_sk = F.lit(None).cast("long")
        stored_inferred = F.lit(False)
        stored_deleted = F.lit(False)
        soft = cfg.soft_delete_column
        if not ctx.target_exists:
            return (
                ranked.withColumn("_lf_t_hash", F.lit(None).cast("binary"))
                .withColumn("_lf_t_at", F.lit(None).cast(rows.schema[UPDATED_AT_COLUMN].dataType))
                .withColumn("_lf_t_batch", F.lit(None).cast("string"))
                .withColumn("_lf_t_exists", F.lit(None).cast("boolean"))
                .withColumn("_lf_t_sk", stored_sk)
                .withColumn("_lf_t_inferred", stored_inferred)
                .withColumn("_lf_t_deleted", stored_deleted)
            )
        stored_columns = set(ctx.target().columns)
        if sk and sk.column in stored_columns:
            stored_sk = F.col(quote(sk.column))
        if sk and sk.inferred_column in stored_columns:
            stored_inferred = F.coalesce(F.col(quote(sk.inferred_column)), F.lit(False))
        if soft and soft in stored_columns:
            stored_deleted = F.coalesce(F.col(quote(soft)), F.lit(False))
        # Only the key, hash and date columns of the target are read, and the batch's keys are
        # broadcast into that scan (unless the batch is too large to broadcast), so the target is
        # not shuffled. The keys come from the batch itself, not from `ranked`, so the dedupe
        # window is computed once.
        batch_keys = broadcast_if_small(
            ctx, batch.select(*[quote(k) for k in cfg.keys]).distinct(), batch_rows
        )
        target = ctx.target()
        if ctx.key_range:  # the files that cannot hold the batch's keys are skipped
            target = target.where(range_condition(ctx.key_range))
        stored = target.select(
            *[F.col(quote(k)) for k in cfg.keys],
            F.col(HASH_COLUMN).alias("_lf_t_hash"),
            F.col(UPDATED_AT_COLUMN).alias("_lf_t_at"),
            F.col(BATCH_ID_COLUMN).alias("_lf_t_batch"),
            F.lit(True).alias("_lf_t_exists"),
            stored_sk.alias("_lf_t_sk"),
            stored_inferred.alias("_lf_t_inferred"),
            stored_deleted.alias("_lf_t_deleted"),
        ).join(batch_keys, on=list(cfg.keys), how="left_semi")
        # the stored rows of the batch's keys are at most as many as the batch's rows (one per
        # key): broadcast too, so the batch's rows are not shuffled to meet them
        return ranked.join(broadcast_if_small(ctx, stored, batch_rows), on=list(cfg.keys), how="left")

    def _against_tombstones(
        self, ctx: StageContext, batch: DataFrame, joined: DataFrame, batch_rows: int
    ) -> DataFrame:
        """The judged rows with their key's tombstone kept out of sight (`_lf_t_gone`: the
        latest delete's date, state/tombstones.py; NULL without one)."""
        from pyspark.sql import functions as F

        cfg = self.config
        gone = None
        if cfg.tombstone_retention and ctx.target_exists:
            keys = batch.select(*[quote(k) for k in cfg.keys]).distinct()
            gone = hidden.consulted(
                ctx.backend,
                ctx.table,
                list(cfg.keys),
                broadcast_if_small(ctx, keys, batch_rows),
                cfg.tombstone_retention,
            )
        if gone is None:
            kind = joined.schema[UPDATED_AT_COLUMN].dataType
            return joined.withColumn("_lf_t_gone", F.lit(None).cast(kind))
        gone = gone.withColumnRenamed(UPDATED_AT_COLUMN, "_lf_t_gone")
        return joined.join(broadcast_if_small(ctx, gone, batch_rows), on=list(cfg.keys), how="left")

    def _status(self) -> Column:
        """A batch row's status code (the module's table), from its rank and its stored row."""
        from pyspark.sql import functions as F

        cfg = self.config
        soft = cfg.soft_delete_column
        new, at, stored_at = "_lf_t_exists IS NULL", quote(UPDATED_AT_COLUMN), "_lf_t_at"
        tombstone, deletes = "_lf_t_deleted", quote(DELETE_FLAG)
        inserted = "'N'" if cfg.when_not_matched == "insert" else "'X'"
        changed = sql_literal({"update": "C", "delete": "D", "ignore": "M"}[cfg.when_matched])
        branches = [
            ("_lf_rank > 1", "'dup'"),
            # a tombstone kept out of sight: a row older than its key's delete stays out
            (f"{new} AND {at} < _lf_t_gone", "'O'"),
            (f"{new} AND {deletes}", "'T'" if soft else "'U'"),
            (new, inserted),
            (f"{at} < {stored_at}", "'O'"),
            (f"{deletes} AND {tombstone}", "'U'"),
            (deletes, "'D'"),
            # a tombstone is not matched: a newer row brings the key back (an update of its row)
            (tombstone, "'C'" if cfg.when_not_matched == "insert" else "'X'"),
            ("TRUE" if cfg.when_matched == "delete" else "FALSE", "'D'"),
            ("_lf_t_inferred", "'C'"),  # a skeleton row gets its real values
            # a row another writer stored has no hash: the batch's values replace it
            ("_lf_t_hash IS NULL", changed),
            (self.differs(), changed),
            (f"{at} > {stored_at}", "'S'"),
        ]
        return F.expr("CASE " + " ".join(f"WHEN {c} THEN {v}" for c, v in branches) + " ELSE 'U' END")

    def differs(self) -> str:
        """The SQL condition under which a batch row's values differ from its stored row's."""
        return f"{quote(HASH_COLUMN)} != _lf_t_hash"

    def _with_target_columns(
        self, ctx: StageContext, joined: DataFrame, columns: list[str]
    ) -> tuple[DataFrame, list[str]]:
        """The judged rows with the target's columns (a tombstone's flag, the surrogate key),
        their status and the batch that wrote their stored row; and the target's columns."""
        from pyspark.sql import functions as F

        cfg = self.config
        sk = cfg.surrogate_key
        target_columns = [*columns, HASH_COLUMN, UPDATED_AT_COLUMN, BATCH_ID_COLUMN]
        if cfg.soft_delete_column:
            joined = tombstones(cfg, joined, columns)
            target_columns.insert(len(columns), cfg.soft_delete_column)
        if sk:
            start = largest_key(ctx, sk)
            writes = F.col(STATUS_COLUMN).isin("N", "C")
            joined = with_surrogate_key(joined, sk, cfg.keys, F.col("_lf_t_sk"), writes, start)
            joined = joined.withColumn(sk.inferred_column, F.lit(False))
            target_columns[len(columns) : len(columns)] = [sk.column, sk.inferred_column]
        # a delete of a key the target does not hold (U) keeps its tombstone too
        unheld = F.expr(f"{STATUS_COLUMN} = 'U' AND {quote(DELETE_FLAG)} AND _lf_t_exists IS NULL")
        staged = joined.select(
            *[F.col(quote(c)) for c in target_columns],
            F.col(STATUS_COLUMN),
            F.col("_lf_t_batch"),
            *([unheld.alias(UNHELD)] if cfg.tombstone_retention else []),
        )
        return staged, target_columns

    def _counted(
        self,
        ctx: StageContext,
        batch: DataFrame,
        rows: DataFrame,
        staged: DataFrame,
        truncation: Truncation | None,
    ) -> tuple[DataFrame, dict[str, int], dict[str, int] | None, bool]:
        """The change set's rows, its counts per status and what it supersedes of each earlier
        batch, and whether the MERGE judges the batch rows itself (merge.py): then they are
        counted alone; else counted by the pass that materializes them, with a full snapshot's
        retired keys and a truncate marker's erased ones."""
        cfg = self.config
        more = cfg.full_snapshots or truncation
        judging = False
        if self.judging and judged_by_merge(cfg, ctx):  # counted alone: the MERGE judges (merge.py)
            counts, superseded = counts_with_superseded(
                staged, STATUS_COLUMN, STATUS_CODES, "_lf_t_batch", ("C", *REMOVES)
            )
            judging = judgeable(counts)  # else counted again, by the pass that materializes
        if judging:
            pass  # counted above; the MERGE's source is the batch's intents (`_change_set`)
        elif not more or not ctx.target_exists:
            # counts per status and, for changed or deleted rows, per batch that wrote the stored
            # row (it no longer owns it), from the pass that materializes the change set
            staged, counts, superseded, _ = materialize_with_counts(
                staged, STATUS_COLUMN, STATUS_CODES, "_lf_t_batch", ("C", *REMOVES)
            )
        else:
            staged = materialize(staged)
            if cfg.full_snapshots:
                staged = materialize(
                    staged.unionByName(retired(cfg, ctx, batch, ctx.target(), rows), allowMissingColumns=True)
                )
            if truncation:
                staged = materialize(
                    staged.unionByName(truncated(cfg, ctx, rows, truncation), allowMissingColumns=True)
                )
            counts, superseded = counts_and_superseded(staged, STATUS_COLUMN, "_lf_t_batch", ("C", *REMOVES))
        return staged, counts, superseded, judging

    def _change_set(
        self,
        ctx: StageContext,
        batch: DataFrame,
        rows: DataFrame,
        staged: DataFrame,
        counted: tuple[dict[str, int], dict[str, int] | None],
        target_columns: list[str],
        judging: bool,
        truncation: Truncation | None,
        batch_rows: int,
    ) -> ChangeSet:
        """The change set of the counted rows: what it writes, its counts (a truncate marker's
        own: Z, and the older rows it erased: O) and the target's expected change; a key stored
        twice stops it."""
        from pyspark.sql import functions as F

        cfg = self.config
        counts, superseded = counted
        duplicates = counts.pop("dup", 0)
        if truncation:
            counts["Z"] = truncation.markers
            counts["O"] = counts.get("O", 0) + truncation.older
            counts = {code: n for code, n in counts.items() if n}
        read = sum(n for code, n in counts.items() if code not in ("R", "E")) + duplicates
        if ctx.target_exists and read > batch_rows:
            # a key stored twice joined its batch row twice: another writer broke the table
            raise_stored_duplicates(ctx, cfg.keys, batch)
        removed = 0 if cfg.soft_delete_column else sum(counts.get(code, 0) for code in REMOVES)
        found = intents(rows, target_columns, counts, quote(DELETE_FLAG)) if judging else None
        kept = None
        if cfg.tombstone_retention:
            deleting = F.col(STATUS_COLUMN).isin(*REMOVES) | F.coalesce(F.col(UNHELD), F.lit(False))
            kept = staged.filter(deleting).select(*[quote(k) for k in cfg.keys], UPDATED_AT_COLUMN)
        return ChangeSet(
            rows=found[0]
            if found
            else staged.filter(F.col(STATUS_COLUMN).isin(*WRITES)).drop("_lf_t_batch", UNHELD),
            judged=bool(found and found[1]),
            counts=counts,
            record_count=read,
            duplicates=duplicates,
            expected_delta=counts.get("N", 0) + counts.get("T", 0) - removed,
            written=sum(counts.get(code, 0) for code in WRITES) - removed,
            superseded=superseded,
            rewrites=sum(counts.get(code, 0) for code in WRITES if code not in ("N", "T")),
            # its rows are the batch's alone, unless it retires or truncates stored keys
            key_range=None if cfg.full_snapshots or truncation else ctx.key_range,
            tombstones=kept,
        )

    def winner_first(self, rows: DataFrame) -> list[Column]:
        """Window order putting a key's winning row of `rows` (`prepared`) first: the latest
        date, then by `dedupe` (the last row by file and record, the first, or a column's value),
        then by the rows' contents (ordering.py)."""
        from pyspark.sql import functions as F

        at = F.col(UPDATED_AT_COLUMN).desc()
        dedupe = self.config.dedupe
        if dedupe == "last":
            return last_row_first(rows, at)
        if dedupe == "first":
            return first_row_first(rows, at)
        value = F.col(DEDUPE)
        by_value = value.desc_nulls_last() if dedupe.order == "desc" else value.asc_nulls_last()
        return first_row_first(rows, at, by_value)

    def prepared(self, batch: DataFrame, batch_time: Column, batch_id: Column) -> tuple[list[str], DataFrame]:
        """The batch's columns, and its rows with the hash, the record's date (`date_column`, or
        `batch_time`; a numeric `date_column` stays a number), `batch_id`, the delete flag and
        the provenance that orders duplicates."""
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        cfg = self.config
        require_columns(batch, cfg.keys, "key column(s)")
        for name, column in (
            ("date_column", cfg.date_column),
            ("delete.column", cfg.delete.column if cfg.delete else None),
            ("truncate.column", cfg.truncate.column if cfg.truncate else None),
            ("dedupe.by", cfg.dedupe.by if isinstance(cfg.dedupe, DedupeBy) else None),
        ):
            if column:
                require_columns(batch, [column], name)
        sk = cfg.surrogate_key
        own = {sk.column, sk.inferred_column} if sk else set()
        own |= {*cfg.drop_columns, *([cfg.soft_delete_column] if cfg.soft_delete_column else [])}
        columns = [c for c in data_columns(batch) if c not in own]
        hashed = [
            c
            for c in columns
            if c not in cfg.keys
            and c not in cfg.exclude_from_cdc
            and c != cfg.date_column
            and c != (cfg.delete.column if cfg.delete else None)
            and c != (cfg.truncate.column if cfg.truncate else None)
        ]
        dedupe = [F.col(quote(cfg.dedupe.by)).alias(DEDUPE)] if isinstance(cfg.dedupe, DedupeBy) else []
        record_date = batch_time.cast("timestamp")
        if cfg.date_column:
            date = F.col(quote(cfg.date_column))
            kind = batch.schema[cfg.date_column].dataType
            # a sequence number orders as itself (Databricks' sequence_by, Hudi's ordering field)
            if isinstance(kind, T.IntegralType):
                record_date = date.cast("long")
            elif isinstance(kind, T.NumericType):
                record_date = date.cast("double")
            else:
                record_date = try_to_timestamp(date)
        rows = batch.select(
            *[F.col(quote(c)) for c in columns],
            hashdiff(hashed, batch.schema).alias(HASH_COLUMN),
            record_date.alias(UPDATED_AT_COLUMN),
            batch_id.alias(BATCH_ID_COLUMN),
            delete_flag(cfg.delete).alias(DELETE_FLAG),
            *([delete_flag(cfg.truncate).alias(TRUNCATE_FLAG)] if cfg.truncate else []),
            F.col(FILE_COLUMN),
            F.col(RECORD_COLUMN),
            *([F.col(SEQ_COLUMN)] if SEQ_COLUMN in batch.columns else []),
            *dedupe,
        )
        return columns, rows

    def stage_group(self, ctx: StageContext, batch: DataFrame, members: list[Member]) -> GroupChange:
        """Several pending batches in one change set (strategies/group.py): each key's rows are
        folded over the batches in order from its stored row, so every row gets the status it
        would get one batch at a time, and the commit writes each key's final state. Not with
        surrogate keys (their numbering follows the commits)."""
        return stage_key_group(self, ctx, batch, members)

    def skeleton_rows(self, ctx: StageContext, missing: DataFrame) -> DataFrame:
        """Target-shaped skeleton rows for natural keys the table lacks (surrogate.py)."""
        return skeleton_rows(ctx, self.config.keys, self.config.surrogate_key, missing)

    def write(self, ctx: StageContext, change: ChangeSet) -> None:
        from pyspark.sql import functions as F

        if change.judged:
            merge_judging(ctx, self.config, change)
            return
        columns = [c for c in change.rows.columns if c != STATUS_COLUMN]
        writes = sum(change.counts.get(code, 0) for code in WRITES)
        soft = self.config.soft_delete_column is not None
        if writes == 0 or not ctx.target_exists or appends(ctx, change):
            # A new table takes only inserts, and so does a batch of new keys alone. A batch that
            # changes nothing still commits (an empty append), so its id is in the lineage and it
            # is never applied again.
            inserts = change.rows.filter(F.col(STATUS_COLUMN).isin("N", "T")).select(*map(quote, columns))
            ctx.backend.append(ctx.table, inserts)
            return
        ctx.backend.merge(
            ctx.table,
            change.rows,
            MergeClauses(
                keys=list(self.config.keys),
                update_columns=columns,
                insert_columns=columns,
                update_when=f"s.{STATUS_COLUMN} IN ('C', 'D', 'R', 'E')"
                if soft
                else f"s.{STATUS_COLUMN} = 'C'",
                delete_when=None if soft else f"s.{STATUS_COLUMN} IN ('D', 'R', 'E')",
                insert_when=f"s.{STATUS_COLUMN} IN ('N', 'T')",
                source_rows=writes,
                target_condition=range_condition(change.key_range, "t") if change.key_range else None,
            ),
        )
