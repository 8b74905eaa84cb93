"""Rows computed once: a batch, a change set, the versions a batch touches, checkpointed so that
every later step sees the same rows, with counts taken by the same pass.

Checkpoints are released at the end of the work that made them (lakehouse/checkpoints.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lakefresh.lakehouse.checkpoints import held

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

# Rows up to this many, materialized, are said to be in one partition (`_checkpoint`)
ONE_PARTITION_ROWS = 100_000
_ROWS = "_lf_materialized_rows"


def materialize(df: DataFrame) -> DataFrame:
    """Compute once and cut the lineage, so that later steps (a MERGE reads its source more than
    once) see exactly the same rows. Few rows come back as one partition (see
    `_checkpoint`)."""
    return materialize_sized(df)[0]


def materialize_sized(df: DataFrame) -> tuple[DataFrame, int]:
    """`materialize`, and how many rows it holds, counted by the same job."""
    rows, _, count = _checkpoint(df, {})
    return rows, count


def materialize_observing(df: DataFrame, aggregates: dict[str, Column]) -> tuple[DataFrame, dict[str, Any]]:
    """`materialize`, and aggregates of its rows computed by the same job (an observation of
    the pass that materializes, not a job of its own)."""
    rows, found, _ = _checkpoint(df, aggregates)
    return rows, found


def _checkpoint(df: DataFrame, aggregates: dict[str, Column]) -> tuple[DataFrame, dict[str, Any], int]:
    """The rows checkpointed, the aggregates observed, and the number of rows.

    Few rows (a small batch, its change set) come back as one partition: Spark then plans what
    groups or ranks them by key (a batch's duplicates, its distinct keys, a change set's window),
    or joins them with other rows in one partition, without a shuffle, a stage less each. A
    checkpoint keeps the partitioning its plan reports; a coalesce into one partition reports a
    single partition, and reads the checkpoint's blocks in one task, without a shuffle. More rows
    keep the partitioning of their plan."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    assert _ROWS not in aggregates, _ROWS
    seen = Observation()
    observed = [*(a.alias(name) for name, a in aggregates.items()), F.count(F.lit(1)).alias(_ROWS)]
    rows = held(df.observe(seen, *observed).localCheckpoint(eager=True))
    found = dict(seen.get)
    count = int(found.pop(_ROWS, 0) or 0)
    if count <= ONE_PARTITION_ROWS:
        rows = rows.coalesce(1)
    return rows, found, count


def materialize_counting(df: DataFrame, conditions: dict[str, Column]) -> tuple[DataFrame, dict[str, int]]:
    """`materialize`, and how many of its rows meet each condition, counted by the same job."""
    from pyspark.sql import functions as F

    rows, found = materialize_observing(df, {n: F.count(F.when(c, F.lit(1))) for n, c in conditions.items()})
    return rows, {name: int(value or 0) for name, value in found.items()}


def materialize_with_counts(
    df: DataFrame,
    code: str,
    codes: tuple[str, ...],
    owner: str,
    superseding: tuple[str, ...],
    also: dict[str, Column] | None = None,
) -> tuple[DataFrame, dict[str, int], dict[str, int], dict[str, int]]:
    """A change set materialized, with what `counts_and_superseded` says of it, counted by the
    same job: its rows per `code` (one of `codes`), the superseded rows per `owner`, and how many
    rows meet each condition of `also`. A second job only when the superseded rows belong to
    more than one batch."""
    from pyspark.sql import functions as F

    aggregates = _count_aggregates(code, codes, owner, superseding)
    aggregates |= {f"also_{n}": F.count(F.when(c, F.lit(1))) for n, c in (also or {}).items()}
    rows, found = materialize_observing(df, aggregates)
    counts, superseded = _read_counts(rows, found, code, codes, owner, superseding)
    return rows, counts, superseded, {n: int(found[f"also_{n}"] or 0) for n in also or {}}


def counts_with_superseded(
    df: DataFrame, code: str, codes: tuple[str, ...], owner: str, superseding: tuple[str, ...]
) -> tuple[dict[str, int], dict[str, int]]:
    """What `materialize_with_counts` counts, from a pass that keeps no row (a count, which the
    counts are an observation of: no aggregate's shuffle by code) for a change set that is not
    materialized (strategies/key_merge.py). Not Spark's `noop` sink: Delta cannot plan a
    deletion-vector table's scan under that write ("non-pinned table snapshot")."""
    from pyspark.sql import Observation

    seen = Observation()
    counted = df.select(code, owner)
    aggregates = _count_aggregates(code, codes, owner, superseding)
    observed = counted.observe(seen, *(a.alias(name) for name, a in aggregates.items()))
    observed.count()
    return _read_counts(counted, dict(seen.get), code, codes, owner, superseding)


def _count_aggregates(
    code: str, codes: tuple[str, ...], owner: str, superseding: tuple[str, ...]
) -> dict[str, Column]:
    from pyspark.sql import functions as F

    supersedes = F.col(code).isin(*superseding) & F.col(owner).isNotNull()
    aggregates = {f"code_{c}": F.count(F.when(F.col(code) == F.lit(c), F.lit(1))) for c in codes}
    aggregates["_other"] = F.count(F.when(~F.col(code).isin(*codes) | F.col(code).isNull(), F.lit(1)))
    aggregates["_superseding"] = F.count(F.when(supersedes, F.lit(1)))
    aggregates["_first_owner"] = F.min(F.when(supersedes, F.col(owner)))
    aggregates["_last_owner"] = F.max(F.when(supersedes, F.col(owner)))
    return aggregates


def _read_counts(
    rows: DataFrame,
    found: dict[str, Any],
    code: str,
    codes: tuple[str, ...],
    owner: str,
    superseding: tuple[str, ...],
) -> tuple[dict[str, int], dict[str, int]]:
    """The counts per code and the superseded rows per owner from `_count_aggregates`' values;
    a job over `rows` when they need a grouping (an unnamed code, several owners)."""
    from pyspark.sql import functions as F

    if found["_other"]:  # a code this caller did not name: counted the long way
        return counts_and_superseded(rows, code, owner, superseding)
    counts = {c: int(found[f"code_{c}"]) for c in codes if found[f"code_{c}"]}
    if not found["_superseding"]:
        return counts, {}
    if found["_first_owner"] == found["_last_owner"]:  # one batch owned them all
        return counts, {found["_first_owner"]: int(found["_superseding"])}
    supersedes = F.col(code).isin(*superseding) & F.col(owner).isNotNull()
    _, superseded = counts_and_superseded(rows.filter(supersedes), code, owner, superseding)
    return counts, superseded


def counts_and_superseded(
    df: DataFrame, code: str, owner: str, superseding: tuple[str, ...]
) -> tuple[dict[str, int], dict[str, int]]:
    """In one aggregate over a staged change set: its rows per `code`, and, for the codes that
    rewrite or remove a stored row, per batch that wrote that row (`owner`, NULL for rows no
    batch owns): the rows that batch no longer owns."""
    counts: dict[str, int] = {}
    superseded: dict[str, int] = {}
    for value, owned_by, n in df.groupBy(code, owner).count().collect():
        counts[value] = counts.get(value, 0) + n
        if value in superseding and owned_by is not None:
            superseded[owned_by] = superseded.get(owned_by, 0) + n
    return counts, superseded
