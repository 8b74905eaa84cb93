"""The common case of `scd2`, without recomputing history: a key with one event in the batch,
newer than every event stored for it.

For such a key the history recomputation (`scd2.py`, steps 2-5) can only do one of these, which
this module writes directly from the batch row and the key's current version:

| the key's state                  | batch row                 | code | versions written           |
| -------------------------------- | ------------------------- | ---- | -------------------------- |
| no stored row                    | a row                     | N    | a new current version      |
| a live current version           | tracked columns differ    | C    | close it at the row's time; |
|                                  |                           |      | a new current version      |
| a live current version           | only untracked ones       | T    | update it in place, record |
|                                  |                           |      | the event                  |
| a live current version           | nothing but the sequence  | U    | record the event (with     |
|                                  |                           |      | `resent_rows` skip or      |
|                                  |                           |      | derive: none)              |
| a live current version           | a delete                  | D    | close it, soft-deleted;    |
|                                  |                           |      | record the event           |

"Live" excludes skeleton rows (they absorbed no event; the recomputation replaces them) and the
deletion versions of `deletes: new_record` (the key is deleted: its return closes the deletion
version, flagged, and opens a version of its own). Every other key (several events in the batch,
an event at or before a stored one, a deleted or tombstoned key, a delete of an unknown key, a
full snapshot's retirement) takes the general path; both kinds of change go into the same single
MERGE. The rows written here are exactly those the recomputation would write: the same values,
hashes (recomputed from the values, as there), `_lf_events`, codes and merge operations, so the
choice of path never shows in the target. The setting `spark.lakefresh.scd2.fastPath=false`
turns it off.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from lakefresh.columns import BATCH_ID_COLUMN, HASH_COLUMN, STATUS_COLUMN
from lakefresh.lakehouse.literals import empty_rows
from lakefresh.lakehouse.sql import quote
from lakefresh.strategies.base import ChangeSet, StageContext, hashdiff
from lakefresh.strategies.materialize import materialize_counting
from lakefresh.strategies.scd2.events import DEL, SEEN, SEQ, SRC

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructType

    from lakefresh.config.strategies import Scd2StrategyConfig

FAST_PATH_SETTING = "spark.lakefresh.scd2.fastPath"
STORED = "_lf_s_"  # prefix of the current version's columns beside the batch row's
# the columns of a change row besides the versions' own (see Scd2Strategy.stage, step 5)
DIFF_EXTRA = ("_lf_mine", "_lf_their_batch", "_lf_their_sk", STATUS_COLUMN)
FAST_CODE = "_lf_code"  # the status code of the batch row a change row comes from
# the change status of a re-sent row that writes nothing (`resent_rows: skip | derive`): it stays among
# the change rows, which say which keys the fast path took and count its batch rows, but is
# not written (`Scd2Strategy.write`)
KEPT = "K"
CODES = ("N", "D", "C", "T", "U")


def fast_path_enabled(ctx: StageContext) -> bool:
    return str(ctx.backend.spark.conf.get(FAST_PATH_SETTING, "true")).lower() != "false"


@dataclass
class FastChanges:
    """The fast path's change rows. Materialized, they come with their keys and counts; not
    materialized (`counts` None), they carry FAST_CODE, and the pass that materializes them
    counts the batch rows per code with `FastChanges.code_counts`."""

    rows: DataFrame  # change rows: versions plus DIFF_EXTRA (and FAST_CODE, not materialized)
    keys: DataFrame | None = None  # the natural keys handled here
    counts: dict[str, int] | None = None  # batch rows by status code
    batch_rows: int = 0  # batch rows handled here (one per key)

    @staticmethod
    def first_row() -> Column:
        """Over change rows carrying FAST_CODE: the one row of each batch row (a key's rows are
        one version, or for C two: the new one is taken)."""
        from pyspark.sql import functions as F

        return (F.col(FAST_CODE) != F.lit("C")) | (F.col(STATUS_COLUMN) == F.lit("I"))

    @staticmethod
    def code_counts() -> dict[str, Column]:
        """Over change rows carrying FAST_CODE: the batch rows of each code."""
        from pyspark.sql import functions as F

        first = FastChanges.first_row()
        return {c: (F.col(FAST_CODE) == F.lit(c)) & first for c in CODES}


def fast_changes(
    config: Scd2StrategyConfig,
    new: DataFrame,
    stored: DataFrame | None,
    types: StructType,
    fields: list[str],
    tracked: list[str],
    data_hash: list[str],
    materialized: bool = True,
) -> FastChanges | None:
    """The change rows of the keys the fast path can take: materialized, or None when it takes
    none; not materialized, the rows the caller's own pass materializes and counts (when they
    go straight into the change set, as without surrogate keys). In named phases: the batch
    rows the fast path can take, each with its key's current version (`_candidates`), their
    status code (`_coded`), the versions each writes (`_written_rows`), then materialized and
    counted (`_materialized`).

    Args:
        config: the strategy's settings.
        new: the batch's events (its columns, SEQ, DEL, SRC, provenance).
        stored: the stored versions of every touched key, materialized; None: no target yet.
        types: the events' schema, for the type of every column (batch and stored, widened).
        fields: the versions' value columns, in order (all columns but the keys).
        tracked: the columns whose change opens a version.
        data_hash: the columns whose change counts as a change of the row (T, not U).
        materialized: whether the rows are materialized here.
    """
    if stored is None:  # a first load: as if the target held no row
        stored = _no_versions(new, config, types)
    sk = config.surrogate_key
    versions = _Versions(
        config,
        types,
        fields,
        batch_columns=list(new.columns),
        stored_values=[c for c in fields if c in stored.columns],
        stored_sk=bool(sk and sk.column in stored.columns),
    )
    candidates = _candidates(versions, new, stored)
    rows = _written_rows(_coded(candidates, versions, tracked, data_hash), versions)
    if not materialized:
        return FastChanges(rows)
    return _materialized(rows, list(config.keys))


@dataclass(frozen=True)
class _Versions:
    """How the fast path writes a version: the strategy's settings, the events' types, the
    versions' value columns, and which of them the batch rows and the stored versions hold."""

    config: Scd2StrategyConfig
    types: StructType
    fields: list[str]  # the versions' value columns, in order
    batch_columns: list[str]  # the batch events' columns
    stored_values: list[str]  # the value columns the stored versions hold
    stored_sk: bool  # whether the stored versions hold a surrogate key

    def seen_type(self) -> str:
        """The type of a version's absorbed events (`_lf_events`)."""
        return f"array<struct<seq:{self.types[SEQ].dataType.simpleString()},del:boolean>>"

    def event(self) -> Column:
        """The batch row's event, as a version records it."""
        from pyspark.sql import functions as F

        return F.struct(F.col(SEQ).cast(self.types[SEQ].dataType).alias("seq"), F.col(DEL).alias("del"))

    def batch_value(self, c: str) -> Column:
        """Column `c` of the batch row, in its widened type (NULL where the batch lacks it)."""
        from pyspark.sql import functions as F

        kind = self.types[c].dataType
        return F.col(quote(c)).cast(kind) if c in self.batch_columns else F.lit(None).cast(kind)

    def stored_value(self, c: str) -> Column:
        """Column `c` of the key's current version, in its widened type (NULL where it lacks it)."""
        from pyspark.sql import functions as F

        kind = self.types[c].dataType
        return F.col(quote(STORED + c)).cast(kind) if c in self.stored_values else F.lit(None).cast(kind)

    def version(
        self,
        values: Callable[[str], Column],
        valid_from: Column,
        valid_to: Column,
        current_flag: Column,
        deleted: Column,
        row_hash: Column,
        events: Column,
        status: str,
    ) -> Column:
        """A change row: a version (its values taken by `values`) with DIFF_EXTRA, for its
        merge operation `status` (I inserts, U updates the current version)."""
        from pyspark.sql import functions as F

        cfg = self.config
        sk = cfg.surrogate_key
        seq_type = self.types[SEQ].dataType
        stored_sk = F.col(quote(STORED + sk.column)) if sk and self.stored_sk else None
        return F.struct(
            *[F.col(quote(k)) for k in cfg.keys],
            *[values(c).alias(c) for c in self.fields],
            valid_from.cast(seq_type).alias(cfg.valid_from_column),
            valid_to.cast(seq_type).alias(cfg.valid_to_column),
            current_flag.alias(cfg.is_current_column),
            *([deleted.alias(cfg.soft_delete_column)] if cfg.soft_delete_column else []),
            row_hash.alias(HASH_COLUMN),
            events.cast(self.seen_type()).alias(SEEN),
            F.lit(True).alias("_lf_mine"),
            (F.lit(None).cast("string") if status == "I" else F.col(STORED + BATCH_ID_COLUMN)).alias(
                "_lf_their_batch"
            ),
            (stored_sk if status == "U" and stored_sk is not None else F.lit(None).cast("long")).alias(
                "_lf_their_sk"
            ),
            F.lit(status).alias(STATUS_COLUMN),
        )


