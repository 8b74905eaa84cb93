"""One batch, in named steps over one :class:`Attempt`:

1. **read**: the batch from its source, transformed, checked row by row, split into rows to load
   and rows to quarantine (reading.py);
2. **stage**: the strategy turns it into a change set, with its status counts;
3. **write**: the change set is written as a staged commit, invisible to readers;
4. **audit**: the staged commit is checked (row count, unique keys, batch rules);
5. **record**: the batch's record travels in the staged commit (written there by `write`); only
   a batch with quarantine rows, or one whose commit could not carry it (Iceberg before 1.12),
   appends its `batches` row now, `staged`, with its quarantine rows: from here a crash loses
   nothing the next run cannot complete;
6. **publish**: the staged commit becomes the table's current snapshot, and the batch's row and
   the effective metrics its publish changes go to the table's :class:`PublishLog`, which writes
   them with the run's other batches in one commit (state/published.py).

A failure before the publish leaves the target as it was (its schema too) and records the
attempt's status and error; after the publish nothing is undone: the next run's reconciliation
completes the record from the target's lineage.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from lakefresh.attempt import MAX_CARRIED, Attempt, json_text, utc_now
from lakefresh.bookkeeping import STATUS_OF, Bookkeeping
from lakefresh.config import write_mode
from lakefresh.errors import (
    AuditError,
    CommitConflictError,
    LakefreshError,
    TakenError,
    TargetError,
    TransientError,
)
from lakefresh.faults import checkpoint
from lakefresh.lakehouse.checkpoints import releasing
from lakefresh.lakehouse.failures import describe
from lakefresh.reading import read_batch
from lakefresh.rules import check_batch_rules
from lakefresh.secrets import redact
from lakefresh.state.control import AttemptRow
from lakefresh.state.published import RECORD_PROPERTY, Published, PublishLog
from lakefresh.strategies.base import shape_target

if TYPE_CHECKING:
    from collections.abc import Callable

    from lakefresh.config.models import PipelineConfig
    from lakefresh.lakehouse.backend import TableBackend
    from lakefresh.results import BatchResult
    from lakefresh.state.control import ControlTables

__all__ = ["Attempt", "BatchSteps", "error_text", "utc_now"]


class BatchSteps:
    """The steps of one batch, over the pipeline's backend and control tables."""

    def __init__(
        self,
        config: PipelineConfig,
        backend: TableBackend,
        control: ControlTables,
        books: Bookkeeping,
        say: Callable[[str], None],
    ) -> None:
        self.config = config
        self.backend = backend
        self.control = control
        self.books = books
        self.say = say  # a message for the operator (the console's)
        # each table's head after this run reconciled it (see `check_not_taken`)
        self.reconciled: dict[str, int | None] = {}

    def check_not_taken(self, name: str, batch_ids: list[str], head: int | None) -> None:
        """Refuse batches another run of the table (overlapping runs) published since this run
        reconciled it; one published later still is caught by the publish's own lineage check."""
        if name in self.reconciled and head != self.reconciled[name]:  # commits since
            published = self.backend.published_batches(name, since=self.reconciled[name])
            if taken := [b for b in batch_ids if b in published]:
                raise TakenError(name, taken)

    @releasing  # the attempt's materialized rows, once it has ended
    def apply(self, a: Attempt, source: Any, log: PublishLog) -> BatchResult:
        """Every step in order; the result says how far the batch got. A TransientError (the
        target moved under the staged commit) propagates: the batch is staged again."""
        try:
            self.read(a, source)
            self.stage(a)
            self.write(a)
            self.audit(a)
            self.record(a)
            self.publish(a, log)
            return a.result
        except TransientError:
            if a.recorded:  # it is staged again as a new attempt: this one never publishes
                self.control.mark_abandoned(a.name, [AttemptRow(a.ref.batch_id, a.id, "staged", None)])
            raise
        except Exception as exc:
            self.failed(a, exc)
            return a.result

    # --- the steps ---------------------------------------------------------------------------

    def read(self, a: Attempt, source: Any) -> None:
        clock = time.perf_counter()
        a.exists = self.backend.exists(a.name)
        a.target_schema = self.backend.schema(a.name) if a.exists else None
        # what the change set is computed against, and what undo_since goes back to
        a.head = self.backend.head(a.name) if a.exists else None
        self.check_not_taken(a.name, [a.ref.batch_id], a.head)
        a.rows = read_batch(self.config, self.backend, a.table, a.strategy, source, a.ref, a.target_schema)
        if a.rows.batch_time is not None:  # the batch's rows say when it was produced
            a.ref = replace(a.ref, batch_time=a.rows.batch_time)
        a.result.quarantined, a.result.skeletons = a.rows.quarantined, a.rows.skeletons
        a.result.rules = dict(a.rows.rules)
        a.times.read = time.perf_counter() - clock
        checkpoint("after_read", a.ref.batch_id)

    def stage(self, a: Attempt) -> None:
        assert a.rows is not None
        clock = time.perf_counter()
        a.ctx = a.rows.stage_context(self.backend, a.name, a.ref.batch_id, a.ref.batch_time, a.exists)
        a.change = change = a.strategy.stage(a.ctx, a.rows.good)
        if (at_once := self.backend.commits_at_once(a.name)) and a.exists:
            unmoved(a, a.head, self.backend.head(a.name))
        properties = write_mode.at_creation(self.config, a.table)
        shape_target(a.ctx, change, a.table.partition_by, properties, sort_by=a.table.sort_by)
        a.shaped = self.backend.head(a.name) if at_once else a.head
        a.result.counts = dict(change.counts)
        a.result.record_count = change.record_count + a.result.quarantined
        a.result.duplicates = change.duplicates
        if change.range:
            a.result.range_start, a.result.range_end = change.range
        a.times.stage = time.perf_counter() - clock
        checkpoint("after_stage", a.ref.batch_id)

    def write(self, a: Attempt) -> None:
        ctx, change = a.ctx, a.change
        assert ctx is not None and change is not None
        clock = time.perf_counter()
        parent = self.backend.head(a.name)
        if self.backend.commits_at_once(a.name):
            unmoved(a, a.shaped, parent)
        a.parent_rows = self.backend.live_records(a.name, parent) if parent is not None else 0
        carried = json_text(a.carried())
        # every snapshot's summary is rewritten with the table's metadata at each commit: a long
        # record (a batch of many files) takes the staged row instead
        record = ctx.commit_properties() | ({RECORD_PROPERTY: carried} if len(carried) <= MAX_CARRIED else {})
        if a.result.quarantined and self.backend.commits_at_once(a.name):
            self._record_rows(a)  # visible at the write: its bad rows are linked before it
        a.staged = self.backend.stage(a.name, a.ref.batch_id, lambda: a.strategy.write(ctx, change), record)
        if not self.backend.commits_at_once(a.name):
            # another writer committed after the batch's change set read the target: the change
            # set may be wrong (an append of new keys would not see a key added meanwhile), and
            # the staged commit is never published
            unmoved(a, a.head, a.staged.parent_id)
        a.result.files_written = a.staged.files_written
        a.result.bytes_written = a.staged.bytes_written
        a.times.stage += time.perf_counter() - clock
        checkpoint("after_write", a.ref.batch_id)

    def audit(self, a: Attempt) -> None:
        change, staged, rows = a.change, a.staged, a.rows
        assert change is not None and staged is not None and rows is not None
        clock = time.perf_counter()
        audit = self.config.audit_for(a.table)
        if audit.row_count:
            expected = change.expected_rows
            if expected is None and change.expected_delta is not None:
                expected = a.parent_rows + change.expected_delta
            if expected is not None and staged.live_records != expected:
                raise AuditError(
                    f"staged snapshot {staged.snapshot_id} holds {staged.live_records} rows, the "
                    f"change set predicts {expected}; nothing was published"
                )
        keys = a.strategy.unique_keys()
        if audit.unique_keys and keys:
            from pyspark.sql import functions as F

            df = self.backend.read(a.name, staged.snapshot_id)
            dupes = df.groupBy(*keys).count().filter(F.col("count") > 1).limit(5).collect()
            if dupes:
                shown = [tuple(r[k] for k in keys) for r in dupes]
                raise AuditError(f"staged snapshot has duplicate keys {shown}; nothing was published")
        a.result.rules.update(check_batch_rules(self.backend, a.table, rows.good, a.name, staged.snapshot_id))
        a.times.audit = time.perf_counter() - clock
        checkpoint("after_audit", a.ref.batch_id)

    def record(self, a: Attempt) -> None:
        """The attempt's row goes to the log now, `staged`, unless its record travels in the
        staged commit (Iceberg 1.12 on) and it has no quarantine rows to link: then the row is
        written with the run's others after the publish, and a crash before that loses nothing
        (the next run's reconciliation reads the record from the published commit)."""
        assert a.rows is not None and a.staged is not None
        if not a.recorded and (a.result.quarantined or RECORD_PROPERTY not in a.staged.properties):
            self._record_rows(a)
        checkpoint("after_record_staged", a.ref.batch_id)

    def _record_rows(self, a: Attempt) -> None:
        """The attempt's `staged` row, and its quarantine rows, which name the attempt."""
        assert a.rows is not None
        self.control.record_attempt(a.row("staged", **a.counts()))
        a.recorded = True
        if a.result.quarantined:
            self.control.record_quarantine(a.name, a.ref.batch_id, a.id, a.rows.quarantine_rows())

    def publish(self, a: Attempt, log: PublishLog) -> None:
        assert a.staged is not None and a.change is not None
        clock = time.perf_counter()
        a.publishing = True
        snapshot_id = self.backend.publish(a.staged)
        a.result.snapshot_id = snapshot_id
        self.reconciled[a.name] = snapshot_id  # its own commit: `check_not_taken` reads from here
        published_at = utc_now()
        checkpoint("after_publish", a.ref.batch_id)
        effective = self.books.effective(a.name, a.strategy, a.change, a.ref.batch_id, snapshot_id, log)
        a.result.effective_count = effective[0].count
        a.times.publish = time.perf_counter() - clock
        mark = Published(a.ref.batch_id, a.id, snapshot_id, published_at, a.times.publish)
        row = None
        if not a.recorded:  # its row is written with the run's others, published
            row = a.row("published", **mark.columns())
        log.add(mark, a.change.range, effective, row)
        a.result.status = "published"

    # --- a failure ---------------------------------------------------------------------------

    def failed(self, a: Attempt, exc: Exception) -> None:
        result = a.result
        result.status = STATUS_OF.get(type(exc), "failed")
        result.error = error_text(exc)
        if result.snapshot_id is not None:
            # The batch is in the target: only its record is incomplete, and the next run's
            # reconciliation with the lineage completes it. Nothing is rolled back.
            result.error += f" (it was published as snapshot {result.snapshot_id}; the next run records it)"
            return
        if a.publishing and not isinstance(exc, TakenError):  # refused before it: not published
            # The publish failed with an unknown outcome (a commit, or the read of the lineage
            # after it): nothing is undone, as after a crash at that point, and the next run's
            # reconciliation completes the batch's record or abandons it, by the lineage.
            result.error += " (its publish may have happened: the next run settles it by the lineage)"
            return
        if a.staged is None:  # it wrote nothing: recorded whatever its undo meets
            self._record_failure(a)
        self.restore_schema(a)  # a write its undo cannot take back stays recorded, as staged
        if a.staged is not None:
            self._record_failure(a)

    def restore_schema(self, a: Attempt, batch_id: str | None = None) -> None:
        """A batch that failed leaves the target as it found it: what a format without staged
        commits (Delta) made visible is undone; the columns it added are dropped again
        (metadata only), and a table it created, holding no batch, is dropped. A widened type
        stays: a table format cannot narrow a column back (int -> bigint is kept)."""
        name = a.name
        try:
            self.backend.undo_since(name, a.head, batch_id or a.ref.batch_id)
        except Exception as exc:  # its commit stays visible: the table stops, nothing more is taken
            raise TargetError(
                f"batch {a.ref.batch_id!r} failed and its commit to {name} could not be undone "
                f"({error_text(exc)}); the table holds it: roll it back (lakefresh rollback) or "
                "keep it (the next run records it)"
            ) from exc
        try:
            if not self.backend.exists(name):
                return
            if not a.exists:
                if self.backend.head(name) is None:
                    self.backend.drop(name)
                return
            assert a.target_schema is not None
            known = {f.name.lower() for f in a.target_schema.fields}
            added = [f.name for f in self.backend.schema(name).fields if f.name.lower() not in known]
            if added:
                self.backend.drop_columns(name, added)
        except Exception as exc:  # the batch's own error is the one to report
            self.say(f"could not restore the schema of {name}: {error_text(exc)}")

    def _record_failure(self, a: Attempt) -> None:
        result = a.result
        try:
            if a.recorded:
                self.control.mark_failed(a.name, a.id, result.status, result.error)
            else:
                self.control.record_attempt(a.row(result.status, error=result.error))
        except Exception as exc:  # the log is secondary to the error being reported
            self.say(f"could not record the failure in the batches table: {exc}")


def unmoved(a: Attempt, head: int | None, now: int | None) -> None:
    """The target must still be at the head the batch's change set read, or the batch is staged
    again. Iceberg's staged commit names its parent; Delta commits at once, leaving no staged
    commit to refuse, so there the head is checked before the write (against the one the
    batch's own create or evolve left): a commit landing after that, as the write starts, is
    unseen."""
    if now != head:
        raise CommitConflictError(
            f"{a.name} moved while batch {a.ref.batch_id!r} was staged; it is staged again"
        )


def error_text(exc: BaseException) -> str:
    """An error in one line: lakefresh's own as written (secrets redacted), any other as its root
    cause (the JVM trace only with --debug)."""
    if isinstance(exc, LakefreshError):
        return redact(str(exc))
    return describe(exc)
