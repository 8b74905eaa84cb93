"""Backlogs in one commit: when several batches of one table wait (a catch-up after downtime, a
folder of small files, a Synapse backlog), the runner applies them in groups, each group in one
staged commit, where the strategy can prove the result the same as one batch at a time
(strategies/group.py): every batch keeps its exact counts and its id is recorded as applied.

A group goes through the same steps as one batch (steps.py), once:

1. **read**: the group's batches are read as one, each row tagged with its batch's place;
2. **stage**: the strategy's `stage_group` computes the one change set and each batch's counts;
3. **commit** (lakehouse/commit.py): one commit tagged with the group's last batch, whose summary
   lists the earlier ones (`lakefresh.group`), so the lineage names every batch of the group;
   audited against the group's predicted row count; the batches' `staged` rows recorded in one
   append before the commit is visible; then published;
4. **published**: each batch's mark and effective count go to the PublishLog.

A group that cannot be one (its batches' columns differ, a row must be quarantined, the Iceberg
runtime drops commit properties, any error before the publish) is not published: the runner
applies its batches one by one instead, which gives each its own outcome. So grouping never
changes what a run does, only how many commits it takes.

Not grouped: the first batch of a new table, strategies without `stage_group`, `key` with
surrogate keys or history, tables with a transform, lookups or rules, tables another table's
`table_changes` source reads (its change feed must show every batch), and backfills.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from lakefresh.clock import utc_now
from lakefresh.config import write_mode
from lakefresh.errors import AuditError, StateError, TakenError, TransientError
from lakefresh.faults import checkpoint
from lakefresh.lakehouse.backend import GROUP_PROPERTY
from lakefresh.lakehouse.checkpoints import releasing
from lakefresh.lakehouse.commit import Transaction
from lakefresh.results import BatchResult
from lakefresh.run.reading import read_group
from lakefresh.run.steps import Attempt, BatchSteps, error_text
from lakefresh.state.control import AttemptRow
from lakefresh.state.published import Published
from lakefresh.strategies import GroupStaging, StageContext
from lakefresh.strategies.base import shape_target
from lakefresh.strategies.group import GroupChange, Member

if TYPE_CHECKING:
    from lakefresh.config.models import PipelineConfig, TableConfig
    from lakefresh.lakehouse.backend import StagedCommit, TableBackend
    from lakefresh.run.bookkeeping import Bookkeeping
    from lakefresh.sources import BatchRef, Source
    from lakefresh.state.control import ControlTables
    from lakefresh.state.published import PublishLog
    from lakefresh.strategies import Strategy


def why_not(config: PipelineConfig, table: TableConfig, strategy: Strategy) -> str | None:
    """Why this table's backlog is applied one batch at a time; None when it can be grouped."""
    if config.backlog_for(table).max_batches < 2:
        return "backlog.max_batches is 1"
    if not isinstance(strategy, GroupStaging):
        return f"strategy {table.strategy.kind} has no group staging"
    cfg = table.strategy
    if cfg.surrogate() or cfg.keeps_history():
        return "surrogate keys and history follow the commits"
    if (options := cfg.one_batch_at_a_time()) is not None:
        return options
    if table.source.timed_by_rows:
        return "batch_time.column: each batch's time is known only once it is read"
    if table.transform is not None or table.lookups or table.rules:
        return "a transform, lookups or rules see one batch at a time"
    if write_mode.change_feed_readers(config, table):
        return "a change feed reads the table: it must show every batch"
    if config.audit_for(table).unique_keys:
        return "audit.unique_keys scans the commit of each batch"
    return None


def groups(
    refs: list[BatchRef], size: int | Callable[[], int], first_alone: bool = False
) -> Iterator[list[BatchRef]]:
    """The pending batches in order, in runs of at most `size`; a backfill stands alone, and so
    does the first batch when it creates the table (`first_alone`). A callable `size` is asked
    as each group starts, so a group applied before can shrink the next ones."""
    group: list[BatchRef] = []
    limit = 1
    for n, ref in enumerate(refs):
        alone = bool(ref.replay.get("backfill")) or (first_alone and n == 0)
        if group and (alone or len(group) >= limit):
            yield group
            group = []
        if not group:
            limit = size() if callable(size) else size
        group.append(ref)
        if alone:
            yield group
            group = []
    if group:
        yield group


