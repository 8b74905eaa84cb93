"""`reset`, `unload`, `reload` and a full refresh: a table rebuilt from its retained raw
batches, in one commit.

All four compute the table a run would have made had exactly the *live* batches been applied,
in the source's order, with the table's current configuration:

- `reset` ("reset all"): the live batches as they are;
- `unload --batch B`: without B, as if B had never been loaded (later runs never take it);
- `reload --batch B`: with B read again from its current content (the corrected file), in its
  original place in the order; an unloaded B becomes live again;
- `run --full-refresh` (verb `refresh`): every batch the source holds now, each read again as a
  reload reads B (new attempts, new counts, new bad rows), the ones never loaded too; batches
  the operator took out (`unload`, `--skip-batch`, a forgotten rollback) stay out, and published
  batches the source no longer holds leave the table (`unloaded`). When today's configuration
  gives the table another schema (a column's type that cannot be widened, a column no longer
  declared), the rebuilt rows replace the table itself: a new version of
  the table, in one commit (see `TableBackend.replace_table`).

That is exact for every strategy (each batch is staged by the table's own strategy, on the state
the batches before it made), and the same for the `<t>_history` table that `history: true` brings.
Steps:

1. The table is assessed and settled, as a run does (run/assessment.py, `Bookkeeping.settle`); a
   table with rolled-back batches stops.
   `unload` and `reload` refuse when the configuration changed since the last batch (they would
   apply the new one to every batch silently): `reset` is the verb for that.
2. The live batches: the published ones in the log (a verb's own commits aside), less B for
   `unload`, plus B for `reload`. Every one must still be listed by its source (its files are
   there); otherwise nothing is written and the error names them (a `jdbc` read and a change
   feed's loads are not retained: `rollback` undoes a tail of batches without reading them).
3. Build aside: each live batch is read and staged by the strategy into `<t>__rebuild`, in
   order, written directly (no staged commits: nobody reads that table).
4. Write-audit-publish: one staged commit of the target replaces its rows with the rebuilt ones,
   tagged with the verb's id (`lakefresh:unload:<n>`); the staged version must hold as many
   rows as the rebuilt table; the verb is logged `staged`, then published. Readers see the old
   table until then; the earlier versions stay (time travel, `rollback`). A commit to the table
   since step 1 (a run, another writer) is not in the rebuilt rows: the verb is then refused.
   A reloaded batch's new attempt (its new counts, its bad rows) is staged beside the verb's row,
   on the same staged version, before the publish.
5. Record (`Bookkeeping.settle_verb`): the verb's row becomes `published` (its `replay` lists
   what it unloaded or reloaded, and the status counts it gave the batches it applied again),
   unloaded batches `unloaded`, a reloaded batch's new attempt `published` and its earlier one
   `reloaded`; effective counts and ranges are recounted.

A crash before 4's publish leaves the table as it was (the next verb drops the scratch table;
the next run abandons the staged rows). A crash after it leaves the table rebuilt: the next
run's assessment finds the verb in the lineage and settles it from its staged rows, as 5.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from lakefresh.clock import utc_now
from lakefresh.columns import BATCH_ID_COLUMN
from lakefresh.config.fingerprint import changes, fingerprint
from lakefresh.errors import AuditError, CommitConflictError, ConfigError, TargetError
from lakefresh.faults import checkpoint
from lakefresh.lakehouse.backend import SCRATCH, Layout, target_layout
from lakefresh.lakehouse.checkpoints import released_after
from lakefresh.lakehouse.commit import Transaction
from lakefresh.results import BatchResult, TableResult, earlier_name, json_keys
from lakefresh.run import backlog
from lakefresh.run.assessment import NEVER_AGAIN
from lakefresh.run.bookkeeping import Bookkeeping
from lakefresh.run.reading import read_batch, read_group
from lakefresh.sources import Source
from lakefresh.state import tombstones
from lakefresh.state.batch_row import BatchRow
from lakefresh.state.control import is_adopted, is_verb, verb_batch_id
from lakefresh.state.published import Published
from lakefresh.state.reads import AttemptRow
from lakefresh.strategies import StageContext, make_strategy
from lakefresh.strategies.base import shape_target
from lakefresh.strategies.group import Member
from lakefresh.verbs.common import VerbContext, reload_row, table_and_history
from lakefresh.verbs.replay import replayed_refs, with_replays

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

    from lakefresh.config.models import PipelineConfig, TableConfig
    from lakefresh.lakehouse.backend import StagedCommit, TableBackend
    from lakefresh.run.assessment import Assessment
    from lakefresh.sources import BatchRef
    from lakefresh.state.control import ControlTables
    from lakefresh.strategies import Strategy

Verb = Literal["reset", "unload", "reload", "refresh"]


@dataclass
class RebuildResult:
    """What a reset, unload or reload did, per table (the table first, then its history)."""

    verb: str
    table: str
    batches: list[str] = field(default_factory=list)  # the batches it named (unload, reload)
    applied: dict[str, list[str]] = field(default_factory=dict)  # table -> live batches, in order
    rows: dict[str, int] = field(default_factory=dict)  # table -> its rows now
    versions: dict[str, int] = field(default_factory=dict)  # table -> the verb's commit
    reloaded: list[BatchResult] = field(default_factory=list)  # a reload's batches, new counts
    dropped: dict[str, list[str]] = field(default_factory=dict)  # table -> batches a refresh left out
    new_version: dict[str, bool] = field(default_factory=dict)  # table -> replaced (a new schema)
    # other tables of the pipeline that read the same source and hold some of the named batches:
    # the verb changed only its own table (table -> those batches)
    also_in: dict[str, list[str]] = field(default_factory=dict)

    snapshots = earlier_name("versions")

    def to_dict(self) -> dict[str, Any]:
        return json_keys({**asdict(self), "reloaded": [b.to_dict() for b in self.reloaded]})


@dataclass
class _Plan:
    """One table to rebuild: what it is, and the live batches in the source's order."""

    pipeline: PipelineConfig
    name: str
    config: TableConfig
    strategy: Strategy
    source: Source
    live: list[BatchRef]
    named: list[str]  # the batches the verb unloads or reloads in this table
    head: int | None = None  # the table's version the plan was made from
    dropped: list[str] = field(default_factory=list)  # a refresh's batches the source no longer holds


