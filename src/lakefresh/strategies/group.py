"""Backlogs in one commit: what a strategy returns when it stages several pending batches of one
table at once (run/backlog.py), and the group staging of the strategies that can.

A group's change set must leave the target exactly as applying its batches one by one would, and
give every batch the counts it would have had. `append` proves it trivially (each batch's rows are
appended with its id); `key` folds each key's rows over the group in batch order, from the stored
row, with the same status rules as one batch (key/strategy.py): the fold's state is what the target would
hold for the key after each batch, so each row's status is the one it would get one by one, and
the commit writes each key's final state. Both are checked against one-by-one runs by
`tests/spark/test_backlog.py` (a property test over random backlogs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lakefresh.columns import BATCH_ID_COLUMN, HASH_COLUMN, SEQ_COLUMN, STATUS_COLUMN, UPDATED_AT_COLUMN
from lakefresh.lakehouse.functions import utc_timestamp
from lakefresh.lakehouse.sql import quote
from lakefresh.strategies.base import (
    ChangeSet,
    StageContext,
    broadcast_if_small,
    count_by,
    data_columns,
    raise_stored_duplicates,
)
from lakefresh.strategies.materialize import materialize, materialize_sized

if TYPE_CHECKING:
    from datetime import datetime

    from pyspark.sql import Column, DataFrame


@dataclass(frozen=True)
class Member:
    batch_id: str
    batch_time: datetime


@dataclass
class GroupChange:
    """A group's one change set, and what each of its batches would have counted alone."""

    change: ChangeSet  # the commit: its rows, the audit's prediction
    counts: dict[str, dict[str, int]] = field(default_factory=dict)  # batch id -> status counts
    records: dict[str, int] = field(default_factory=dict)  # batch id -> rows read (with duplicates)
    duplicates: dict[str, int] = field(default_factory=dict)
    written: dict[str, int] = field(default_factory=dict)  # batch id -> rows it wrote
    # rows of any batch (earlier, or of the group) that the group's batches rewrote or removed
    superseded: dict[str, int] = field(default_factory=dict)


def member_column(members: list[Member], value: str = "batch_id") -> Column:
    """Per row of a group's read, its member's batch id (or batch time)."""
    from pyspark.sql import functions as F

    if value == "batch_time":
        values = [utc_timestamp(m.batch_time) for m in members]
    else:
        values = [F.lit(getattr(m, value)) for m in members]
    return F.element_at(F.array(*values), F.col(SEQ_COLUMN) + 1)


def stage_append_group(ctx: StageContext, batch: DataFrame, members: list[Member]) -> GroupChange:
    """`append`: every row of every batch, with its batch's id."""
    from pyspark.sql import functions as F

    rows = materialize(
        batch.select(
            *[F.col(quote(c)) for c in data_columns(batch)],
            member_column(members).alias(BATCH_ID_COLUMN),
        )
    )
    per_batch = {r[0]: int(r[1]) for r in rows.groupBy(BATCH_ID_COLUMN).count().collect()}
    out = GroupChange(ChangeSet(rows=rows, superseded={}))
    for m in members:
        n = per_batch.get(m.batch_id, 0)
        out.counts[m.batch_id], out.records[m.batch_id], out.written[m.batch_id] = {"N": n}, n, n
        out.duplicates[m.batch_id] = 0
    total = sum(per_batch.values())
    out.change.counts, out.change.record_count = {"N": total}, total
    out.change.expected_delta = out.change.written = total
    return out


