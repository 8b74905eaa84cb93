"""The read step, shared by the runner and the verbs that apply batches again (reset, unload,
reload): a batch is read once from its source, transformed, checked row by row, split into the
rows to load and the rows to quarantine, and joined to its lookups.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from lakefresh.columns import FILE_COLUMN, LINE_COLUMN, RAW_COLUMN, REASON_COLUMN, RECORD_COLUMN, SEQ_COLUMN
from lakefresh.errors import BatchRefused
from lakefresh.lakehouse.sql import quote
from lakefresh.run.bookkeeping import refusal
from lakefresh.run.lookups import with_lookups
from lakefresh.run.rules import apply_row_rules
from lakefresh.run.transform import transformed
from lakefresh.sources.base import ReadsMany
from lakefresh.strategies.base import StageContext
from lakefresh.strategies.materialize import materialize, materialize_observing
from lakefresh.strategies.pruning import KeyPruning, KeyRange, observed_range

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from lakefresh.config.models import PipelineConfig, TableConfig
    from lakefresh.lakehouse.backend import TableBackend
    from lakefresh.sources import BatchRef, Source
    from lakefresh.strategies import Strategy


@dataclass
class ReadRows:
    """A batch read: the rows to load, the rows to quarantine and how many, lookup skeletons."""

    good: DataFrame
    bad: DataFrame
    quarantined: int
    skeletons: int = 0
    rules: dict[str, int] = field(default_factory=dict)  # row rules: violations of each
    loaded: int | None = None  # rows in `good`, counted with the quarantined ones (None: unknown)
    key_range: KeyRange | None = None  # the range of `good`'s pruning key (strategies/pruning.py)
    batch_time: datetime | None = None  # the batch's time, when its rows say it (batch_time.column)
    # `good` is one materialized pass, filtered by its own check alone: every later pass over it
    # sees the same rows (not after row rules or lookups, which evaluate more SQL)
    settled: bool = False

    def stage_context(
        self, backend: TableBackend, table: str, batch_id: str, batch_time: datetime, exists: bool
    ) -> StageContext:
        """The stage step's context for these rows, with what their read counted and observed."""
        ctx = StageContext(
            backend,
            table,
            batch_id,
            batch_time,
            exists,
            self.loaded,
            key_range=self.key_range,
            settled=self.settled,
        )
        ctx.quarantined = self.bad if self.quarantined else None  # see StageContext
        return ctx

    def quarantine_rows(self) -> DataFrame:
        """The bad rows in the quarantine table's shape."""
        from pyspark.sql import functions as F

        return self.bad.select(
            F.col(FILE_COLUMN).alias("source_file"),
            F.col(LINE_COLUMN).alias("line"),
            F.col(RECORD_COLUMN).alias("record"),
            F.col(REASON_COLUMN).alias("reason"),
            F.col(RAW_COLUMN).alias("raw"),
        )


def read_batch(
    config: PipelineConfig,
    backend: TableBackend,
    table: TableConfig,
    strategy: Strategy,
    source: Source,
    ref: BatchRef,
    target_schema: Any,
) -> ReadRows:
    """Read the batch once (and transform it); BatchRefused when it has bad rows and its table
    refuses such batches (`bad_rows: refuse`), or more than its `max_bad_rows`."""
    read = source.read(ref, target_schema if table.transform is None else None)
    rows = read.rows
    if table.transform is not None:
        rows = transformed(config, backend, table, rows)
    out = checked(table, strategy, rows)
    if out.quarantined and table.bad_rows == "refuse":
        raise BatchRefused(refusal(ref.batch_id, table.name, out.bad, out.quarantined))
    if out.quarantined:
        loaded = out.good.count() if out.loaded is None else out.loaded
        if why := table.too_many_bad_rows(out.quarantined, loaded + out.quarantined):
            raise BatchRefused(refusal(ref.batch_id, table.name, out.bad, out.quarantined, why))
    out.batch_time = read.batch_time(out.good)
    if table.lookups:
        batch_time = out.batch_time or ref.batch_time
        out.good, out.skeletons = with_lookups(config, backend, table, out.good, batch_time)
        out.loaded = None  # counted again by whoever needs it
        out.key_range = None
        out.settled = False
    return out