class GroupSteps:
    """The steps of a group of batches of one table, over the pipeline's backend and control."""

    def __init__(self, steps: BatchSteps) -> None:
        self.steps = steps
        self.config = steps.config
        self.backend: TableBackend = steps.backend
        self.control: ControlTables = steps.control
        self.books: Bookkeeping = steps.books
        self.size: dict[str, int] = {}  # table -> batches per group now (shrinks for large rows)

    def group_size(self, table: TableConfig) -> int:
        return self.size.get(table.name, self.config.backlog_for(table).max_batches)

    @releasing
    def apply(
        self,
        table: TableConfig,
        name: str,
        strategy: Strategy,
        source: Source,
        refs: list[BatchRef],
        log: PublishLog,
    ) -> list[BatchResult] | None:
        """Apply the batches in one commit; None when they must be applied one by one (nothing
        of theirs was published then). The rows it materialized are released when it ends."""
        if len(refs) < 2 or not self.backend.carries_commit_properties(name) or not self.backend.exists(name):
            return None
        attempts = [Attempt(table, name, strategy, ref) for ref in refs]
        txn = Transaction(self.backend, name, f"the group of batches up to {refs[-1].batch_id!r}")
        for a in attempts:
            a.txn = txn
        try:
            clock = time.perf_counter()
            staged = self._stage(table, name, strategy, source, attempts)
            if staged is None:
                return None
            change, ctx = staged
            self._commit(table, strategy, attempts, change, ctx)
            _passed("after_publish", attempts)
            assert txn.version is not None
            self._publish(name, attempts, change, txn.version, clock, log)
        except Exception as exc:
            if not txn.publishing or isinstance(exc, TransientError | TakenError):  # none of it is in
                self._abandon(attempts)
                return None
            # in the target, or maybe (a publish with an unknown outcome): nothing is undone, as
            # after a crash there, and the next run's reconciliation settles it by the lineage
            published = txn.version
            where = f"was published as version {published}" if published else "may have been published"
            for a in attempts:
                a.result.status = "failed"
                a.result.error = f"{error_text(exc)} (the batch {where}; the next run completes its record)"
        return [a.result for a in attempts]

    def _stage(
        self, table: TableConfig, name: str, strategy: Any, source: Source, attempts: list[Attempt]
    ) -> tuple[GroupChange, StageContext] | None:
        """Read and stage the group, the table shaped for it; None when it cannot be one."""
        txn = attempts[0].txn
        assert txn is not None
        schema = self.backend.schema(name)
        self.steps.check_not_taken(name, [a.ref.batch_id for a in attempts], txn.head)
        for a in attempts:
            a.exists, a.target_schema, a.head = True, schema, txn.head
        rows = read_group(source, table, strategy, [a.ref for a in attempts], schema)
        if rows is None or rows.quarantined:
            if rows is not None:  # its batches carry bad rows: the rest go one by one, read once
                self.size[table.name] = 1
            return None
        _passed("after_read", attempts)
        members = [Member(a.ref.batch_id, a.ref.batch_time) for a in attempts]
        last = attempts[-1].ref
        ctx = StageContext(self.backend, name, last.batch_id, last.batch_time, True)
        change = strategy.stage_group(ctx, rows.good, members)
        txn.shape(lambda: shape_target(ctx, change.change))  # it exists: a group never creates it
        for a in attempts:
            b, r = a.ref.batch_id, a.result
            r.counts, r.record_count, r.duplicates = change.counts[b], change.records[b], change.duplicates[b]
        _passed("after_stage", attempts)
        self._resize(table, sum(change.records.values()), len(attempts))
        return change, ctx

    def _commit(
        self,
        table: TableConfig,
        strategy: Any,
        attempts: list[Attempt],
        change: GroupChange,
        ctx: StageContext,
    ) -> None:
        """One commit for the group (lakehouse/commit.py), its summary naming every batch."""
        txn = attempts[0].txn
        assert txn is not None
        clock = time.perf_counter()
        parent_rows = txn.parent_rows()
        earlier = json.dumps([a.ref.batch_id for a in attempts[:-1]])

        def audited(staged: StagedCommit) -> None:
            if GROUP_PROPERTY not in staged.properties:  # the lineage could not name its batches
                raise StateError(f"the group commit of {txn.table} lost its {GROUP_PROPERTY} property")
            _passed("after_write", attempts)
            expected = parent_rows + (change.change.expected_delta or 0)
            if self.config.audit_for(table).row_count and staged.live_records != expected:
                raise AuditError(f"staged group holds {staged.live_records} rows, predicted {expected}")
            share = (time.perf_counter() - clock) / len(attempts)
            for a in attempts:
                a.result.files_written = staged.files_written if a is attempts[-1] else 0
                a.result.bytes_written = staged.bytes_written if a is attempts[-1] else 0
                a.times.stage = share
            _passed("after_audit", attempts)

        write = lambda: strategy.write(ctx, change.change)  # noqa: E731
        last = attempts[-1].ref.batch_id
        txn.commit(last, write, audited, lambda staged: self._record(attempts), {GROUP_PROPERTY: earlier})

    def _resize(self, table: TableConfig, rows: int, batches: int) -> None:
        """The next groups of a table whose batches are large take fewer of them."""
        cfg = self.config.backlog_for(table)
        if rows > cfg.max_rows:
            self.size[table.name] = max(1, cfg.max_rows * batches // rows)

    def _record(self, attempts: list[Attempt]) -> None:
        self.control.record_attempts([a.row("staged", **a.counts()) for a in attempts])
        for a in attempts:
            a.recorded = True
        _passed("after_record_staged", attempts)

    def _publish(
        self,
        name: str,
        attempts: list[Attempt],
        change: GroupChange,
        version: int,
        clock: float,
        log: PublishLog,
    ) -> None:
        self.steps.reconciled[name] = version  # its own commit (BatchSteps.check_not_taken)
        effective = self.books.effective_group(name, change, version, log)
        when = utc_now()
        seconds = (time.perf_counter() - clock) / len(attempts)
        for a in attempts:
            b = a.ref.batch_id
            mine = [e for e in effective if e.batch_id == b]
            others = [e for e in effective if e.batch_id not in change.counts] if a is attempts[-1] else []
            a.result.effective_count = mine[0].count if mine else 0
            a.result.version = version
            a.times.publish = seconds
            log.add(Published(b, a.id, version, when, seconds), None, [*mine, *others])
            a.result.status = "published"

    def _abandon(self, attempts: list[Attempt]) -> None:
        """A group not published: its staged rows are abandoned, the columns it added dropped."""
        staged = [AttemptRow(a.ref.batch_id, a.id, "staged", None) for a in attempts if a.recorded]
        if staged:
            self.control.mark_abandoned(attempts[0].name, staged)
        if attempts[0].target_schema is not None:
            self.steps.restore_schema(attempts[0], attempts[-1].ref.batch_id)  # the group's commit


def _passed(point: str, attempts: list[Attempt]) -> None:
    """Every batch of the group passes the fault point (faults.py), in order."""
    for a in attempts:
        checkpoint(point, a.ref.batch_id)