def fold_statuses(joined: DataFrame, keys: list[str]) -> DataFrame:
    """Per key, its candidate rows (one per batch, oldest batch first) folded from the stored row:
    one row per key with `steps` (each candidate's seq, status and the batch that owned the key's
    row before it) and the final state: `writer` (the seq whose row the key ends with, -1 for the
    stored row) and `final_exists`."""
    from pyspark.sql import functions as F

    candidate = F.struct(
        F.col(SEQ_COLUMN).alias("seq"),
        F.col(HASH_COLUMN).alias("hash"),
        F.col(UPDATED_AT_COLUMN).alias("at"),
        F.col("_lf_delete").alias("del"),
        F.col(BATCH_ID_COLUMN).alias("batch"),
    )
    grouped = joined.groupBy(*[quote(k) for k in keys]).agg(
        F.array_sort(F.collect_list(candidate)).alias("_lf_rows"),
        F.first("_lf_t_exists", ignorenulls=True).alias("_lf_t_exists"),
        F.first("_lf_t_hash", ignorenulls=True).alias("_lf_t_hash"),
        F.first("_lf_t_at", ignorenulls=True).alias("_lf_t_at"),
        F.first("_lf_t_batch", ignorenulls=True).alias("_lf_t_batch"),
    )
    start = F.struct(
        F.coalesce(F.col("_lf_t_exists"), F.lit(False)).alias("exists"),
        F.col("_lf_t_hash").alias("hash"),
        F.col("_lf_t_at").alias("at"),
        F.col("_lf_t_batch").alias("owner"),
        F.lit(-1).alias("writer"),
        F.array().cast("array<struct<seq:int,status:string,owner:string>>").alias("steps"),
    )

    folded = F.aggregate(F.col("_lf_rows"), start, _next_state)
    return grouped.select(
        *[F.col(quote(k)) for k in keys],
        folded["steps"].alias("_lf_steps"),
        folded["writer"].alias("_lf_writer"),
        folded["exists"].alias("_lf_final_exists"),
        F.coalesce(F.col("_lf_t_exists"), F.lit(False)).alias("_lf_stored"),
    )


def _next_state(acc: Column, x: Column) -> Column:
    """One step of `fold_statuses`: the key's state `acc` after one more candidate row `x`, its
    status by the rules of key/strategy.py's, against the state one-by-one would have stored
    by now, appended to `steps`."""
    from pyspark.sql import functions as F

    status = (
        F.when(~acc["exists"] & x["del"], F.lit("U"))
        .when(~acc["exists"], F.lit("N"))
        .when(x["at"] < acc["at"], F.lit("O"))
        .when(x["del"], F.lit("D"))
        .when(acc["hash"].isNull(), F.lit("C"))
        .when(x["hash"] != acc["hash"], F.lit("C"))
        .when(x["at"] > acc["at"], F.lit("S"))
        .otherwise(F.lit("U"))
    )
    writes, deletes = status.isin("N", "C"), status == "D"

    def pick(written: Column, deleted: Column, kept: Column) -> Column:
        return F.when(writes, written).when(deletes, deleted).otherwise(kept)

    return F.struct(
        pick(F.lit(True), F.lit(False), acc["exists"]).alias("exists"),
        pick(x["hash"], F.lit(None).cast("binary"), acc["hash"]).alias("hash"),
        pick(x["at"], F.lit(None).cast("timestamp"), acc["at"]).alias("at"),
        pick(x["batch"], F.lit(None).cast("string"), acc["owner"]).alias("owner"),
        pick(x["seq"], x["seq"], acc["writer"]).alias("writer"),
        F.concat(
            acc["steps"],
            F.array(F.struct(x["seq"].alias("seq"), status.alias("status"), acc["owner"].alias("owner"))),
        ).alias("steps"),
    )


def final_action(stored: Column, final_exists: Column, writer: Column) -> Column:
    """What the group's commit does to a key: N (insert), C (update), D (delete), or NULL."""
    from pyspark.sql import functions as F

    return (
        F.when(writer < 0, F.lit(None))
        .when(final_exists & stored, F.lit("C"))
        .when(final_exists, F.lit("N"))
        .when(stored, F.lit("D"))
    ).cast("string")


def group_counts(steps: DataFrame, members: list[Member]) -> GroupChange:
    """Per batch, its status counts, what it wrote, and the rows of any batch its rows superseded,
    from the exploded steps (`batch`, `status`, `owner` per candidate row)."""
    out = GroupChange(ChangeSet(rows=steps))  # rows replaced by the caller
    for m in members:
        out.counts[m.batch_id], out.written[m.batch_id], out.duplicates[m.batch_id] = {}, 0, 0
    for batch, status, owner, n in steps.groupBy("batch", "status", "owner").count().collect():
        n = int(n)
        if status == "dup":
            out.duplicates[batch] += n
            continue
        out.counts[batch][status] = out.counts[batch].get(status, 0) + n
        if status in ("N", "C"):
            out.written[batch] += n
        if status in ("C", "D") and owner is not None:
            out.superseded[owner] = out.superseded.get(owner, 0) + n
    for m in members:
        out.records[m.batch_id] = sum(out.counts[m.batch_id].values()) + out.duplicates[m.batch_id]
    return out