def rebuild(ctx: VerbContext, table: TableConfig, verb: Verb, batches: list[str], hint: str) -> RebuildResult:
    """Reset, unload or reload `table` (and its `<t>_history`), each in one commit; or refresh
    `table` in full (its history is a table of the run of its own)."""
    if verb in ("unload", "reload") and not batches:
        raise ConfigError(f"{verb} needs the batches to {verb}: --batch B")
    if verb == "refresh" and not table.source.retains_batches:
        raise ConfigError(
            f"cannot refresh {table.name!r} in full: its {table.source.kind} source does not keep "
            "its batches, so they cannot be read again. Nothing was changed"
            + (" (a change feed starts again: lakefresh reset-load)" if table.source.change_feed else "")
        )
    ctx.control.ensure()
    key = table.strategy.surrogate()
    if key is not None and key.generator == "sequence":
        raise ConfigError(
            f"cannot {verb} {table.name!r}: rebuilding it would renumber its sequence surrogate "
            "keys, which facts refer to (generator: hash keys survive a rebuild)"
        )
    books = Bookkeeping(ctx.backend, ctx.control)
    tables = [table] if verb == "refresh" else table_and_history(ctx.config, ctx.backend, table, verb)
    plans = [_plan(ctx, books, each, verb, batches, hint, main=each is table) for each in tables]
    result = RebuildResult(verb, table.name, list(batches))
    for plan in plans:
        if plan is not None:  # a history table that never held the batches is left as it is
            with released_after():  # the rows it rebuilt from, once its table is done
                _apply(ctx, books, plan, verb, result)
    return result


