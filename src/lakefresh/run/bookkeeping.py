"""The runner's bookkeeping: the `batches` log kept in line with the target's lineage.

- :meth:`Bookkeeping.settle` runs before a table's batches and writes what its assessment found
  (assessment.py, which reads only): published batches the log missed are recorded (a crash
  between publish and record), attempts that never published are abandoned, and batches a
  rollback of the target removed are marked and held until the operator decides (forget them,
  or apply them again).
- :meth:`Bookkeeping.effective` computes, after a publish, the batch's effective metrics and
  those of the earlier batches it superseded: rows still in the target, ranges still owned.
- :meth:`Bookkeeping.recount` recounts them from the target when the log cannot say.
- :meth:`Bookkeeping.skip` records the operator's decision never to take some waiting batches
  (`skipped`), such as a batch its table refuses (`bad_rows: refuse`, see :func:`refusal`).
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any

from lakefresh.clock import utc_now
from lakefresh.columns import BATCH_ID_COLUMN, FILE_COLUMN, LINE_COLUMN, REASON_COLUMN
from lakefresh.errors import AuditError, BatchRefused, ConfigChanged, ConfigError, LineageError, TargetError
from lakefresh.lakehouse.backend import TableBackend
from lakefresh.ranges import effective_ranges
from lakefresh.results import BatchResult, TableResult
from lakefresh.run.assessment import Assessment, Recovered, assess
from lakefresh.state.batch_row import BatchRow
from lakefresh.state.control import ControlTables
from lakefresh.state.published import Effective, Published, PublishedBatch, PublishLog
from lakefresh.strategies import ChangeSet, Strategy

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from lakefresh.config.models import TableConfig
    from lakefresh.sources.base import BatchRef
    from lakefresh.strategies.group import GroupChange

# The status a failed attempt is recorded with, by the error that ended it (else `failed`).
STATUS_OF: dict[type[Exception], str] = {AuditError: "audit_failed", BatchRefused: "refused"}


def refusal(batch_id: str, table: str, bad: DataFrame, count: int, why: str | None = None) -> str:
    """Why a batch is refused (`bad_rows: refuse`, or `why`: over `max_bad_rows`): how many bad
    rows, the first three with where they are and why, and the ways on."""
    first = bad.select(FILE_COLUMN, LINE_COLUMN, REASON_COLUMN).orderBy(FILE_COLUMN, LINE_COLUMN).take(3)
    shown = "; ".join(f"{str(r[0]).rsplit('/', 1)[-1]} line {r[1]}: {r[2]}" for r in first)
    rows = f"{count} bad row(s) ({shown}{'; ...' if count > 3 else ''})"
    skip = f"skip it for good: lakefresh run PIPELINE --table {table} --skip-batch {batch_id}"
    if why is not None:
        return (
            f"{rows}: {why}; table {table!r} refuses the batch and nothing was written. Fix the "
            f"batch or the table's declared types and run again (the batch waits), or {skip}"
        )
    return (
        f"{rows} and table {table!r} refuses batches with bad rows (bad_rows: refuse): nothing "
        f"was written. Fix the batch and run again, or {skip}"
    )


class Bookkeeping:
    def __init__(self, backend: TableBackend, control: ControlTables) -> None:
        self.backend = backend
        self.control = control

    def assess(self, name: str, table: TableConfig) -> Assessment:
        """What the target's lineage and the log say of the table, written nowhere (assessment.py)."""
        return assess(self.backend, self.control, name, table)

    def settle(
        self, found: Assessment, outcome: TableResult, strategy: Strategy, hint: str, decision: str | None
    ) -> set[str]:
        """Write what the assessment found, bringing the `batches` log in line with the target's
        lineage; return the batch ids not to take again (applied, or forgotten after a rollback).
        A dropped target, or a rolled-back one without the operator's `decision`, stops here."""
        name = found.name
        if found.dropped:
            raise TargetError(
                f"{name} does not exist, but its log holds {found.dropped} published batch(es): the "
                f"table was dropped. Make it again from its batches: {hint} --full-refresh"
            )
        for verb in found.cut_verbs:  # first: what they did decides which batches are live
            self.settle_verb(name, verb, None)
            outcome.recovered.append(verb.batch_id)
        if found.cut_verbs:  # the rest, as the log they settled says it
            found = self.assess(name, found.table)
        self.control.mark_unloaded(name, found.unloaded)  # a crash lost that record
        marks, carried = [], []
        for batch in found.recovered:
            if batch.attempt is not None:
                marks.append(Published(batch.batch_id, batch.attempt, batch.version, batch.published_at))
            elif batch.record is not None:  # its record travelled in its commit
                carried.append(_carried_row(name, batch, batch.record))
            else:
                self.control.record_recovered(name, batch.batch_id, batch.version, batch.published_at)
            outcome.recovered.append(batch.batch_id)
        self.control.record_published(name, marks, None, carried)  # one commit for all a crash left
        self.control.mark_abandoned(name, found.stale)
        if outcome.recovered:  # their effects on the effective counts were never recorded
            self.recount(name, strategy)
        self._settle_rolled_back(found, strategy, hint, decision)
        outcome.reapplied = list(found.waiting) if decision == "reapply" else []
        return found.not_again(decision)

    def _settle_rolled_back(
        self, found: Assessment, strategy: Strategy, hint: str, decision: str | None
    ) -> None:
        """Published batches that a rollback of the target removed from its lineage are marked
        `rolled_back`, and the table stops, naming them, until the operator decides: `forget`
        them (never taken again) or `reapply` them (taken again in order). Either way the
        effective counts of the batches still in the target are recounted, since the
        rolled-back ones had superseded some of their rows."""
        name = found.name
        self.control.mark_rolled_back(name, found.rolled_back)
        if not found.waiting:
            return
        if decision is None:
            listed = ", ".join(found.waiting)
            raise LineageError(
                f"{len(found.waiting)} published batch(es) of {name} are no longer in its lineage: the "
                f"table was rolled back ({listed}); nothing was applied on top. Run again with "
                f"`--rolled-back forget` to never take them again, or `--rolled-back reapply` to "
                f"apply them again in order ({hint} --rolled-back forget|reapply)"
            )
        self.control.settle_rolled_back(name, found.waiting, decision)
        self.recount(name, strategy)

    def settle_verb(self, name: str, verb: Published, configuration: tuple[str, str] | None) -> None:
        """A verb's commit is published (`verb` marks its attempt): the log says what it did.
        Batches it unloaded become `unloaded`; the new attempts of the batches it reloaded, staged
        beside its own on the same staged version, become `published` and the attempts they
        replace `reloaded`; the status counts it gave the batches it applied again are stored,
        with the configuration it applied them under. The verb does this right after its publish;
        the next settlement does it when a crash came between the two (idempotent)."""
        replay = json.loads(self.control.replays(name, [verb.batch_id]).get(verb.batch_id) or "{}")
        attempts = self.control.attempts(name)
        staged = next((a.staged_snapshot_id for a in attempts if a.attempt == verb.attempt), None)
        named = set(replay.get("reloaded", []))
        reloads = {
            a.batch_id: a.attempt
            for a in attempts
            if a.batch_id in named and a.status == "staged" and a.staged_snapshot_id == staged
        }
        # every mark before the verb's own: until it is `published`, the next settlement
        # settles it again (each mark is idempotent)
        self.control.mark_unloaded(name, list(replay.get("unloaded", [])))
        for batch_id, attempt in reloads.items():
            self.control.mark_reloaded(name, [batch_id], keep_attempt=attempt)
        configuration = configuration or self.control.configuration(name, verb.batch_id)
        if replay.get("counts") and configuration is not None:
            self.control.correct_counts(name, replay["counts"], *configuration)
        marks = [Published(b, a, verb.version, verb.published_at) for b, a in reloads.items()]
        self.control.record_published(name, [verb, *marks])

    def recount(self, name: str, strategy: Strategy) -> None:
        """Recount the effective metrics of the batches the target holds now (one aggregate):
        after a crash lost a published batch's record, or after a rollback."""
        if not self.backend.exists(name) or self.backend.head(name) is None:
            return
        earlier = self.control.published(name)
        target = self.backend.read(name)
        counts = {r[0]: int(r[1]) for r in target.groupBy(BATCH_ID_COLUMN).count().collect()}
        owned = self._owned_ranges(name, strategy, earlier) if strategy.range_type else None
        self.control.update_effective(
            name,
            [
                Effective(b, counts.get(b, 0), owned.get(b) if owned is not None else row.effective_ranges)
                for b, row in earlier.items()
            ],
        )

    def _owned_ranges(
        self,
        name: str,
        strategy: Strategy,
        earlier: dict[str, PublishedBatch],
        last: tuple[str, tuple[str, str] | None] | None = None,
    ) -> dict[str, Any]:
        """Which part of its range each batch of the lineage still owns, oldest first; `last`
        is a batch just published, with its range."""
        oldest_first = [b for b in reversed(self.backend.published_batches(name)) if not last or b != last[0]]
        spans = [
            (b, earlier[b].range_start, earlier[b].range_end) if b in earlier else (b, None, None)
            for b in oldest_first
        ]
        if last:
            spans.append((last[0], *(last[1] or (None, None))))
        return effective_ranges(spans, strategy.range_type or "")

    def effective(
        self,
        name: str,
        strategy: Strategy,
        change: ChangeSet,
        batch_id: str,
        version: int,
        log: PublishLog,
    ) -> list[Effective]:
        """This batch's effective metrics first, then those of earlier batches that changed.

        Counts: the batch keeps what it wrote, and each earlier batch loses the rows the change
        set says it superseded, with no scan of the target. When the change set cannot say
        (`full`), or an earlier batch has no count yet (recovered from the lineage, or published
        before state version 2), the rows of every batch in the published version are counted
        instead (one aggregate over the target's batch id column). Range strategies then
        recompute which part of its range each batch still owns, in the order of the lineage.
        """
        superseded = change.superseded
        if superseded == {} and not strategy.range_type:
            return [Effective(batch_id, change.written)]
        earlier = log.published()  # the log's view, kept in memory during the run
        counts = _decremented(earlier, superseded)
        if counts is None:
            target = self.backend.read(name, version)
            counts = {r[0]: int(r[1]) for r in target.groupBy(BATCH_ID_COLUMN).count().collect()}
        else:
            counts[batch_id] = change.written
        owned = None
        if strategy.range_type:
            owned = self._owned_ranges(name, strategy, earlier, (batch_id, change.range))
        out = [Effective(batch_id, counts.get(batch_id, 0), owned.get(batch_id) if owned else None)]
        for other, row in earlier.items():
            if other == batch_id:
                continue
            count = counts.get(other, 0)
            ranges = owned.get(other) if owned is not None else row.effective_ranges
            if count != row.effective_count or ranges != row.effective_ranges:
                out.append(Effective(other, count, ranges))
        return out

    def effective_group(
        self, name: str, change: GroupChange, version: int, log: PublishLog
    ) -> list[Effective]:
        """A backlog group's effective metrics (backlog.py): each of its batches keeps what it
        wrote less what the group's later batches superseded; then the earlier batches that
        lost rows. As `effective`, recounted from the target when an earlier count is unknown."""
        inside = {b: n - change.superseded.get(b, 0) for b, n in change.written.items()}
        outside = {b: n for b, n in change.superseded.items() if b not in inside}
        if not outside:
            return [Effective(b, n) for b, n in inside.items()]
        earlier = log.published()
        counts = _decremented({b: row for b, row in earlier.items() if b not in inside}, outside)
        if counts is None:
            target = self.backend.read(name, version)
            counts = {r[0]: int(r[1]) for r in target.groupBy(BATCH_ID_COLUMN).count().collect()}
            inside = {b: counts.get(b) or 0 for b in inside}
        out = [Effective(b, n) for b, n in inside.items()]
        for other, row in earlier.items():
            if other not in inside and counts.get(other, 0) != row.effective_count:
                out.append(Effective(other, counts.get(other, 0), row.effective_ranges))
        return out

    def check_config(self, found: Assessment) -> None:
        """Stop a table whose result-shaping configuration changed since its last published
        batch (config/fingerprint.py), naming the changes and the ways on."""
        if found.config_changes:
            table = found.table.name
            raise ConfigChanged(
                f"the configuration of table {table!r} changed since batch {found.config_since} was "
                f"published, in ways that change results: {'; '.join(found.config_changes)}. New batches "
                "under it would mix with the earlier ones in one table: revert the change, take "
                f"it for the new batches only (lakefresh run PIPELINE --table {table} "
                f"--accept-config-change), or rebuild the table under it (lakefresh reset "
                f"PIPELINE --table {table}); lakefresh plan shows what a run would take"
            )

    def skip(
        self, name: str, table: TableConfig, pending: list[BatchRef], ids: list[str]
    ) -> list[BatchResult]:
        """Record the operator's decision never to take these waiting batches (`skipped`);
        a batch skipped before is left as it is. A batch that is not waiting (unknown, or
        published: that is undone by an unload, not skipped) is refused with the waiting ones."""
        waiting = {ref.batch_id: ref for ref in pending}
        done = {a.batch_id for a in self.control.attempts(name) if a.status == "skipped"}
        unknown = [b for b in ids if b not in waiting and b not in done]
        if unknown:
            listed = ", ".join(list(waiting)[:10]) or "none"
            raise ConfigError(
                f"cannot skip {', '.join(unknown)}: not a batch waiting in table {table.name!r} "
                f"(waiting: {listed}); a published batch is not skipped"
            )
        out = []
        for batch_id in [b for b in ids if b in waiting]:
            ref = waiting[batch_id]
            now = utc_now()
            self.control.record_attempt(
                BatchRow.of_table(
                    name,
                    table,
                    batch_id,
                    f"skipped-{uuid.uuid4().hex[:8]}",
                    "skipped",
                    source_position=ref.position,
                    replay=json.dumps(ref.replay, default=str, sort_keys=True),
                    started_at=now,
                    error="skipped by the operator (run --skip-batch): never taken",
                )
            )
            out.append(BatchResult(name, batch_id, "skipped", ref.position))
        return out


def _carried_row(name: str, batch: Recovered, record: str) -> BatchRow:
    """The `batches` row of a published batch whose record travelled in its commit (steps.py)."""
    row: dict[str, Any] = json.loads(record)
    if row.get("started_at"):
        row["started_at"] = datetime.fromisoformat(row["started_at"])
    return BatchRow.from_record(
        row,
        table_name=name,
        batch_id=batch.batch_id,
        status="published",
        staged_snapshot_id=batch.version,
        published_snapshot_id=batch.version,
        published_at=batch.published_at,
    )


def _decremented(
    earlier: dict[str, PublishedBatch], superseded: dict[str, int] | None
) -> dict[str, int | None] | None:
    """Earlier batches' effective counts minus what a change set superseded; None when that
    cannot be known (the change set cannot say, or a superseded batch has no count yet)."""
    if superseded is None:
        return None
    counts = {b: row.effective_count for b, row in earlier.items()}
    for b, lost in superseded.items():
        count = counts.get(b)
        if count is None:
            return None
        counts[b] = count - lost
    return counts