def _unknown() -> Column:
    """Over `_candidates`: the key has no stored row at all."""
    from pyspark.sql import functions as F

    return F.col("_lf_live").isNull()


def _candidates(versions: _Versions, new: DataFrame, stored: DataFrame) -> DataFrame:
    """The batch rows the fast path takes, each with its key's current version (columns prefixed
    STORED): the key's one event in the batch, sent by the batch (a full snapshot's retirements
    are not), of a key with no stored row (not a delete) or with one live current version, all
    of whose events are older."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    cfg = versions.config
    keys = list(cfg.keys)
    vf, cur, sk = cfg.valid_from_column, cfg.is_current_column, cfg.surrogate_key
    by_key = [F.col(quote(k)) for k in keys]
    alone = new.withColumn("_lf_n", F.count(F.lit(1)).over(Window.partitionBy(*by_key)))
    alone = alone.filter((F.col("_lf_n") == 1) & (F.col(SRC) == 1)).drop("_lf_n")
    skeleton = (
        F.coalesce(F.col(quote(sk.inferred_column)), F.lit(False))
        if sk and sk.inferred_column in stored.columns
        else F.lit(False)
    )
    deletion = (  # a current deletion version (deletes: new_record): the key is deleted
        F.coalesce(F.col(quote(cfg.soft_delete_column)), F.lit(False))
        if cfg.soft_delete_column and cfg.soft_delete_column in stored.columns
        else F.lit(False)
    )
    live = F.col(quote(cur)) & ~skeleton & ~deletion
    summary = stored.groupBy(*by_key).agg(
        F.max(F.array_max(F.col(f"{SEEN}.seq"))).alias("_lf_stored_max"),
        F.count(F.when(live, F.lit(1))).alias("_lf_live"),
    )
    own = [vf, SEEN, BATCH_ID_COLUMN] + ([sk.column] if sk and versions.stored_sk else [])
    current = stored.filter(live).select(
        *by_key, *[F.col(quote(c)).alias(STORED + c) for c in [*versions.stored_values, *own]]
    )
    joined = alone.join(summary, on=keys, how="left").join(current, on=keys, how="left")
    newer = (
        (F.col("_lf_live") == 1)
        & F.col(STORED + vf).isNotNull()
        & F.col("_lf_stored_max").isNotNull()
        & (F.col(SEQ) > F.col("_lf_stored_max"))
    )
    return joined.filter((_unknown() & ~F.col(DEL)) | newer)


def _coded(candidates: DataFrame, versions: _Versions, tracked: list[str], data_hash: list[str]) -> DataFrame:
    """The candidates with the hashes of their values and their current version's (tracked, and
    of the row), and their status code (FAST_CODE: the module's table)."""
    from pyspark.sql import functions as F

    types = versions.types
    hashes = candidates.select(
        "*",
        hashdiff(tracked, types, versions.batch_value).alias("_lf_new_hash"),
        hashdiff(data_hash, types, versions.batch_value).alias("_lf_new_row"),
        hashdiff(tracked, types, versions.stored_value).alias("_lf_old_hash"),
        hashdiff(data_hash, types, versions.stored_value).alias("_lf_old_row"),
    )
    code = (
        F.when(_unknown(), F.lit("N"))
        .when(F.col(DEL), F.lit("D"))
        .when(F.col("_lf_new_hash") != F.col("_lf_old_hash"), F.lit("C"))
        .when(F.col("_lf_new_row") != F.col("_lf_old_row"), F.lit("T"))
        .otherwise(F.lit("U"))
    )
    return hashes.withColumn(FAST_CODE, code)


def _written_rows(coded: DataFrame, versions: _Versions) -> DataFrame:
    """The change rows of the coded batch rows, carrying FAST_CODE: N opens a version; C closes
    the current one and opens one; D closes it, soft-deleted; T and U update it in place (U:
    only its events, KEPT with `resent_rows: skip`)."""
    from pyspark.sql import functions as F

    vf = versions.config.valid_from_column
    code_is = F.col(FAST_CODE)
    no_time = F.lit(None)
    event = versions.event()
    recorded = F.concat(F.col(STORED + SEEN).cast(versions.seen_type()), F.array(event))
    # a new current version: N, and C's second half
    opened = versions.version(
        versions.batch_value,
        F.col(SEQ),
        no_time,
        F.lit(True),
        F.lit(False),
        F.col("_lf_new_hash"),
        F.array(event),
        "I",
    )
    # the current version closed by a change or a delete (which it records)
    closed = versions.version(
        versions.stored_value,
        F.col(STORED + vf),
        F.col(SEQ),
        F.lit(False),
        code_is == "D",
        F.col("_lf_old_hash"),
        F.when(code_is == "D", recorded).otherwise(F.col(STORED + SEEN)),
        "U",
    )
    # the current version takes the row's values and records its event
    absorbed = versions.version(
        versions.batch_value,
        F.col(STORED + vf),
        no_time,
        F.lit(True),
        F.lit(False),
        F.col("_lf_new_hash"),
        recorded,
        "U",
    )
    # every batch row's versions in one pass over it (a union of three filters would compute
    # the joins above three times)
    written = F.array(
        F.when(code_is.isin("N", "C"), opened),
        F.when(code_is.isin("C", "D"), closed),
        F.when(code_is.isin("T", "U"), absorbed),
    )
    rows = coded.select(F.explode(written).alias("_lf_v"), code_is).filter(F.col("_lf_v").isNotNull())
    return resent_kept(rows.select("_lf_v.*", FAST_CODE), versions.config.resent_rows in ("skip", "derive"))


def _materialized(rows: DataFrame, keys: list[str]) -> FastChanges | None:
    """The change rows materialized, counted per code by the same pass, with the keys they take;
    None when they take none."""
    from pyspark.sql import functions as F

    rows, found = materialize_counting(rows, FastChanges.code_counts())
    counts = {c: n for c, n in found.items() if n}
    if not counts:
        return None
    return FastChanges(
        rows.drop(FAST_CODE),
        # fresh attributes: a checkpoint keeps its input's, which a join with that input rejects
        keys=rows.filter(FastChanges.first_row()).select(*[F.col(quote(k)).alias(k) for k in keys]),
        counts=counts,
        batch_rows=sum(counts.values()),
    )


def resent_kept(rows: DataFrame, skip: bool) -> DataFrame:
    """Over change rows carrying FAST_CODE: with `resent_rows: skip` or `derive`, the row of a
    re-sent row (U) is KEPT: its version stays as stored, its event unrecorded (with `derive`,
    a batch that changes nothing records it on one version: implied.py's `witness`)."""
    from pyspark.sql import functions as F

    if not skip:
        return rows
    kept = F.when(F.col(FAST_CODE) == F.lit("U"), F.lit(KEPT)).otherwise(F.col(STATUS_COLUMN))
    return rows.withColumn(STATUS_COLUMN, kept)


def together(fast: ChangeSet, general: ChangeSet) -> ChangeSet:
    """The fast path's change set and the recomputation's, for keys of their own, as one."""
    superseded = dict(fast.superseded or {})
    for batch, n in (general.superseded or {}).items():
        superseded[batch] = superseded.get(batch, 0) + n
    return ChangeSet(
        rows=fast.rows.unionByName(general.rows),
        expected_delta=(fast.expected_delta or 0) + (general.expected_delta or 0),
        written=fast.written + general.written,
        superseded=superseded,
        rewrites=(fast.rewrites or 0) + (general.rewrites or 0),
    )


def _no_versions(new: DataFrame, config: Scd2StrategyConfig, types: StructType) -> DataFrame:
    """An empty set of stored versions, with the columns the fast path reads."""
    from pyspark.sql.types import ArrayType, BooleanType, StringType, StructField, StructType

    seq = types[SEQ].dataType
    event = StructType([StructField("seq", seq), StructField("del", BooleanType())])
    schema = StructType(
        [
            *[new.schema[k] for k in config.keys],
            StructField(config.valid_from_column, seq),
            StructField(config.is_current_column, BooleanType()),
            StructField(SEEN, ArrayType(event)),
            StructField(BATCH_ID_COLUMN, StringType()),
        ]
    )
    return empty_rows(new.sparkSession, schema)