def _plan(
    ctx: VerbContext,
    books: Bookkeeping,
    table: TableConfig,
    verb: Verb,
    batches: list[str],
    hint: str,
    main: bool,
) -> _Plan | None:
    config, backend, control = ctx.config, ctx.backend, ctx.control
    name = config.qualified(table)
    strategy = make_strategy(table.strategy)
    exists = backend.exists(name)
    found = books.assess(name, table) if exists else None  # a full refresh also rebuilds a dropped table
    if found is not None:
        books.settle(found, TableResult(table.name), strategy, hint, None)  # 1.
        _refuse_adopted(control.attempts(name), table.name, verb)
        _refuse_foreign_rows(backend, name, table.name, verb)
    head = backend.head(name) if exists else None
    attempts = control.attempts(name)
    live = {a.batch_id for a in attempts if a.status == "published" and not is_verb(a.batch_id)}
    if verb in ("unload", "reload") and found is not None:
        _refuse_other_configurations(books, control, found, verb, live)
    source = ctx.source(table)
    listed = source.list_batches() if table.source.retains_batches else []
    dropped: list[str] = []
    if verb == "refresh":  # 2.
        ordered, dropped = _held(control, name, attempts, live, listed)
        named = [ref.batch_id for ref in ordered]
    else:
        named = _named(attempts, live, table.name, verb, batches, main)
        if not named and verb != "reset":
            return None
        live = live - set(batches) if verb == "unload" else live | set(named) if verb == "reload" else live
        replays = replayed_refs(control, name, live - {ref.batch_id for ref in listed})
        ordered = with_replays(listed, live, replays)
        _refuse_missing(table, verb, live - {ref.batch_id for ref in ordered})
    rank = {b: n for n, b in enumerate(reversed(list(found.lineage)))} if found is not None else {}
    if all(ref.batch_id in rank for ref in ordered):  # in the order they were applied
        ordered.sort(key=lambda ref: rank[ref.batch_id])
    return _Plan(config, name, table, strategy, source, ordered, named, head, dropped)


def _held(
    control: ControlTables, name: str, attempts: list[Any], published: set[str], listed: list[BatchRef]
) -> tuple[list[BatchRef], list[str]]:
    """A full refresh's batches: every one the source holds (with the live replays of corrected
    rows after their batch) but those the operator took out, in the source's order; and the
    published batches it no longer holds, which leave the table."""
    out = {a.batch_id for a in attempts if a.status in NEVER_AGAIN} - published
    held = {ref.batch_id for ref in listed} - out
    replays = replayed_refs(control, name, published - held)
    ordered = with_replays(listed, held | published, replays)
    taken = {ref.batch_id for ref in ordered}
    return ordered, sorted(published - taken)


def _refuse_adopted(attempts: list[Any], table: str, verb: Verb) -> None:
    """An adopted table's rows from before lakefresh are no batch a rebuild could read again."""
    adopted = [a.batch_id for a in attempts if a.status == "published" and is_adopted(a.batch_id)]
    if adopted:
        raise ConfigError(
            f"cannot {verb} {table!r}: it was adopted ({adopted[0]}), and its rows from before "
            "lakefresh are no batch that could be read again; rebuilding it from its batches "
            "would lose them. Nothing was changed (`rollback` undoes batches taken since)"
        )


def _refuse_foreign_rows(backend: TableBackend, name: str, table: str, verb: Verb) -> None:
    """Rows written to the table outside its batches would be lost by the rebuild: refused."""
    foreign = [
        c for c in backend.commits_after(name, None) if c.batch_id is None and c.operation != "replace"
    ]
    shown = ", ".join(f"version {c.version} ({c.operation})" for c in foreign[:3])
    if not foreign:  # the commits may have expired (`maintain`): the rows did not
        target = backend.read(name)
        if BATCH_ID_COLUMN in target.columns and target.filter(f"{BATCH_ID_COLUMN} IS NULL").take(1):
            shown = "rows that no batch wrote"
    if shown:
        raise TargetError(
            f"cannot {verb} {table!r}: rows were written to it outside its batches ({shown}: "
            "lookup skeleton rows, or another writer); rebuilding it from its batches would lose "
            "them. Nothing was changed"
        )


def _refuse_other_configurations(
    books: Bookkeeping, control: ControlTables, found: Assessment, verb: Verb, live: set[str]
) -> None:
    """`unload` and `reload` apply no configuration the live batches were not applied under."""
    books.check_config(found)
    table = found.table
    now, text = fingerprint(table)
    other = {b: fp for b, fp in control.fingerprints(found.name).items() if b in live and fp != now}
    changed: dict[str, bool] = {}  # by fingerprint: whether it differs from today's in result
    for batch_id, fp in other.items():
        if fp not in changed:
            recorded = control.configuration(found.name, batch_id)
            changed[fp] = not recorded or not recorded[1] or bool(changes(recorded[1], text))
    older = sorted(b for b, fp in other.items() if changed[fp])
    if older:
        raise ConfigError(
            f"cannot {verb} {table.name!r}: batches {_some(older)} were applied under another "
            f"configuration (taken with --accept-config-change), and {verb} would apply them "
            f"again under today's; rebuild every batch under it with lakefresh reset PIPELINE "
            f"--table {table.name}. Nothing was changed"
        )