def read_group(
    source: Source, table: TableConfig, strategy: Strategy, refs: list[BatchRef], target_schema: Any
) -> ReadRows | None:
    """Several batches of a backlog read as one (backlog.py), each row with its batch's index in
    the group (SEQ_COLUMN); None when they cannot be one: their columns differ."""
    from pyspark.sql import functions as F

    rows = source.read_many(refs, target_schema) if isinstance(source, ReadsMany) else None
    if rows is None:
        reads = [source.read(ref, target_schema).rows for ref in refs]
        if any(r.schema != reads[0].schema for r in reads[1:]):
            return None
        rows = reads[0].withColumn(SEQ_COLUMN, F.lit(0))
        for n, more in enumerate(reads[1:], start=1):
            rows = rows.unionByName(more.withColumn(SEQ_COLUMN, F.lit(n)))
    return checked(table, strategy, rows)


def checked(table: TableConfig, strategy: Strategy, rows: DataFrame) -> ReadRows:
    """Rows read, checked: split into the rows to load and those to quarantine (with reasons)."""
    from pyspark.sql import functions as F

    problems = [F.when(c, F.lit(reason)) for c, reason in strategy.row_problems(rows)]
    if problems:
        # a row the source rejected is reported for that root cause alone (a value that did
        # not parse also leaves its key NULL: saying so again would only be noise)
        derived = F.concat_ws("; ", *problems)
        reason = F.coalesce(F.col(REASON_COLUMN), F.when(derived != "", derived))
        rows = rows.withColumn(REASON_COLUMN, reason)
    row_rules = any(r.row is not None for r in table.rules)
    if row_rules:  # row rules may quarantine more rows
        rows, rules = apply_row_rules(table, materialize(rows))
        # the rows to load and those to quarantine, counted in one job (strategies need the first)
        is_good = rows[REASON_COLUMN].isNull()
        found = {bool(r[0]): int(r[1]) for r in rows.groupBy(is_good).count().collect()}
        split = {"good": found.get(True, 0), "bad": found.get(False, 0)}
        key_range = None
    else:  # counted by the pass that materializes them, which also sees the key range
        # a record's text (the JSON of its values, for Parquet and typed rows) only for the rows
        # to quarantine: a 100,000-row Parquet batch materialized in 0.43 s instead of 0.65 s
        # (bench/README.md, "The read keeps a record's text for its bad rows only")
        rows = rows.withColumn(RAW_COLUMN, F.when(F.col(REASON_COLUMN).isNotNull(), F.col(RAW_COLUMN)))
        rows, split, key_range = materialize_observed(strategy, rows)
        rules = {}
    bad = rows.filter(rows[REASON_COLUMN].isNotNull())
    good = rows.filter(rows[REASON_COLUMN].isNull()).drop(REASON_COLUMN, RAW_COLUMN)
    return ReadRows(
        good, bad, split["bad"], rules=rules, loaded=split["good"], key_range=key_range, settled=not row_rules
    )


def materialize_observed(
    strategy: Strategy, rows: DataFrame
) -> tuple[DataFrame, dict[str, int], KeyRange | None]:
    """The checked rows materialized, with the rows to load and to quarantine counted, and the
    range of the strategy's pruning key among the rows to load (strategies/pruning.py), all
    observed by the one pass that materializes them."""
    is_good = f"{quote(REASON_COLUMN)} IS NULL"
    aggregates: dict[str, Column | str] = {
        "good": f"count(CASE WHEN {is_good} THEN 1 END)",
        "bad": f"count(CASE WHEN NOT {is_good} THEN 1 END)",
    }
    key = strategy.pruning_key(rows.schema) if isinstance(strategy, KeyPruning) else None
    if key is not None:  # the strategy names a key `prunable` says can be bounded
        aggregates["lowest"] = f"min(CASE WHEN {is_good} THEN {quote(key)} END)"
        aggregates["highest"] = f"max(CASE WHEN {is_good} THEN {quote(key)} END)"
    rows, found = materialize_observing(rows, aggregates)
    split = {"good": int(found["good"] or 0), "bad": int(found["bad"] or 0)}
    key_range = observed_range(key, found["lowest"], found["highest"]) if key is not None else None
    return rows, split, key_range
