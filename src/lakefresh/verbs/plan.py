"""`lakefresh plan PIPELINE [--table T]`: what the next run would take and do, written nowhere.

Per table, in the order a run takes them:

1. the table's assessment, as a run's would find it (run/assessment.py): the published batches the
   log does not know, which the run records first (`recovered`); whether a run would stop the
   table before taking a batch, and why: its target was dropped (`--full-refresh`), published
   batches a rollback removed (the run waits for `--rolled-back forget|reapply`), or a
   result-shaping configuration change since the last published batch (`changes`, each named
   as the run names it; `--accept-config-change` or `lakefresh reset` are the ways on);
2. the batches the run would take, in order, with their positions, batch times, files and bytes;
3. what the source holds but would not list yet, with the reason (a folder without its
   completion marker, a Synapse Link folder still being written);
4. the columns those batches would add to the target (schema evolution);
5. the commits they take (a backlog is applied in groups, run/backlog.py), and the upkeep due
   (compaction of a merge-on-read target holding many delete files, `after_runs`).

Read through Spark, or, where the tables and the sources allow it, without a JVM
(verbs/plan_reads.py: the same plan, read by another road; what that road cannot tell without
reading the batches' data it names in `unknown`).

Nothing is written: no control table is created, no load is opened (a `table_changes` table's
next load is listed, not read), the assessment is not settled.
The applied batches are the assessment's: those the target's lineage holds, those the log holds
as published, and those it says are never to be taken again.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from lakefresh.config.graph import dependency_order
from lakefresh.errors import LakefreshError
from lakefresh.lakehouse.failures import describe
from lakefresh.run import backlog
from lakefresh.run.assessment import Assessment, assess
from lakefresh.secrets import redact
from lakefresh.sources import ready
from lakefresh.state.control import LOADS_TABLE
from lakefresh.strategies import make_strategy
from lakefresh.verbs.maintain import compaction_due
from lakefresh.verbs.plan_reads import READ_BATCHES, BatchColumns, PlanReads, PlanTargets

if TYPE_CHECKING:
    from lakefresh.config.models import PipelineConfig, TableConfig
    from lakefresh.sources import BatchRef


@dataclass
class PlannedBatch:
    batch_id: str
    position: str
    batch_time: str  # ISO, UTC
    files: int
    bytes: int | None  # None when the source cannot say (a query, a change feed)


# why a batch the source holds is never taken again, by its status in the log
HELD = {
    "unloaded": "unloaded (a rollback or an unload took it out): lakefresh reload brings it back",
    "skipped": "skipped by the operator (run --skip-batch)",
    "forgotten": "forgotten after a rollback (run --rolled-back forget)",
}


@dataclass
class TablePlan:
    """What a run would do with one table."""

    table: str
    exists: bool
    take: list[PlannedBatch] = field(default_factory=list)
    waiting: list[dict[str, str]] = field(default_factory=list)  # {"name": ..., "reason": ...}
    new_columns: list[str] = field(default_factory=list)
    commits: int = 0  # target commits the batches take (a backlog's groups: run/backlog.py)
    maintenance: list[str] = field(default_factory=list)  # upkeep due, and when it happens
    config_changes: list[str] = field(default_factory=list)
    # published batches the log does not know, by how the run records them first: `staged` (its
    # attempt), `carried` (the record its commit carries), `lineage` (no counts), `verb` (a verb's)
    recovered: dict[str, str] = field(default_factory=dict)
    stops: str | None = None  # why a run would stop this table before taking a batch
    # batches its source still holds that no run takes again, and why (the operator's decision)
    held: list[dict[str, str]] = field(default_factory=list)
    error: str | None = None  # the source could not be listed
    # what this plan could not tell without reading the batches through Spark (plan without a
    # JVM: verbs/plan_reads.py), each with why
    unknown: list[str] = field(default_factory=list)

    @property
    def rows_bytes(self) -> int:
        return sum(b.bytes or 0 for b in self.take)


@dataclass
class PlanResult:
    tables: list[TablePlan] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def plan(reads: PlanReads, only: list[str] | None = None) -> PlanResult:
    """What the next run would do with every table (or with `only`), read through `reads`."""
    config, log = reads.config, reads.log()
    result = PlanResult()
    for table in dependency_order(config.tables):
        if only and table.name not in only:
            continue
        name = config.qualified(table)
        out = TablePlan(table.name, reads.targets.exists(name))
        try:
            found = assess(reads.targets, log, name, table)
            _plan_table(reads, found, out)
        except Exception as exc:  # reported on its table; the other tables are planned
            if not isinstance(exc, LakefreshError) and not reads.reports_failures:
                raise  # the road cannot read this: the caller takes the other one
            out.error = redact(str(exc)) if isinstance(exc, LakefreshError) else describe(exc)
        result.tables.append(out)
    return result


def _stop(found: Assessment) -> str | None:
    """Why a run would stop the table before taking a batch, whatever it lists (1.)."""
    if found.dropped:
        return (
            f"the table was dropped, but its log holds {found.dropped} published batch(es): run "
            "with --full-refresh"
        )
    if found.waiting:
        return (
            f"{len(found.waiting)} published batch(es) are no longer in its lineage (rolled back: "
            f"{', '.join(found.waiting[:5])}): run with --rolled-back forget|reapply"
        )
    return None


def _plan_table(reads: PlanReads, found: Assessment, out: TablePlan) -> None:
    config, table, name = reads.config, found.table, found.name
    out.stops = _stop(found)  # 1.
    out.recovered = {v.batch_id: "verb" for v in found.cut_verbs} | {
        r.batch_id: r.how for r in found.recovered
    }
    out.config_changes = list(found.config_changes)
    # a change feed's listing needs the loads log; its read opens a load
    feed = table.source.change_feed
    if feed and not reads.targets.exists(f"{config.catalog.control_namespace}.{LOADS_TABLE}"):
        out.waiting = [
            {"name": "first load", "reason": "the changes from the source's first version, when run"}
        ]
        return
    listed = reads.batches(table)
    pending, young = ready(listed, set(found.applied))  # 2.
    out.held = [
        {"name": r.batch_id, "reason": HELD[found.held[r.batch_id]]}
        for r in listed
        if r.batch_id in found.held
    ]
    out.take = [_planned(reads, ref) for ref in pending]
    if out.config_changes and pending and not out.stops:
        out.stops = (
            f"the configuration changed since batch {found.config_since} in ways that change "
            "results: run with --accept-config-change, or rebuild with lakefresh reset"
        )
    out.waiting = [{"name": n, "reason": r} for n, r in [*reads.waiting(table), *young]]  # 3.
    columns = BatchColumns()
    if out.exists and pending and not feed:  # 4.
        columns = reads.columns(table, name, pending)
        out.new_columns = columns.new
        out.unknown += [columns.unknown] if columns.unknown else []
    least, most = _commits(config, table, pending, out.exists, columns)  # 5.
    out.commits = least
    if most > least:
        out.unknown.append(
            f"the commits: {least} to {most}, as Spark types the new columns the batches bring "
            f"from their data ({READ_BATCHES})"
        )
    out.maintenance = _maintenance_due(config, reads.targets, table, out.exists, bool(pending))


def _commits(
    config: PipelineConfig, table: TableConfig, pending: list[BatchRef], exists: bool, columns: BatchColumns
) -> tuple[int, int]:
    """The commits the run would make: one per group of the backlog, one per batch of a group
    whose batches' columns differ (it falls back to one by one). At least and at most: batches
    of the same columns whose types Spark infers from the data may still differ in them."""
    grouped = backlog.why_not(config, table, make_strategy(table.strategy)) is None
    size = config.backlog_for(table).max_batches if grouped else 1
    least = most = 0
    for group in backlog.groups(pending, size, first_alone=not exists):
        kinds = {columns.shapes.get(ref.batch_id) for ref in group}
        if len(kinds) > 1:
            least, most = least + len(group), most + len(group)
        else:
            unsure = any(ref.batch_id in columns.inferred for ref in group)
            least, most = least + 1, most + (len(group) if unsure else 1)
    return least, most


def _maintenance_due(
    config: PipelineConfig, targets: PlanTargets, table: TableConfig, exists: bool, takes: bool
) -> list[str]:
    """The upkeep the table is due, and what does it (verbs/maintain.py)."""
    policy, out = config.maintenance_for(table), []
    reason = compaction_due(config, targets, table) if exists else None
    if reason:
        out.append(f"compaction: {reason}: after the next run that takes a batch, or lakefresh maintain")
    if policy.after_runs and takes:
        out.append(
            "upkeep after the run (maintenance.after_runs): compaction, expiry of old versions, orphan files"
        )
    return out


def _planned(reads: PlanReads, ref: BatchRef) -> PlannedBatch:
    sizes = sum(reads.size(path) for path in ref.files) if ref.files else None
    return PlannedBatch(ref.batch_id, ref.position, ref.batch_time.isoformat(), len(ref.files), sizes)
