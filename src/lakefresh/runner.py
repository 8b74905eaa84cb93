"""The runner: for each table in dependency order, each new batch goes
read -> stage -> write (staged, invisible) -> audit -> record -> publish -> record.

Exactly once. A batch is *applied* when its id is in the target's current lineage (a published
snapshot carries the batch id it was staged with). Before anything else, the runner reconciles the
`batches` log with that lineage: published batches whose log says `staged` become `published`;
published batches with no log row get a recovered row; staged attempts that never published are
marked `abandoned`. Then it takes every batch the source lists that is not applied, in order.
A crash at any point therefore leaves the target at its last published batch, and the next run
continues from there. A re-run with nothing new writes nothing.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lakefresh.bookkeeping import STATUS_OF, Bookkeeping
from lakefresh.config.fingerprint import fingerprint
from lakefresh.config.models import PipelineConfig, TableConfig, dependency_order
from lakefresh.errors import AuditError, ConfigError, LakefreshError, TransientError
from lakefresh.faults import checkpoint
from lakefresh.lakehouse.backend import StagedCommit, TableBackend
from lakefresh.lakehouse.failures import describe
from lakefresh.reading import read_batch
from lakefresh.results import BatchResult, PhaseTimes, RunResult, TableResult
from lakefresh.rules import check_batch_rules
from lakefresh.secrets import redact
from lakefresh.sources import BatchRef, Source, SourceContext, make_source
from lakefresh.state.control import AttemptRow, ControlTables
from lakefresh.strategies import ChangeSet, Rebuild, StageContext, Strategy, make_strategy
from lakefresh.strategies.base import shape_target

if TYPE_CHECKING:
    from lakefresh.console import Console

MAX_CONFLICT_RETRIES = 3
ROLLED_BACK_DECISIONS = ("forget", "reapply")


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
        self.books = Bookkeeping(backend, control)

    def run(
        self,
        only: list[str] | None = None,
        stop: threading.Event | None = None,
        rolled_back: str | None = None,
        skip: list[str] | None = None,
        accept_config_change: bool = False,
    ) -> RunResult:
        """Apply every new batch of every table (or of `only`). `rolled_back` decides what
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
        name = self.config.qualified(table)
        outcome = TableResult(table.name)
        try:
            source = make_source(
                table.source, SourceContext.of(self.config, self.backend, self.base_dir, table)
            )
            strategy = make_strategy(table.strategy)
            hint = self.resume_hint.format(table=table.name)
            applied = self.books.reconcile(name, outcome, strategy, hint, self.rolled_back)
            pending = _pending(source, applied)
            if self.skip:  # the operator's decision: these batches are never taken
                skipped = self.books.skip(name, table, pending, self.skip)
                outcome.batches += skipped
                applied |= {b.batch_id for b in skipped}
                pending = _pending(source, applied)
            if pending and not self.accept_config_change:
                self.books.check_config(name, table)  # batches under two configurations would mix
            self.console.table_started(table.name, len(pending))
            while pending and not outcome.error:
                more = False
                for ref in pending:
                    if self.stop.is_set():  # asked to stop: after the commit in progress
                        more = False
                        break
                    self._tidy()
                    batch = self._apply_with_retries(table, name, strategy, source, ref)
                    outcome.batches.append(batch)
                    self.console.batch_done(batch)
                    if batch.status != "published":
                        outcome.error = f"batch {ref.batch_id}: {batch.error}"
                        break
                    applied.add(ref.batch_id)
                    try:
                        more = source.published(ref) or more
                    except Exception as exc:  # the batch is in: the next run records its load
                        outcome.error = f"batch {ref.batch_id} was published; {_error_text(exc)}"
                        break
                # a source with state of its own (a change feed) lists its next batch only now
                pending = _pending(source, applied) if more else []
        except Exception as exc:  # the table stops with its cause; the other tables go on
            outcome.error = _error_text(exc)
        if outcome.error:
            outcome.resume_command = self.resume_hint.format(table=table.name)
        self.console.table_done(outcome)
        return outcome

    def apply_batch(self, table: TableConfig, ref: BatchRef) -> BatchResult:
        """Apply one batch the source does not list (a replay of corrected rows) as a run would
        apply a new batch: after the log is reconciled and the configuration checked."""
        name = self.config.qualified(table)
        source = make_source(table.source, SourceContext.of(self.config, self.backend, self.base_dir, table))
        strategy = make_strategy(table.strategy)
        self.control.ensure()
        self.books.reconcile(
            name, TableResult(table.name), strategy, self.resume_hint.format(table=table.name), None
        )
        self.books.check_config(name, table)
        return self._apply_with_retries(table, name, strategy, source, ref)

    def _tidy(self) -> None:
        """Keep the control tables compact, so a long-running pipeline does not slow down batch
        by batch. Best effort: a failure (e.g. a concurrent writer) is reported, never fatal."""
        try:
            self.control.tidy()
        except Exception as exc:
            self.console.message(f"could not compact the control tables: {_error_text(exc)}")

    def _apply_with_retries(
        self, table: TableConfig, name: str, strategy: Strategy, source: Any, ref: BatchRef
    ) -> BatchResult:
        for attempt_no in range(1, MAX_CONFLICT_RETRIES + 1):
            try:
                return self._apply(table, name, strategy, source, ref)
            except TransientError as exc:
                if attempt_no == MAX_CONFLICT_RETRIES:
                    return BatchResult(name, ref.batch_id, "failed", ref.position, error=_error_text(exc))
        raise AssertionError("unreachable")

    # --- one batch ---------------------------------------------------------------------------

    def _apply(
        self, table: TableConfig, name: str, strategy: Strategy, source: Any, ref: BatchRef
    ) -> BatchResult:
        if ref.replay.get("backfill") == "overwrite":
            strategy = Rebuild(strategy)  # the batch builds the table anew, then replaces it
        attempt = uuid.uuid4().hex[:16]
        started = datetime.now(UTC).replace(tzinfo=None)
        times = PhaseTimes()
        result = BatchResult(name, ref.batch_id, "failed", ref.position, seconds=times)
        row: dict[str, Any] = {
            "table_name": name,
            "batch_id": ref.batch_id,
            "attempt": attempt,
            "source_kind": table.source.kind,
            "strategy": table.strategy.kind,
            "source_position": ref.position,
            "replay": _json(ref.replay),
            "started_at": started,
        }
        row["config_fingerprint"], row["config"] = fingerprint(table)
        recorded = False
        try:
            clock = time.perf_counter()
            exists = self.backend.exists(name)
            target_schema = self.backend.schema(name) if exists else None
            read = read_batch(self.config, self.backend, table, strategy, source, ref, target_schema)
            good, result.quarantined, result.skeletons = read.good, read.quarantined, read.skeletons
            result.rules = dict(read.rules)
            times.read = time.perf_counter() - clock
            checkpoint("after_read", ref.batch_id)

            clock = time.perf_counter()
            ctx = StageContext(self.backend, name, ref.batch_id, ref.batch_time, exists)
            change = strategy.stage(ctx, good)
            properties = {**self.config.defaults.table_properties, **table.properties}
            shape_target(ctx, change, table.partition_by, properties)
            result.counts = dict(change.counts)
            result.record_count = change.record_count + result.quarantined
            result.duplicates = change.duplicates
            if change.range:
                result.range_start, result.range_end = change.range
            checkpoint("after_stage", ref.batch_id)

            parent = self.backend.head(name)
            parent_rows = self.backend.live_records(name, parent) if parent else 0
            staged = self.backend.stage(name, ref.batch_id, lambda: strategy.write(ctx, change))
            result.files_written = staged.files_written
            result.bytes_written = staged.bytes_written
            times.stage = time.perf_counter() - clock
            checkpoint("after_write", ref.batch_id)

            clock = time.perf_counter()
            row.update(self._row_counts(result, staged))
            self._audit(table, name, strategy, change, staged, parent_rows)
            result.rules.update(check_batch_rules(self.backend, table, good, name, staged.snapshot_id))
            row["rule_results"] = dict(result.rules) or None
            times.audit = time.perf_counter() - clock
            checkpoint("after_audit", ref.batch_id)

            row.update(status="staged", **_times(times))
            self.control.record_attempt(row)
            recorded = True
            if result.quarantined:
                self.control.record_quarantine(name, ref.batch_id, attempt, read.quarantine_rows())
            checkpoint("after_record_staged", ref.batch_id)

            clock = time.perf_counter()
            snapshot_id = self.backend.publish(staged)
            result.snapshot_id = snapshot_id
            checkpoint("after_publish", ref.batch_id)
            effective = self.books.effective(name, strategy, change, ref.batch_id, snapshot_id)
            result.effective_count = effective[0].count
            times.publish = time.perf_counter() - clock
            self.control.mark_published(name, ref.batch_id, attempt, snapshot_id, times.publish, effective)
            checkpoint("after_record", ref.batch_id)
            result.status = "published"
            return result
        except TransientError:
            if recorded:  # it is staged again as a new attempt: this one never publishes
                self.control.mark_abandoned(name, [AttemptRow(ref.batch_id, attempt, "staged", None)])
            raise
        except Exception as exc:
            result.status = STATUS_OF.get(type(exc), "failed")
            result.error = _error_text(exc)
            if result.snapshot_id is not None:
                # The batch is in the target: only its record is incomplete, and the next run's
                # reconciliation with the lineage completes it. Nothing is rolled back.
                result.error += (
                    f" (the batch was published as snapshot {result.snapshot_id}; the next run "
                    "completes its record)"
                )
            else:
                self._record_failure(row, result, times, recorded)
                self._restore_schema(name, exists, target_schema)
            return result

    def _audit(
        self,
        table: TableConfig,
        name: str,
        strategy: Strategy,
        change: ChangeSet,
        staged: StagedCommit,
        parent_rows: int,
    ) -> None:
        audit = self.config.audit_for(table)
        if audit.row_count:
            expected = change.expected_rows
            if expected is None and change.expected_delta is not None:
                expected = parent_rows + change.expected_delta
            if expected is not None and staged.live_records != expected:
                raise AuditError(
                    f"staged snapshot {staged.snapshot_id} holds {staged.live_records} rows, the "
                    f"change set predicts {expected}; nothing was published"
                )
        keys = strategy.unique_keys()
        if audit.unique_keys and keys:
            from pyspark.sql import functions as F

            df = self.backend.read(name, staged.snapshot_id)
            dupes = df.groupBy(*keys).count().filter(F.col("count") > 1).limit(5).collect()
            if dupes:
                shown = [tuple(r[k] for k in keys) for r in dupes]
                raise AuditError(f"staged snapshot has duplicate keys {shown}; nothing was published")

    def _row_counts(self, result: BatchResult, staged: StagedCommit) -> dict[str, Any]:
        return {
            "staged_snapshot_id": staged.snapshot_id,
            "record_count": result.record_count,
            "quarantined_count": result.quarantined,
            "duplicate_count": result.duplicates,
            "status_counts": dict(result.counts),
            "range_start": result.range_start,
            "range_end": result.range_end,
            "files_written": result.files_written,
            "bytes_written": result.bytes_written,
        }

    def _restore_schema(self, name: str, existed: bool, before: Any) -> None:
        """A batch that failed leaves the target's schema as it found it: the columns it added
        are dropped again (metadata only), and a table it created, holding no batch, is dropped.
        A widened type stays: a table format cannot narrow a column back (int -> bigint is kept)."""
        try:
            if not self.backend.exists(name):
                return
            if not existed:
                if self.backend.head(name) is None:
                    self.backend.drop(name)
                return
            known = {f.name.lower() for f in before.fields}
            added = [f.name for f in self.backend.schema(name).fields if f.name.lower() not in known]
            if added:
                self.backend.drop_columns(name, added)
        except Exception as exc:  # the batch's own error is the one to report
            self.console.message(f"could not restore the schema of {name}: {_error_text(exc)}")

    def _record_failure(
        self, row: dict[str, Any], result: BatchResult, times: PhaseTimes, recorded: bool
    ) -> None:
        try:
            if recorded:
                self.control.mark_failed(row["table_name"], row["attempt"], result.status, result.error)
            else:
                row.update(status=result.status, error=result.error, **_times(times))
                self.control.record_attempt(row)
        except Exception as exc:  # the log is secondary to the error being reported
            self.console.message(f"could not record the failure in the batches table: {exc}")


def _pending(source: Source, applied: set[str]) -> list[BatchRef]:
    """The source's batches that are not applied yet. A source that keeps state of its own (a
    change feed's load log) is told first about batches found in the target's lineage: it may
    list other batches then."""
    for _ in range(100):
        listed = source.list_batches()
        changed = [ref for ref in listed if ref.batch_id in applied and source.published(ref)]
        if not changed:
            return [ref for ref in listed if ref.batch_id not in applied]
    raise AssertionError("a source kept changing its batches")


def _times(times: PhaseTimes) -> dict[str, float]:
    return {
        "read_seconds": round(times.read, 3),
        "stage_seconds": round(times.stage, 3),
        "audit_seconds": round(times.audit, 3),
    }


def _json(value: object) -> str:
    return json.dumps(value, default=str, sort_keys=True)


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, LakefreshError):
        return redact(str(exc))
    return describe(exc)  # the root cause in one line; the JVM trace only with --debug
