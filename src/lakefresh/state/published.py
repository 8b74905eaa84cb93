"""Publishing in the `batches` log, in bulk: one commit for a whole run of a table.

A batch's attempt row is appended once, `staged`, before its target commit is published (with its
counts, so a crash loses none of them). Marking it `published`, and correcting the effective
metrics of the earlier batches it superseded, waits in a :class:`PublishLog` until the table's
run ends (or the log has waited FLUSH_SECONDS), then goes in one MERGE. The hot path of a batch
therefore makes one control commit, not two, and reads nothing from the log: the effective
metrics it updates are kept in memory from one read at the run's start.

A crash before the flush leaves published batches `staged` in the log. That is the state a crash
between publish and record always left, and the next run's reconciliation completes it from the
target's lineage (the authority on what was applied) and recounts the effective metrics.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING

from lakefresh.faults import checkpoint
from lakefresh.lakehouse.failures import retry_conflicts
from lakefresh.lakehouse.literals import literal_rows
from lakefresh.lakehouse.session import parse_schema
from lakefresh.lakehouse.sql import sql_literal
from lakefresh.ranges import Interval

if TYPE_CHECKING:
    from lakefresh.lakehouse.backend import TableBackend

RANGES_TYPE = "array<struct<start: string, end: string, start_inclusive: boolean, end_inclusive: boolean>>"

# A long catch-up writes its marks at least this often, so `lakefresh status` run beside it does
# not show its published batches as staged for long.
FLUSH_SECONDS = 60.0

_MARKS_SCHEMA = (
    "batch_id string, attempt string, published_snapshot_id bigint, publish_seconds double, "
    f"published_at timestamp, has_metrics boolean, effective_count bigint, "
    f"effective_ranges {RANGES_TYPE}"
)


@dataclass(frozen=True)
class Effective:
    """A published batch's effective metrics: its rows still in the target, the ranges it owns."""

    batch_id: str
    count: int | None
    ranges: list[Interval] | None = None


@dataclass(frozen=True)
class PublishedBatch:
    batch_id: str
    effective_count: int | None
    range_start: str | None
    range_end: str | None
    effective_ranges: list[Interval] | None


@dataclass(frozen=True)
class Published:
    """An attempt that was published: its snapshot, when, and how long the publish took."""

    batch_id: str
    attempt: str
    snapshot_id: int
    published_at: datetime
    publish_seconds: float = 0.0


class PublishMarks:
    """The one write that marks attempts published and stores effective metrics. A mixin of
    :class:`lakefresh.state.control.ControlTables`."""

    backend: TableBackend
    batches: str

    def published(self, table: str) -> dict[str, PublishedBatch]:
        """The table's published batches, by batch id."""
        rows = self.backend.spark.sql(
            "SELECT batch_id, effective_count, range_start, range_end, effective_ranges FROM "
            f"{self.backend.qualified(self.batches)} "
            f"WHERE table_name = {sql_literal(table)} AND status = 'published'"
        ).collect()
        return {
            r[0]: PublishedBatch(
                r[0], r[1], r[2], r[3], None if r[4] is None else [Interval(**x.asDict()) for x in r[4]]
            )
            for r in rows
        }

    def record_published(
        self, table: str, marks: list[Published], effective: list[Effective] | None = None
    ) -> None:
        """One MERGE: these attempts marked published, each with its effective metrics when
        `effective` holds them, and the effective metrics of other published batches."""
        if not marks and not effective:
            return
        metrics = {e.batch_id: e for e in effective or []}
        rows = []
        for mark in marks:
            e = metrics.pop(mark.batch_id, None)
            rows.append(_row(mark.batch_id, e, mark))
        rows += [_row(b, e, None) for b, e in metrics.items()]
        spark = self.backend.spark
        source = literal_rows(spark, rows, parse_schema(_MARKS_SCHEMA))
        view = f"lakefresh_published_{abs(hash((table, id(rows))))}"
        source.createOrReplaceTempView(view)
        metric_sets = "t.effective_count = s.effective_count, t.effective_ranges = s.effective_ranges"
        publish_sets = (
            "t.status = 'published', t.published_snapshot_id = s.published_snapshot_id, "
            "t.publish_seconds = s.publish_seconds, t.published_at = s.published_at"
        )
        merge = (
            f"MERGE INTO {self.backend.qualified(self.batches)} t USING {view} s "
            f"ON t.table_name = {sql_literal(table)} AND t.batch_id = s.batch_id AND "
            "((s.attempt IS NOT NULL AND t.attempt = s.attempt) "
            " OR (s.attempt IS NULL AND t.status = 'published')) "
            "WHEN MATCHED AND s.attempt IS NOT NULL AND s.has_metrics "
            f"THEN UPDATE SET {publish_sets}, {metric_sets} "
            f"WHEN MATCHED AND s.attempt IS NOT NULL THEN UPDATE SET {publish_sets} "
            f"WHEN MATCHED THEN UPDATE SET {metric_sets}"
        )
        try:
            retry_conflicts(lambda: spark.sql(merge))
        finally:
            spark.catalog.dropTempView(view)

    def mark_published(
        self,
        table: str,
        batch_id: str,
        attempt: str,
        snapshot_id: int,
        published_at: datetime,
        effective: list[Effective] | None = None,
    ) -> None:
        """Mark one attempt published (and store effective metrics) at once."""
        self.record_published(table, [Published(batch_id, attempt, snapshot_id, published_at)], effective)

    def update_effective(self, table: str, effective: list[Effective]) -> None:
        """Store recounted effective metrics of published batches (after a rollback)."""
        self.record_published(table, [], effective)