def _named(
    attempts: list[Any], live: set[str], table: str, verb: Verb, batches: list[str], main: bool
) -> list[str]:
    """The batches `unload` or `reload` names that the table holds (or held); ConfigError for
    others, in the table the verb names (its history may never have held them)."""
    if verb == "unload":
        unknown = [b for b in batches if b not in live]
        if unknown and main:
            raise ConfigError(
                f"cannot unload {unknown} from {table!r}: not loaded (its loaded batches: "
                f"{_some(live)}); nothing was changed"
            )
        return [b for b in batches if b in live]
    if verb == "reload":
        unloaded = {a.batch_id for a in attempts if a.status in ("unloaded", "forgotten")}
        unknown = [b for b in batches if b not in live | unloaded]
        if unknown and main:
            raise ConfigError(
                f"cannot reload {unknown} into {table!r}: never loaded (a run takes a new "
                "batch; reload applies a loaded or unloaded one again); nothing was changed"
            )
        return [b for b in batches if b in live | unloaded]
    return []


def _refuse_missing(table: TableConfig, verb: Verb, missing: set[str]) -> None:
    if missing:
        raise ConfigError(
            f"cannot {verb} {table.name!r}: {len(missing)} of its batches can no longer be read "
            f"from its {table.source.kind} source ({_some(missing)}): a jdbc read or a change "
            "feed's load is not retained, and files may have been removed. Nothing was changed; "
            "`lakefresh rollback` undoes the newest batches without reading them"
        )


def _apply(ctx: VerbContext, books: Bookkeeping, plan: _Plan, verb: Verb, result: RebuildResult) -> None:
    backend, control = ctx.backend, ctx.control
    name, table = plan.name, plan.config
    verb_id = verb_batch_id(verb)
    reloads = [ref for ref in plan.live if verb in ("reload", "refresh") and ref.batch_id in plan.named]
    rebuilt, outcomes, counts = _build_aside(backend, plan, reloads)  # 3.
    txn = Transaction(backend, name, f"the {verb}", _moved(name, verb, "published"))
    if txn.head != plan.head:  # a commit the rebuilt rows lack: the replace would erase it
        raise CommitConflictError(_moved(name, verb, "changed"))
    if not txn.existed:  # a full refresh of a dropped table: made again, empty, first
        txn.shape(lambda: _create_like(backend, plan, rebuilt))
    new_version = verb == "refresh" and _reshaped(backend.schema(name), rebuilt.schema)
    # 4. (a column only an unloaded batch had stays, NULL)
    rows = rebuilt if new_version else txn.shape(lambda: backend.align(name, rebuilt))
    record = _VerbRecord(verb_id, plan, verb, rows.count(), counts, outcomes)
    checkpoint("after_stage", verb_id)
    audit = lambda staged: _audit(name, verb, staged.live_records, record.expected)  # noqa: E731

    def keep(staged: StagedCommit | None) -> None:
        """The verb's record, and its batches' tombstones as the target's (state/tombstones.py)."""
        tombstones.adopt(backend, name, name + SCRATCH, verb_id)
        record.write(control, staged.version if staged else None)

    try:
        if new_version:
            version = txn.replace_table(verb_id, rows, table.partition_by, audit, keep)
        else:
            version = txn.commit(verb_id, lambda: backend.replace(name, rows), audit, keep)
    except Exception:
        if not txn.publishing:  # nothing of it is visible: its rows never publish
            control.mark_abandoned(name, record.written)
        raise
    if new_version and table.sort_by:  # the new version's write order, as its creation gives it
        backend.lay_out(name, Layout(sort_by=tuple(table.sort_by)))
    checkpoint("after_publish", verb_id)
    backend.drop(name + SCRATCH)
    tombstones.drop(backend, name + SCRATCH)

    when = backend.committed_at(name, version)  # 5.
    books.settle_verb(name, Published(verb_id, record.attempt, version, when), record.configuration)
    for outcome, _ in outcomes:
        outcome.version = version
    books.recount(name, plan.strategy)
    checkpoint("after_record", verb_id)
    result.applied[table.name] = [ref.batch_id for ref in plan.live]
    result.rows[table.name] = record.expected
    result.versions[table.name] = version
    result.reloaded += [outcome for outcome, _ in outcomes]
    result.dropped[table.name] = list(plan.dropped)
    result.new_version[table.name] = new_version


