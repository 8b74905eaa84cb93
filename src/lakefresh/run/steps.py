"""One batch, in named steps over one :class:`Attempt`:

1. **read**: the batch from its source, transformed, checked row by row, split into rows to load
   and rows to quarantine (reading.py);
2. **stage**: the strategy turns it into a change set, with its status counts, and the table is
   created or evolved for it;
3. **commit**: the table's one commit protocol (lakehouse/commit.py) writes the change set as one
   commit tagged with the batch, **audits** it (row count, unique keys, batch rules), **records**
   what must outlive a crash before the commit becomes visible, and **publishes** it on the head
   the change set read. The batch's record travels in its commit; only a batch with quarantine
   rows, or one whose commit could not carry it (Iceberg before 1.12), appends its `batches`
   row then, `staged`, with its quarantine rows: from there a crash loses nothing the next run
   cannot complete;
4. **published**: the batch's row and the effective metrics its publish changes go to the
   table's :class:`PublishLog`, which writes them with the run's other batches in one commit
   (state/published.py).

A failure before the publish leaves the target as it was (its schema too) and records the
attempt's status and error; after the publish nothing is undone: the next run's reconciliation
completes the record from the target's lineage.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING

from lakefresh.clock import utc_now
from lakefresh.errors import (
    AuditError,
    ConfigError,
    LakefreshError,
    StoreInterrupted,
    TakenError,
    TargetError,
    TransientError,
)
from lakefresh.faults import checkpoint
from lakefresh.lakehouse.backend import target_layout
from lakefresh.lakehouse.checkpoints import releasing
from lakefresh.lakehouse.commit import Transaction
from lakefresh.lakehouse.failures import describe, is_interrupted_io
from lakefresh.run.attempt import MAX_CARRIED, Attempt, json_text
from lakefresh.run.bookkeeping import STATUS_OF, Bookkeeping
from lakefresh.run.reading import read_batch
from lakefresh.run.rules import check_batch_rules
from lakefresh.secrets import redact
from lakefresh.state import tombstones
from lakefresh.state.control import AttemptRow
from lakefresh.state.published import RECORD_PROPERTY, Published, PublishLog
from lakefresh.strategies.base import shape_target

if TYPE_CHECKING:
    from collections.abc import Callable

    from lakefresh.config.models import PipelineConfig
    from lakefresh.lakehouse.backend import StagedCommit, TableBackend
    from lakefresh.results import BatchResult
    from lakefresh.sources import Source
    from lakefresh.state.control import ControlTables

__all__ = ["Attempt", "BatchSteps", "error_text"]


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

    def _table_named(self, name: str) -> str:
        """A table a rule names, as Spark reads it: a table of the pipeline, or `namespace.table`."""
        known = {t.name for t in self.config.tables}
        return self.backend.qualified(
            self.config.qualified(self.config.table(name)) if name in known else name
        )

    @releasing  # the attempt's materialized rows, once it has ended
    def apply(self, a: Attempt, source: Source, log: PublishLog) -> BatchResult:
        """Every step in order; the result says how far the batch got. A TransientError (the
        target moved under the change set) propagates: the batch is staged again. So does a
        request to the store cut off or throttled before the publish began (StoreInterrupted):
        nothing of the batch is in the target then."""
        try:
            self.read(a, source)
            self.stage(a)
            self.commit(a)
            self.published(a, log)
            return a.result
        except TransientError:
            self._abandon(a)
            raise
        except Exception as exc:
            if not a.publishing and is_interrupted_io(exc):
                interrupted = StoreInterrupted(f"the store cut off a request: {describe(exc)}")
                try:
                    self._abandon(a)
                except Exception:  # the store is still out of reach: the batch fails here
                    pass
                else:
                    raise interrupted from exc
            self.failed(a, exc)
            return a.result

    def _abandon(self, a: Attempt) -> None:
        """An attempt that is staged again as a new one never publishes: its `staged` row says so."""
        if a.recorded:
            self.control.mark_abandoned(a.name, [AttemptRow(a.ref.batch_id, a.id, "staged", None)])

    # --- the steps ---------------------------------------------------------------------------

    def read(self, a: Attempt, source: Source) -> None:
        clock = time.perf_counter()
        a.txn = Transaction(self.backend, a.name, f"batch {a.ref.batch_id!r}")
        a.exists, a.head = a.txn.existed, a.txn.head  # what the change set is computed against
        a.target_schema = self.backend.schema(a.name) if a.exists else None
        self.check_not_taken(a.name, [a.ref.batch_id], a.head)
        a.rows = read_batch(self.config, self.backend, a.table, a.strategy, source, a.ref, a.target_schema)
        if a.rows.batch_time is not None:  # the batch's rows say when it was produced
            a.ref = replace(a.ref, batch_time=a.rows.batch_time)
        a.result.quarantined, a.result.skeletons = a.rows.quarantined, a.rows.skeletons
        a.result.rules = dict(a.rows.rules)
        a.times.read = time.perf_counter() - clock
        checkpoint("after_read", a.ref.batch_id)

    def stage(self, a: Attempt) -> None:
        assert a.rows is not None and a.txn is not None
        clock = time.perf_counter()
        a.ctx = ctx = a.rows.stage_context(self.backend, a.name, a.ref.batch_id, a.ref.batch_time, a.exists)
        a.change = change = a.strategy.stage(ctx, a.rows.good)
        layout = target_layout(self.config, a.table)
        a.txn.shape(lambda: shape_target(ctx, change, layout))
        a.result.counts = dict(change.counts)
        a.result.record_count = change.record_count + a.result.quarantined
        a.result.duplicates = change.duplicates
        if change.range:
            a.result.range_start, a.result.range_end = change.range
        a.times.stage = time.perf_counter() - clock
        checkpoint("after_stage", a.ref.batch_id)

    def commit(self, a: Attempt) -> None:
        """Write, audit, record and publish, as the table's format commits (lakehouse/commit.py).
        The batch's record travels in its commit; the log gets its row first only when it has
        quarantine rows to link, or when its commit cannot carry it (Iceberg before 1.12)."""
        ctx, change, txn = a.ctx, a.change, a.txn
        assert ctx is not None and change is not None and txn is not None
        clock = time.perf_counter()
        a.parent_rows = txn.parent_rows()
        carried = json_text(a.carried())
        # every snapshot's summary is rewritten with the table's metadata at each commit: a long
        # record (a batch of many files) takes the staged row instead
        record = ctx.commit_properties() | ({RECORD_PROPERTY: carried} if len(carried) <= MAX_CARRIED else {})
        written = time.perf_counter()

        def audited(staged: StagedCommit) -> None:
            nonlocal written
            a.result.files_written, a.result.bytes_written = staged.files_written, staged.bytes_written
            written = time.perf_counter()
            checkpoint("after_write", a.ref.batch_id)
            self.audit(a, staged)

        txn.commit(
            a.ref.batch_id,
            lambda: a.strategy.write(ctx, change),
            audited,
            lambda s: self.record(a, s),
            record,
        )
        a.times.stage += written - clock
        a.times.publish = time.perf_counter() - written - a.times.audit

    def audit(self, a: Attempt, staged: StagedCommit) -> None:
        change, rows = a.change, a.rows
        assert change is not None and rows is not None
        clock = time.perf_counter()
        audit = self.config.audit_for(a.table)
        if audit.row_count:
            expected = change.expected_rows
            if expected is None and change.expected_delta is not None:
                expected = a.parent_rows + change.expected_delta
            if expected is not None and staged.live_records != expected:
                raise AuditError(
                    f"staged version {staged.version} holds {staged.live_records} rows, the "
                    f"change set predicts {expected}; nothing was published"
                )
        keys = a.strategy.unique_keys()
        if audit.unique_keys and keys:
            from pyspark.sql import functions as F

            df = self.backend.read(a.name, staged.version)
            dupes = df.groupBy(*keys).count().filter(F.col("count") > 1).limit(5).collect()
            if dupes:
                shown = [tuple(r[k] for k in keys) for r in dupes]
                raise AuditError(f"staged version has duplicate keys {shown}; nothing was published")
        found = check_batch_rules(self.backend, a.table, rows.good, a.name, staged.version, self._table_named)
        a.result.rules.update(found)
        a.times.audit = time.perf_counter() - clock
        checkpoint("after_audit", a.ref.batch_id)

    def record(self, a: Attempt, staged: StagedCommit | None) -> None:
        """The attempt's row goes to the log now, `staged`, when it has quarantine rows to link or
        when its staged commit could not carry its record (Iceberg before 1.12): otherwise the
        row is written with the run's others after the publish, and a crash before that loses
        nothing (the next run's reconciliation reads the record from the published commit).
        `staged` is None before a write visible at once (Delta), whose commit carries it. The
        keys the batch deletes are kept out of sight first (state/tombstones.py), replacing
        an earlier attempt's."""
        assert a.rows is not None and a.change is not None
        if a.change.tombstones is not None:  # they count once the commit is in the target
            tombstones.keep(self.backend, a.name, a.ref.batch_id, a.change.tombstones)
        uncarried = staged is not None and RECORD_PROPERTY not in staged.properties
        if not a.recorded and (a.result.quarantined or uncarried):
            self.control.record_attempt(a.row("staged", **a.counts()))
            a.recorded = True
            if a.result.quarantined:
                self.control.record_quarantine(a.name, a.ref.batch_id, a.id, a.rows.quarantine_rows())
        checkpoint("after_record_staged", a.ref.batch_id)

    def published(self, a: Attempt, log: PublishLog) -> None:
        """The batch is the table's current state: its mark and effective metrics go to the
        table's PublishLog, written with the run's others."""
        assert a.txn is not None and a.txn.version is not None and a.change is not None
        clock = time.perf_counter()
        version = a.result.version = a.txn.version
        self.reconciled[a.name] = version  # its own commit: `check_not_taken` reads from here
        published_at = utc_now()
        checkpoint("after_publish", a.ref.batch_id)
        effective = self.books.effective(a.name, a.strategy, a.change, a.ref.batch_id, version, log)
        a.result.effective_count = effective[0].count
        a.times.publish += time.perf_counter() - clock
        mark = Published(a.ref.batch_id, a.id, version, published_at, a.times.publish)
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
        result.in_config = isinstance(exc, ConfigError)
        if result.version is not None:
            # The batch is in the target: only its record is incomplete, and the next run's
            # reconciliation with the lineage completes it. Nothing is rolled back.
            result.error += f" (it was published as version {result.version}; the next run records it)"
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
            if a.txn is not None:
                a.txn.abort(batch_id or a.ref.batch_id)
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


def error_text(exc: BaseException) -> str:
    """An error in one line: lakefresh's own as written (secrets redacted), any other as its root
    cause (the JVM trace only with --debug)."""
    if isinstance(exc, LakefreshError):
        return redact(str(exc))
    return describe(exc)
