"""Rows computed once: a batch, a change set, the versions a batch touches, checkpointed so that
every later step sees the same rows, with counts taken by the same pass.

Checkpoints are released at the end of the work that made them (lakehouse/checkpoints.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lakefresh.lakehouse.checkpoints import held
from lakefresh.lakehouse.connect import is_connect
from lakefresh.lakehouse.sql import quote, sql_literal

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


def materialize_observing(
    df: DataFrame, aggregates: dict[str, Column | str]
) -> tuple[DataFrame, dict[str, Any]]:
    """`materialize`, and aggregates of its rows computed by the same job (an observation of
    the pass that materializes, not a job of its own). An aggregate is a Column or SQL text:
    the text is one round trip to the JVM, where each call of a Column chain is one."""
    rows, found, _ = _checkpoint(df, aggregates)
    return rows, found


def _named(name: str, aggregate: Column | str) -> Column:
    from pyspark.sql import functions as F

    return F.expr(f"{aggregate} AS {quote(name)}") if isinstance(aggregate, str) else aggregate.alias(name)


def _checkpoint(df: DataFrame, aggregates: dict[str, Column | str]) -> tuple[DataFrame, dict[str, Any], int]:
    """The rows checkpointed, the aggregates observed, and the number of rows.

    Few rows (a small batch, its change set) come back as one partition: Spark then plans what
    groups or ranks them by key (a batch's duplicates, its distinct keys, a change set's window),
    or joins them with other rows in one partition, without a shuffle, a stage less each. A
    checkpoint keeps the partitioning its plan reports; a coalesce into one partition reports a
    single partition, and reads the checkpoint's blocks in one task, without a shuffle. More rows
    keep the partitioning of their plan."""
    from pyspark.sql import Observation

    assert _ROWS not in aggregates, _ROWS
    seen = Observation()
    observed = [_named(name, a) for name, a in {**aggregates, _ROWS: "count(1)"}.items()]
    if is_connect(df.sparkSession):  # a Connect checkpoint reports no observed metrics: a
        rows = held(df.localCheckpoint(eager=True))  # second pass, over the checkpoint's blocks
        found = rows.agg(*observed).first().asDict()  # type: ignore[union-attr]
    else:
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

    aggregates: dict[str, Column | str] = {**_count_aggregates(code, codes, owner, superseding)}
    aggregates |= {f"also_{n}": F.count(F.when(c, F.lit(1))) for n, c in (also or {}).items()}
    rows, found = materialize_observing(df, aggregates)
    counts, superseded = _read_counts(rows, found, code, codes, owner, superseding)
    return rows, counts, superseded, {n: int(found[f"also_{n}"] or 0) for n in also or {}}


def counts_with_superseded(
    df: DataFrame, code: str, codes: tuple[str, ...], owner: str, superseding: tuple[str, ...]
) -> tuple[dict[str, int], dict[str, int]]:
    """What `materialize_with_counts` counts, from a pass that keeps no row (a count, which the
    counts are an observation of: no aggregate's shuffle by code) for a change set that is not
    materialized (strategies/key/merge.py). Not Spark's `noop` sink: Delta cannot plan a
    deletion-vector table's scan under that write ("non-pinned table snapshot")."""
    from pyspark.sql import Observation

    seen = Observation()
    counted = df.select(code, owner)
    aggregates = _count_aggregates(code, codes, owner, superseding)
    observed = counted.observe(seen, *(_named(name, a) for name, a in aggregates.items()))
    observed.count()
    return _read_counts(counted, dict(seen.get), code, codes, owner, superseding)


def _among(column: str, values: tuple[str, ...]) -> str:
    return f"{quote(column)} IN ({', '.join(sql_literal(v) for v in values)})" if values else "FALSE"


def _supersedes(code: str, owner: str, superseding: tuple[str, ...]) -> str:
    """SQL: the row rewrites or removes a stored row that a batch (`owner`) wrote."""
    return f"{_among(code, superseding)} AND {quote(owner)} IS NOT NULL"


def _count_aggregates(
    code: str, codes: tuple[str, ...], owner: str, superseding: tuple[str, ...]
) -> dict[str, str]:
    """The aggregates `_read_counts` reads, as SQL text (`_named`)."""
    c, o, supersedes = quote(code), quote(owner), _supersedes(code, owner, superseding)
    aggregates = {f"code_{v}": f"count(CASE WHEN {c} = {sql_literal(v)} THEN 1 END)" for v in codes}
    aggregates["_other"] = f"count(CASE WHEN {c} IS NULL OR NOT {_among(code, codes)} THEN 1 END)"
    aggregates["_superseding"] = f"count(CASE WHEN {supersedes} THEN 1 END)"
    aggregates["_first_owner"] = f"min(CASE WHEN {supersedes} THEN {o} END)"
    aggregates["_last_owner"] = f"max(CASE WHEN {supersedes} THEN {o} END)"
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
    supersedes = F.expr(_supersedes(code, owner, superseding))
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