def _moved(name: str, verb: str, what: str) -> str:
    return (
        f"{name} moved while the {verb} was built (another run or writer committed): nothing was "
        f"{what}; {verb} it again"
    )


@dataclass
class _VerbRecord:
    """What the log records of a verb's commit: its own row, and the reloaded batches' new
    attempts (with their bad rows), all on the verb's staged version."""

    verb_id: str
    plan: _Plan
    verb: Verb
    expected: int  # the rebuilt table's rows
    counts: dict[str, dict[str, int]]
    outcomes: list[tuple[BatchResult, DataFrame | None]]
    attempt: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    started: datetime = field(default_factory=utc_now)
    configuration: tuple[str, str] = ("", "")
    written: list[AttemptRow] = field(default_factory=list)  # the `staged` rows it recorded

    def __post_init__(self) -> None:
        self.configuration = fingerprint(self.plan.config)

    def write(self, control: ControlTables, staged: int | None) -> None:
        """Record the rows as `staged` on version `staged` (None: a commit still to come)."""
        plan, named = self.plan, self.plan.named
        replay: dict[str, Any] = {"verb": self.verb, "batches": [ref.batch_id for ref in plan.live]}
        if self.verb == "unload":
            replay["unloaded"] = list(named)
        elif self.verb in ("reload", "refresh"):
            replay["reloaded"] = list(named)
        if plan.dropped:
            replay["unloaded"] = list(plan.dropped)
        # the status counts of the batches it applied again (a later batch may find other rows once
        # one before it is unloaded or reloaded); a reloaded batch's are in its new attempt
        reloading = self.verb in ("reload", "refresh")
        replay["counts"] = {b: c for b, c in self.counts.items() if b not in named or not reloading}
        fingerprinted, configured = self.configuration
        row = BatchRow.of_table(
            plan.name,
            plan.config,
            self.verb_id,
            self.attempt,
            "staged",
            verb=True,
            source_position=plan.live[-1].position if plan.live else None,
            replay=json.dumps(replay, sort_keys=True),
            record_count=self.expected,
            staged_snapshot_id=staged,
            started_at=self.started,
            config_fingerprint=fingerprinted,
            config=configured,
        )
        # a reloaded batch's new attempt is staged beside the verb's, on the same staged version:
        # whatever happens after the publish, the next settlement can finish the record (5.)
        news = [(outcome, bad, uuid.uuid4().hex[:16]) for outcome, bad in self.outcomes]
        reloaded = [reload_row(plan.name, plan.config, o, new, staged, self.started) for o, _, new in news]
        control.record_attempts([row, *reloaded])
        self.written = [AttemptRow(r.batch_id, r.attempt, "staged", staged) for r in [row, *reloaded]]
        for outcome, bad, new in news:
            if bad is not None:
                control.record_quarantine(plan.name, outcome.batch_id, new, bad)
        checkpoint("after_record_staged", self.verb_id)


def _audit(name: str, verb: str, found: int, expected: int) -> None:
    if found != expected:
        raise AuditError(
            f"the staged {verb} of {name} holds {found} rows, the rebuilt table {expected}; "
            "nothing was published"
        )


def _reshaped(current: StructType, rebuilt: StructType) -> bool:
    """Whether the rebuilt rows need another table: a column of the table they lack (no longer
    declared), or one whose type differs (a type a batch cannot widen)."""
    have = {f.name.lower(): f.dataType.simpleString() for f in current.fields}
    made = {f.name.lower(): f.dataType.simpleString() for f in rebuilt.fields}
    if not have.keys() <= made.keys():
        return True
    return any(made[column] != kind for column, kind in have.items())