def stage_key_group(strategy: Any, ctx: StageContext, batch: DataFrame, members: list[Member]) -> GroupChange:
    """`key` (key/strategy.py's `stage_group`): each batch's duplicates are ranked as one batch's are,
    then each key's winning rows are joined with its stored row (`_against_stored`), folded over
    the batches (`fold_statuses`), counted per batch (`_counted_steps`), and the row each key ends
    with written (`_final_rows`)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    keys = list(strategy.config.keys)
    columns, rows = strategy.prepared(batch, member_column(members, "batch_time"), member_column(members))
    latest_first = Window.partitionBy(*[quote(k) for k in keys], F.col(SEQ_COLUMN)).orderBy(
        *strategy.winner_first(rows)
    )
    ranked, read = materialize_sized(rows.withColumn("_lf_rank", F.row_number().over(latest_first)))
    candidates = ranked.filter(F.col("_lf_rank") == 1)
    joined = _against_stored(ctx, candidates, keys, rows, read)
    folded = materialize(fold_statuses(joined, keys))
    out = _counted_steps(folded, ranked, members)
    if sum(out.records.values()) > read:  # a key stored twice joined its rows twice
        raise_stored_duplicates(ctx, keys, batch)
    written = _final_rows(
        candidates, folded, keys, [*columns, HASH_COLUMN, UPDATED_AT_COLUMN, BATCH_ID_COLUMN]
    )
    counts = count_by(written, STATUS_COLUMN)
    out.change = ChangeSet(
        rows=written,
        counts=counts,
        record_count=read,
        expected_delta=counts.get("N", 0) - counts.get("D", 0),
        superseded=out.superseded,
    )
    return out


def _against_stored(
    ctx: StageContext, candidates: DataFrame, keys: list[str], rows: DataFrame, read: int
) -> DataFrame:
    """The candidate rows, each with the stored row of its key (`_lf_t_*`: its hash, date,
    batch and whether it exists; NULL for a new key)."""
    from pyspark.sql import functions as F

    if not ctx.target_exists:
        kinds = {
            "_lf_t_hash": "binary",
            "_lf_t_at": rows.schema[UPDATED_AT_COLUMN].dataType.simpleString(),
            "_lf_t_batch": "string",
            "_lf_t_exists": "boolean",
        }
        return candidates.select("*", *[F.lit(None).cast(t).alias(n) for n, t in kinds.items()])
    stored_columns = {
        "_lf_t_hash": F.col(HASH_COLUMN),
        "_lf_t_at": F.col(UPDATED_AT_COLUMN),
        "_lf_t_batch": F.col(BATCH_ID_COLUMN),
        "_lf_t_exists": F.lit(True),
    }
    touched = broadcast_if_small(ctx, candidates.select(*[quote(k) for k in keys]).distinct(), read)
    stored = (
        ctx.target()
        .select(*[F.col(quote(k)) for k in keys], *[c.alias(n) for n, c in stored_columns.items()])
        .join(touched, on=keys, how="left_semi")
    )
    return candidates.join(stored, on=keys, how="left")


def _counted_steps(folded: DataFrame, ranked: DataFrame, members: list[Member]) -> GroupChange:
    """Each batch's counts (`group_counts`) from the folded keys' steps and the ranked rows that
    lost to another of their batch (`dup`)."""
    from pyspark.sql import functions as F

    ids = F.array(*[F.lit(m.batch_id) for m in members])
    steps = folded.select(F.explode("_lf_steps").alias("s")).select(
        F.element_at(ids, F.col("s.seq") + 1).alias("batch"),
        F.col("s.status").alias("status"),
        F.col("s.owner").alias("owner"),
    )
    dups = ranked.filter(F.col("_lf_rank") > 1).select(
        F.col(BATCH_ID_COLUMN).alias("batch"),
        F.lit("dup").alias("status"),
        F.lit(None).cast("string").alias("owner"),
    )
    return group_counts(steps.unionByName(dups), members)


def _final_rows(
    candidates: DataFrame, folded: DataFrame, keys: list[str], target_columns: list[str]
) -> DataFrame:
    """The commit's rows: per key the group changes, the candidate row it ends with, with what
    the commit does to the key (`final_action`), materialized."""
    from pyspark.sql import functions as F

    action = final_action(F.col("_lf_stored"), F.col("_lf_final_exists"), F.col("_lf_writer"))
    finals = folded.select(*[F.col(quote(k)) for k in keys], "_lf_writer", action.alias(STATUS_COLUMN))
    return materialize(
        candidates.join(finals.filter(F.col(STATUS_COLUMN).isNotNull()), on=keys)
        .filter(F.col(SEQ_COLUMN) == F.col("_lf_writer"))
        .select(*[F.col(quote(c)) for c in target_columns], F.col(STATUS_COLUMN))
    )
