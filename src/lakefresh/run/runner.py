"""The runner: for each table in dependency order, each new batch goes through the steps of
steps.py (read -> stage -> write, staged and invisible -> audit -> record -> publish), and the
run's published batches are recorded in the log in one commit at the table's end.

Exactly once. A batch is *applied* when its id is in the target's current lineage (a published
version carries the batch id it was staged with). Before anything else, the runner assesses the
table (assessment.py: the lineage against the `batches` log, read only) and settles what it found
(Bookkeeping.settle): published batches whose log says `staged` become `published`; published
batches with no log row get a recovered row; staged attempts that never published are marked
`abandoned`. Then it takes every batch the source lists that is not applied, in order.
A crash at any point therefore leaves the target at its last published batch, and the next run
continues from there. A re-run with nothing new writes nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from lakefresh.config.graph import dependency_order
from lakefresh.config.models import PipelineConfig, TableConfig
from lakefresh.errors import ConfigError, StoreInterrupted, TransientError
from lakefresh.lakehouse.backend import TableBackend, target_layout
from lakefresh.results import BatchResult, RunResult, TableResult
from lakefresh.run import backlog
from lakefresh.run.bookkeeping import Bookkeeping
from lakefresh.run.steps import Attempt, BatchSteps, error_text
from lakefresh.sources import BatchRef, Reopening, Source, SourceContext, make_source, ready
from lakefresh.state.control import ControlTables
from lakefresh.state.published import PublishLog
from lakefresh.strategies import Strategy, make_strategy

if TYPE_CHECKING:
    from lakefresh.console import Console

MAX_CONFLICT_RETRIES = 3
# the wait before a batch cut off by the store is tried again, times the attempts so far
STORE_BACKOFF_SECONDS = 2.0
ROLLED_BACK_DECISIONS = ("forget", "reapply")
# What a run does to a table before its new batches, when asked (a full refresh: api.py)
BeforeTable = Callable[[TableConfig, TableResult], None]


class Runner:
    def __init__(
        self,
        config: PipelineConfig,
        backend: TableBackend,
        control: ControlTables,
        base_dir: str,
        console: Console,
        resume_hint: str = "lakefresh run PIPELINE --table {table}",
    ) -> None:
        self.config = config
        self.backend = backend
        self.control = control
        self.base_dir = base_dir
        self.console = console
        self.resume_hint = resume_hint
        self.stop = threading.Event()
        self.rolled_back: str | None = None  # the operator's decision on rolled-back batches
        self.skip: list[str] = []  # batches the operator skips for good (one table's run)
        self.accept_config_change = False  # the operator's decision: new config for new batches
        self.before_table: BeforeTable | None = None
        self.books = Bookkeeping(backend, control)
        self.steps = BatchSteps(config, backend, control, self.books, console.message)
        self.grouping = backlog.GroupSteps(self.steps)  # backlogs in one commit per group

    def run(
        self,
        only: list[str] | None = None,
        stop: threading.Event | None = None,
        rolled_back: str | None = None,
        skip: list[str] | None = None,
        accept_config_change: bool = False,
        before_table: BeforeTable | None = None,
    ) -> RunResult:
        """Apply every new batch of every table (or of `only`), each after `before_table(table,
        outcome)` when given (an error there stops the table as a batch's does). `rolled_back` decides what
        becomes of published batches a rollback of their target removed: `forget` (never taken
        again) or `reapply` (taken again, in order); without it such a table stops. `skip`
        (with exactly one table in `only`) names waiting batches never to take: a refused batch
        that cannot be fixed, for instance. `accept_config_change` takes a table whose
        result-shaping configuration changed since its last batch on, under the new one."""
        if rolled_back not in (None, *ROLLED_BACK_DECISIONS):
            choices = list(ROLLED_BACK_DECISIONS)
            raise ConfigError(f"rolled_back must be one of {choices}, got {rolled_back!r}")
        self.rolled_back = rolled_back
        self.skip = list(skip or [])
        self.accept_config_change = accept_config_change
        self.before_table = before_table
        if self.skip and len(only or []) != 1:
            raise ConfigError("skipping batches needs exactly one table: --table T --skip-batch B")
        result = RunResult()
        tables = dependency_order(self.config.tables)
        if only:
            unknown = [t for t in only if t not in {x.name for x in tables}]
            if unknown:
                raise ConfigError(f"unknown table(s) {unknown}; tables: {[t.name for t in tables]}")
            tables = [t for t in tables if t.name in only]
        self.control.ensure()
        self.control.read_ahead([self.config.qualified(t) for t in tables])  # the log, in one read
        failed: set[str] = set()
        self.stop = stop or threading.Event()
        for table in tables:
            if self.stop.is_set():
                break
            blocked = [d for d in table.upstream([t.name for t in tables]) if d in failed]
            if blocked:
                outcome = TableResult(table.name, error=f"not run: depends on failed {blocked}")
            else:
                outcome = self.run_table(table)
            if not outcome.ok:
                failed.add(table.name)
            result.tables.append(outcome)
        return result

    # --- one table ---------------------------------------------------------------------------

    def run_table(self, table: TableConfig) -> TableResult:
        """One table: settled against its lineage (`_settled`), its pending batches applied in
        order (`_apply_pending`), then recorded; an error stops the table with its cause and the
        command that resumes it."""
        name = self.config.qualified(table)
        outcome = TableResult(table.name)
        log = PublishLog(self.control, name)
        try:
            if self.before_table is not None:
                self.before_table(table, outcome)
            source = make_source(
                table.source, SourceContext.of(self.config, self.backend, self.base_dir, table)
            )
            strategy = make_strategy(table.strategy)
            applied, pending = self._settled(table, name, strategy, source, outcome)
            self._apply_pending(table, name, strategy, source, applied, pending, log, outcome)
        except Exception as exc:  # the table stops with its cause; the other tables go on
            outcome.error, outcome.in_config = error_text(exc), isinstance(exc, ConfigError)
        self._record(log, outcome)
        if outcome.error:
            outcome.resume_command = self._hint(table)
        self.console.table_done(outcome)
        return outcome

    def _settled(
        self, table: TableConfig, name: str, strategy: Strategy, source: Source, outcome: TableResult
    ) -> tuple[set[str], list[BatchRef]]:
        """The table assessed and settled before anything is taken, its layout brought up to date
        and its head noted, the operator's skipped batches recorded, and its configuration
        checked when batches wait: the ids of the batches applied, and the pending ones."""
        # the head before the assessment reads the lineage: a batch another run publishes after
        # it is refused when this run stages it (BatchSteps.check_not_taken), never taken twice
        head = self.backend.head(name) if self.backend.exists(name) else None
        found = self.books.assess(name, table)  # reads only; settled before anything is taken
        applied = self.books.settle(found, outcome, strategy, self._hint(table), self.rolled_back)
        if outcome.reapplied and isinstance(source, Reopening):  # its positions move back
            source.reopen(outcome.reapplied)
        self._layout(table, name)
        self.steps.reconciled[name] = head
        pending = _pending(source, applied)
        if self.skip:  # the operator's decision: these batches are never taken (waiting too)
            skipped = self.books.skip(name, table, _pending(source, applied, waiting=True), self.skip)
            outcome.batches += skipped
            applied |= {b.batch_id for b in skipped}
            pending = _pending(source, applied)
        if pending and not self.accept_config_change:
            self.books.check_config(found)  # batches under two configurations would mix
        return applied, pending

    def _apply_pending(
        self,
        table: TableConfig,
        name: str,
        strategy: Strategy,
        source: Source,
        applied: set[str],
        pending: list[BatchRef],
        log: PublishLog,
        outcome: TableResult,
    ) -> None:
        """The pending batches in order, in groups when the table's backlog may be (backlog.py),
        until none is left, one fails or the run is asked to stop; `applied` takes the id of
        each batch published."""
        self.console.table_started(table.name, len(pending))
        grouped = backlog.why_not(self.config, table, strategy) is None
        while pending and not outcome.error:
            more = False
            size = (lambda: self.grouping.group_size(table)) if grouped else 1
            for refs in backlog.groups(pending, size, first_alone=not self.backend.exists(name)):
                if self.stop.is_set():  # asked to stop: after the commit in progress
                    more = False
                    break
                grouped_results = self.grouping.apply(table, name, strategy, source, refs, log)
                results: list[BatchResult | None] = [None] * len(refs)
                if grouped_results:
                    results = [*grouped_results]
                for ref, batch in zip(refs, results, strict=True):
                    batch = batch or self._apply_with_retries(table, name, strategy, source, ref, log)
                    outcome.batches.append(batch)
                    self.console.batch_done(batch)
                    if batch.status != "published":
                        outcome.error = f"batch {ref.batch_id}: {batch.error}"
                        break
                    applied.add(ref.batch_id)
                    try:
                        more = source.published(ref) or more
                    except Exception as exc:  # the batch is in: the next run records its load
                        outcome.error = f"batch {ref.batch_id} was published; {error_text(exc)}"
                        break
                if outcome.error:
                    break
                if log.due():
                    log.flush()
            # a source with state of its own (a change feed) lists its next batch only now
            pending = _pending(source, applied) if more else []

    def _hint(self, table: TableConfig) -> str:
        """The command that runs the table again."""
        return self.resume_hint.format(table=table.name)

    def _layout(self, table: TableConfig, name: str) -> None:
        """An existing target whose write mode or sort order must change gets it before its next
        batch: one a change feed of the pipeline now reads goes back to copy-on-write
        (config/write_mode.py); a `sort_by` added to its configuration orders its next writes."""
        layout = target_layout(self.config, table, exists=True)
        if (layout.write_mode is None and not layout.sort_by) or not self.backend.exists(name):
            return
        self.backend.lay_out(name, layout)

    def _record(self, log: PublishLog, outcome: TableResult) -> None:
        """The record step of the run's published batches: one commit marks them all published
        (state/published.py). If it fails they stay in the target, and the next run's
        reconciliation completes their record from its lineage."""
        waiting = log.waiting
        try:
            log.flush()
        except Exception as exc:
            error = (
                f"batch(es) {', '.join(waiting)} were published, but recording them failed: "
                f"{error_text(exc)}; the next run completes their record"
            )
            outcome.error = f"{outcome.error}; {error}" if outcome.error else error
            return
        self._tidy()

    def apply_batch(self, table: TableConfig, ref: BatchRef) -> BatchResult:
        """Apply one batch the source does not list (a replay of corrected rows) as a run would
        apply a new batch: after the table is assessed and settled and the configuration checked."""
        name = self.config.qualified(table)
        source = make_source(table.source, SourceContext.of(self.config, self.backend, self.base_dir, table))
        strategy = make_strategy(table.strategy)
        self.control.ensure()
        found = self.books.assess(name, table)
        self.books.settle(found, TableResult(table.name), strategy, self._hint(table), None)
        self.books.check_config(found)
        log = PublishLog(self.control, name)
        result = self._apply_with_retries(table, name, strategy, source, ref, log)
        log.flush()
        return result

    def _tidy(self) -> None:
        """Keep the control tables compact, so a long-running pipeline does not slow down batch
        by batch. Best effort: a failure (e.g. a concurrent writer) is reported, never fatal."""
        try:
            self.control.tidy()
        except Exception as exc:
            self.console.message(f"could not compact the control tables: {error_text(exc)}")

    def _apply_with_retries(
        self,
        table: TableConfig,
        name: str,
        strategy: Strategy,
        source: Source,
        ref: BatchRef,
        log: PublishLog,
    ) -> BatchResult:
        for attempt_no in range(1, MAX_CONFLICT_RETRIES + 1):
            try:
                return self.steps.apply(Attempt(table, name, strategy, ref), source, log)
            except TransientError as exc:
                if attempt_no == MAX_CONFLICT_RETRIES:
                    return BatchResult(name, ref.batch_id, "failed", ref.position, error=error_text(exc))
                if isinstance(exc, StoreInterrupted):  # the store gets a moment to recover
                    time.sleep(STORE_BACKOFF_SECONDS * attempt_no)
        raise AssertionError("unreachable")


def _pending(source: Source, applied: set[str], waiting: bool = False) -> list[BatchRef]:
    """The source's batches that are not applied yet, up to the first that waits (or, with
    `waiting`, those that wait too). A source that keeps state of its own (a change feed's load
    log) is told first about batches found in the target's lineage: it may list other batches
    then."""
    for _ in range(100):
        listed = source.list_batches()
        changed = [ref for ref in listed if ref.batch_id in applied and source.published(ref)]
        if not changed:
            if waiting:
                return [ref for ref in listed if ref.batch_id not in applied]
            return ready(listed, applied)[0]
    raise AssertionError("a source kept changing its batches")