def _row(batch_id: str, e: Effective | None, mark: Published | None) -> dict[str, object]:
    return {
        "batch_id": batch_id,
        "attempt": mark.attempt if mark else None,
        "published_snapshot_id": mark.snapshot_id if mark else None,
        "publish_seconds": round(mark.publish_seconds, 3) if mark else None,
        "published_at": mark.published_at if mark else None,
        "has_metrics": e is not None,
        "effective_count": e.count if e else None,
        "effective_ranges": None if e is None or e.ranges is None else [r.to_dict() for r in e.ranges],
    }


class PublishLog:
    """One table's published batches during a run, written to the log in bulk.

    :meth:`published` is the log's view of the published batches (read once, then kept up to
    date in memory), which the effective metrics of the next batch start from; :meth:`add` takes
    a batch just published with the effective metrics its publish changed; :meth:`flush` writes
    what waits in one commit, and then passes the `after_record` fault point of each batch."""

    def __init__(self, control: PublishMarks, table: str) -> None:
        self.control = control
        self.table = table
        self._published: dict[str, PublishedBatch] | None = None
        self._marks: list[Published] = []
        self._changed: dict[str, Effective] = {}
        self._since: float | None = None

    def published(self) -> dict[str, PublishedBatch]:
        if self._published is None:
            self._published = self.control.published(self.table)
        return self._published

    def add(self, mark: Published, span: tuple[str, str] | None, effective: list[Effective]) -> None:
        known = self.published()
        start, end = span or (None, None)
        known[mark.batch_id] = PublishedBatch(mark.batch_id, None, start, end, None)
        for e in effective:
            if e.batch_id in known:
                known[e.batch_id] = replace(
                    known[e.batch_id], effective_count=e.count, effective_ranges=e.ranges
                )
            self._changed[e.batch_id] = e
        self._marks.append(mark)
        if self._since is None:
            self._since = time.monotonic()

    @property
    def waiting(self) -> list[str]:
        """The batches published in this run whose mark is not written yet."""
        return [m.batch_id for m in self._marks]

    def due(self) -> bool:
        return self._since is not None and time.monotonic() - self._since >= FLUSH_SECONDS

    def flush(self) -> None:
        if not self._marks and not self._changed:
            return
        marks, changed = self._marks, list(self._changed.values())
        self.control.record_published(self.table, marks, changed)
        self._marks, self._changed, self._since = [], {}, None
        for mark in marks:
            checkpoint("after_record", mark.batch_id)
