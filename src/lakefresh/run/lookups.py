"""Dimension lookups for fact tables: natural keys -> surrogate keys, with skeleton rows.

For every lookup a fact table declares, before its batch is staged:

1. **Skeleton rows** (early-arriving facts). The natural keys the batch references that the
   dimension lacks get a skeleton row: the natural key, a surrogate key from the dimension's own
   generator, the lookup's `defaults`, other columns NULL, `is_inferred = true` (for scd2: a
   current version from the earliest `at` of the facts that need it). They are inserted in one
   MERGE that inserts only keys still missing, so running it twice, or for a batch that later
   fails, changes nothing more; it commits directly (not staged), since it is not a batch of the
   dimension. A dimension that does not exist yet is created from the skeleton rows' columns;
   its real batches add the rest. When the real record arrives, the dimension's strategy
   upgrades the row in place, keeping its surrogate key (see `key` and `scd2`).
2. **The lookup**: the fact rows get the surrogate key column. With a `key` dimension, the row
   of the natural key; with `scd2`, the version valid at the fact's `at` (or, without `at`, the
   current version, else the latest). A fact older than the key's first version takes that first
   version. A NULL natural key, or a missing one with `skeletons: false`, gets NULL.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lakefresh.lakehouse.backend import Layout, MergeClauses
from lakefresh.lakehouse.functions import utc_timestamp
from lakefresh.lakehouse.sql import quote
from lakefresh.strategies import Dimension, StageContext, make_strategy
from lakefresh.strategies.base import is_temporal, require_columns
from lakefresh.strategies.materialize import materialize, materialize_sized

if TYPE_CHECKING:
    from datetime import datetime

    from pyspark.sql import Column, DataFrame

    from lakefresh.config.models import LookupConfig, PipelineConfig, TableConfig
    from lakefresh.lakehouse.backend import TableBackend

AT = "_lf_at"


def with_lookups(
    config: PipelineConfig,
    backend: TableBackend,
    fact: TableConfig,
    facts: DataFrame,
    batch_time: datetime,
) -> tuple[DataFrame, int]:
    """The fact rows with every lookup's surrogate key column, after creating the skeleton rows
    they need; and how many skeleton rows were created."""
    created = 0
    for lookup in fact.lookups:
        require_columns(facts, [*lookup.keys, *([lookup.at] if lookup.at else [])], "lookup column(s)")
        if lookup.skeletons:
            created += add_skeletons(config, backend, lookup, facts, batch_time)
        facts = attach_surrogate_keys(config, backend, lookup, facts)
    return facts, created


def add_skeletons(
    config: PipelineConfig,
    backend: TableBackend,
    lookup: LookupConfig,
    facts: DataFrame,
    batch_time: datetime,
) -> int:
    from pyspark.sql import functions as F

    dimension = config.table(lookup.dimension)
    name = config.qualified(dimension)
    strategy = make_strategy(dimension.strategy)
    assert isinstance(strategy, Dimension)  # (validation: only dimension kinds are looked up)
    keys = dimension.strategy.key_columns()
    present = [F.col(quote(f)).isNotNull() for f in lookup.keys]
    by_key = facts.filter(_all(present)).groupBy(*[F.col(quote(f)).alias(k) for f, k in lookup.keys.items()])
    # the earliest `at` of the facts that need the key; the batch time where none has one (a
    # skeleton version with no start would never be matched when the real record comes)
    at = utc_timestamp(batch_time).cast("timestamp")
    if lookup.at:
        kind = facts.schema[lookup.at].dataType
        earliest = F.min(F.col(quote(lookup.at)))
        at = F.coalesce(earliest, at.cast(kind)) if is_temporal(kind) else earliest  # a number has no time
    wanted = by_key.agg(at.alias(AT))
    exists = backend.exists(name)
    if exists:
        wanted = wanted.join(backend.read(name).select(*map(quote, keys)), on=keys, how="left_anti")
    missing, created = materialize_sized(wanted)
    if created == 0:
        return 0
    for column, value in lookup.defaults.items():
        missing = missing.withColumn(column, F.lit(value))
    ctx = StageContext(backend, name, "skeletons", batch_time, exists)
    rows = strategy.skeleton_rows(ctx, missing)
    if not exists:
        layout = Layout(
            partition_by=tuple(_partitioning_within(dimension.partition_by, rows.columns)),
            properties={**config.defaults.table_properties, **dimension.properties},
        )
        backend.create(name, rows.schema, layout)
        backend.append(name, rows)
    else:
        rows = backend.align(name, rows)
        clauses = MergeClauses(keys=keys, update_columns=[], insert_columns=rows.columns)
        # the commit carries the high-water mark its keys were numbered from, as a batch's does
        backend.with_properties(name, ctx.commit_properties(), lambda: backend.merge(name, rows, clauses))
    return created


def attach_surrogate_keys(
    config: PipelineConfig, backend: TableBackend, lookup: LookupConfig, facts: DataFrame
) -> DataFrame:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    dimension = config.table(lookup.dimension)
    strategy = dimension.strategy
    sk = strategy.surrogate()
    assert sk is not None  # (validation: a dimension has a surrogate key)
    out = lookup.surrogate_key or sk.column
    name = config.qualified(dimension)
    facts = facts.drop(out)
    if not backend.exists(name):
        return facts.withColumn(out, F.lit(None).cast("long"))
    dim = backend.read(name)
    pairs = list(lookup.keys.items())
    renamed = [F.col(quote(k)).alias(f"_lf_lk{i}") for i, (_, k) in enumerate(pairs)]
    # by name, not `facts[...]`: the join below is of a DataFrame made from `facts` (Spark
    # Connect resolves a column only in the DataFrame it was taken from); the dimension's side
    # holds only the `_lf_lk` names, so no name is on both sides
    on = _all([F.col(quote(f)) == F.col(f"_lf_lk{i}") for i, (f, _) in enumerate(pairs)])
    validity = strategy.validity_columns()
    if validity is None:
        right = dim.select(*renamed, F.col(quote(sk.column)).alias(out))
        return facts.join(right, on=on, how="left").drop(*[f"_lf_lk{i}" for i in range(len(pairs))])
    vf, vt = validity
    versions = dim.filter(
        F.col(quote(vt)).isNull() | (F.col(quote(vt)) > F.col(quote(vf)))
    ).select(  # no tombstones
        *renamed,
        F.col(quote(vf)).alias("_lf_lk_from"),
        F.col(quote(vt)).alias("_lf_lk_to"),
        F.col(quote(sk.column)).alias(out),
    )
    numbered = materialize(facts.withColumn("_lf_fact_row", F.monotonically_increasing_id()))
    joined = numbered.join(versions, on=on, how="left")
    start, end = F.col("_lf_lk_from"), F.col("_lf_lk_to")
    if lookup.at:
        at = F.col(quote(lookup.at))
        began = start <= at
        preference = [
            (began & (end.isNull() | (at < end))).desc(),  # the version valid then
            F.when(began, start).desc_nulls_last(),  # else the latest that began before
            start.asc(),  # else the first
        ]
    else:
        preference = [end.isNull().desc(), start.desc()]
    best = Window.partitionBy("_lf_fact_row").orderBy(*preference)
    return (
        joined.withColumn("_lf_pick", F.row_number().over(best))
        .filter(F.col("_lf_pick") == 1)
        .drop("_lf_pick", "_lf_fact_row", "_lf_lk_from", "_lf_lk_to")
        .drop(*[f"_lf_lk{i}" for i in range(len(pairs))])
    )


def _all(conditions: list[Column]) -> Column:
    out = conditions[0]
    for c in conditions[1:]:
        out = out & c
    return out


def _partitioning_within(transforms: list[str], columns: list[str]) -> list[str]:
    """The dimension's partition transforms whose columns the skeleton rows have (a new
    dimension made from skeletons may lack the column it is partitioned by)."""
    known = {c.lower() for c in columns}
    kept = []
    for transform in transforms:
        names = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", transform)
        if names and names[-1].lower() in known:
            kept.append(transform)
    return kept