def _create_like(backend: TableBackend, plan: _Plan, rebuilt: DataFrame) -> None:
    """The target made again, empty, as a run makes it (its partitioning, properties, order)."""
    backend.create(plan.name, rebuilt.schema, target_layout(plan.pipeline, plan.config))


def _build_aside(
    backend: TableBackend, plan: _Plan, reloads: list[BatchRef]
) -> tuple[DataFrame, list[tuple[BatchResult, DataFrame | None]], dict[str, dict[str, int]]]:
    """Apply the live batches in order to an empty scratch table; the rebuilt rows, the reloaded
    batches' outcomes (with their bad rows), and every batch's status counts."""
    scratch = plan.name + SCRATCH
    backend.drop(scratch)
    tombstones.drop(backend, scratch)
    table, strategy = plan.config, plan.strategy
    outcomes: list[tuple[BatchResult, DataFrame | None]] = []
    counts: dict[str, dict[str, int]] = {}
    exists = False
    grouped = backlog.why_not(plan.pipeline, table, strategy) is None
    size = plan.pipeline.backlog_for(table).max_batches if grouped else 1
    for refs in backlog.groups(plan.live, size, first_alone=True):
        if len(refs) > 1 and not {r.batch_id for r in refs} & {r.batch_id for r in reloads}:
            group = _group_aside(backend, plan, refs, scratch)
            if group is not None:
                counts.update(group)
                continue
        exists = _each_aside(backend, plan, refs, reloads, exists, outcomes, counts)
    if not exists:  # nothing is live: the table keeps its columns and loses every row
        return backend.read(plan.name).limit(0), outcomes, counts
    return backend.read(scratch), outcomes, counts


def _group_aside(
    backend: TableBackend, plan: _Plan, refs: list[BatchRef], scratch: str
) -> dict[str, dict[str, int]] | None:
    """Batches applied to the scratch table in one write (run/backlog.py); their status counts, or
    None when they cannot be one group. Their bad rows stay as their first load quarantined them."""
    strategy: Any = plan.strategy
    rows = read_group(plan.source, plan.config, strategy, refs, backend.schema(scratch))
    if rows is None:
        return None
    last = refs[-1]
    ctx = StageContext(backend, scratch, last.batch_id, last.batch_time, True)
    group = strategy.stage_group(ctx, rows.good, [Member(r.batch_id, r.batch_time) for r in refs])
    shape_target(ctx, group.change, staged_commits=False)
    strategy.write(ctx, group.change)
    out: dict[str, dict[str, int]] = group.counts
    return out


def _each_aside(
    backend: TableBackend,
    plan: _Plan,
    refs: list[BatchRef],
    reloads: list[BatchRef],
    exists: bool,
    outcomes: list[tuple[BatchResult, DataFrame | None]],
    counts: dict[str, dict[str, int]],
) -> bool:
    """Batches applied to the scratch table one by one; whether it exists now."""
    scratch, table, strategy = plan.name + SCRATCH, plan.config, plan.strategy
    for ref in refs:
        target_schema = backend.schema(scratch) if exists else None
        read = read_batch(plan.pipeline, backend, table, strategy, plan.source, ref, target_schema)
        batch_time = read.batch_time or ref.batch_time  # batch_time.column: the rows say it
        ctx = read.stage_context(backend, scratch, ref.batch_id, batch_time, exists)
        change = strategy.stage(ctx, read.good)
        shape_target(ctx, change, staged_commits=False)
        strategy.write(ctx, change)
        if change.tombstones is not None:  # the target's own, with the verb's commit
            tombstones.keep(backend, scratch, ref.batch_id, change.tombstones)
        exists = True
        counts[ref.batch_id] = dict(change.counts)
        if ref in reloads:
            outcome = BatchResult(plan.name, ref.batch_id, "published", ref.position)
            outcome.counts = dict(change.counts)
            outcome.record_count = change.record_count + read.quarantined
            outcome.quarantined, outcome.duplicates = read.quarantined, change.duplicates
            if change.range:
                outcome.range_start, outcome.range_end = change.range
            outcomes.append((outcome, read.quarantine_rows() if read.quarantined else None))
    return exists


def _some(ids: set[str] | list[str]) -> str:
    shown = sorted(ids)
    return ", ".join(shown[:5]) + (", ..." if len(shown) > 5 else "") if shown else "none"
