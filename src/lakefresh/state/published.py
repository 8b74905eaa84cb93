"""Publishing in the `batches` log, in bulk: one commit for a whole run of a table.

A batch's record (attempt, position, replay, counts, configuration fingerprint) travels in its
staged target commit as the summary property `lakefresh.record` (RECORD_PROPERTY). Its row in the
log, and the corrected effective metrics of the earlier batches it superseded, wait in a
:class:`PublishLog` until the table's run ends (or the log has waited FLUSH_SECONDS), then go in
one commit. A batch therefore makes no control commit of its own and reads nothing from the log:
the effective metrics it updates are kept in memory from one read at the run's start. A batch
whose row must exist before its publish (its quarantine rows name its attempt; or an Iceberg
before 1.12 dropped the property) appends it `staged` first, and the MERGE marks it `published`.

Rows a batch supersedes are taken from earlier batches' effective counts. Those of batches of
earlier runs are not rewritten: the batch's own row says how many it took from each
(`superseded`, a map by batch id), and a count is read as its row's count less what later rows
took from it, a batch no longer published taking nothing (state/reads.py,
`ControlTables.history`). So a run whose rows are all new is one
append to the log, which reads nothing. The MERGE is left for attempts recorded `staged` first,
counts of batches of this run, ranges that changed, and recounts; a count it stores is the
batch's count plus what the log's published rows say was taken from it, so the reading stays
right.

A crash before the write leaves published batches missing from the log, or `staged` in it. The
next run's reconciliation completes both from the target's lineage, the authority on what was
applied: rows from the records the commits carry, marks for the staged rows, in one commit; then
it recounts the effective metrics.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from lakefresh.faults import checkpoint
from lakefresh.lakehouse.failures import retry_conflicts
from lakefresh.lakehouse.literals import literal_rows
from lakefresh.lakehouse.session import parse_schema
from lakefresh.lakehouse.sql import quote, sql_literal
from lakefresh.ranges import Interval

if TYPE_CHECKING:
    from collections.abc import Iterable

    from pyspark.sql.types import StructType

    from lakefresh.lakehouse.backend import TableBackend
    from lakefresh.state.batch_row import BatchRow
    from lakefresh.state.control import ControlTables
    from lakefresh.state.reads import LogRow

RANGES_TYPE = "array<struct<start: string, end: string, start_inclusive: boolean, end_inclusive: boolean>>"

# The commit property that carries a batch's record in its target commit (lakehouse `stage`).
RECORD_PROPERTY = "lakefresh.record"

# A long catch-up writes its marks at least this often, so `lakefresh status` run beside it does
# not show its published batches as staged for long.
FLUSH_SECONDS = 60.0

# The MERGE's source: `batches` rows plus what each is for (`new`: insert it; `publish`: mark
# that attempt published; `metrics`: store a published batch's effective metrics).
_MARK_COLUMNS = "_mark string, _has_metrics boolean"


@dataclass(frozen=True)
class Effective:
    """A published batch's effective metrics: its rows still in the target, the ranges it owns."""

    batch_id: str
    count: int | None
    ranges: list[Interval] | None = None


@dataclass(frozen=True)
class PublishedBatch:
    batch_id: str
    effective_count: int | None  # as it is now: its row's count less `taken`
    range_start: str | None
    range_end: str | None
    effective_ranges: list[Interval] | None
    taken: int = 0  # the rows published batches' `superseded` maps in the log took from it


@dataclass(frozen=True)
class Published:
    """An attempt that was published: its version, when, and how long the publish took."""

    batch_id: str
    attempt: str
    version: int
    published_at: datetime
    publish_seconds: float = 0.0

    def columns(self) -> dict[str, Any]:
        return {
            "published_snapshot_id": self.version,
            "published_at": self.published_at,
            "publish_seconds": round(self.publish_seconds, 3),
        }


class PublishHost(Protocol):
    """What :class:`PublishMarks` needs of its host (:class:`lakefresh.state.control.ControlTables`):
    the log's table and schema, a row with every column, and the log's reads (state/reads.py)."""

    backend: TableBackend
    batches: str

    def batches_schema(self) -> StructType: ...

    def full_row(self, row: BatchRow) -> dict[str, Any]: ...

    def published(self, table: str) -> dict[str, PublishedBatch]:
        """The table's published batches, by batch id."""
        ...

    def appended(self, rows: list[dict[str, Any]]) -> None:
        """Rows this process appended to the log."""
        ...

    def log_rows(self, table: str) -> list[LogRow]:
        """The table's rows of the log."""
        ...

    def log_head(self, table: str) -> int | None:
        """The log's version that the table's last `log_rows` read."""
        ...


class PublishMarks:
    """The one write that marks attempts published and stores effective metrics. A mixin of
    :class:`lakefresh.state.control.ControlTables`, its host (:class:`PublishHost`)."""

    def record_published(
        self: PublishHost,
        table: str,
        marks: list[Published],
        effective: list[Effective] | None = None,
        new: list[BatchRow] | None = None,
    ) -> None:
        """One MERGE: these attempts marked published, each with its effective metrics when
        `effective` holds them; the effective metrics of other published batches; and `new`
        rows (published attempts whose record travelled in their target commit) inserted. When
        there are only new rows (the common run: no staged row, nothing superseded), one append."""
        _write_published(self, table, marks, effective or [], new or [])

    def update_effective(self: PublishHost, table: str, effective: list[Effective]) -> None:
        """Store recounted effective metrics of published batches (after a rollback)."""
        _write_published(self, table, [], effective, [])


def _write_published(
    host: PublishHost, table: str, marks: list[Published], effective: list[Effective], new: list[BatchRow]
) -> None:
    """`PublishMarks.record_published`'s write."""
    if not marks and not effective and not new:
        return
    metrics = _stored(host, table, effective, new)
    rows = [{**host.full_row(r), **_metrics(metrics.pop(r.batch_id, None)), "_mark": "new"} for r in new]
    for mark in marks:
        rows.append(_mark_row(mark, metrics.pop(mark.batch_id, None)))
    rows += [
        {"batch_id": b, **_metrics(e), "_mark": "metrics", "_has_metrics": True} for b, e in metrics.items()
    ]
    spark = host.backend.spark
    schema = host.batches_schema()
    if not marks and not metrics:  # only new rows: an append
        plain = [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]
        host.appended(retry_conflicts(lambda: _append_unlogged(host, table, plain, schema)))
        return
    source = literal_rows(spark, rows, _source_schema(schema))
    view = f"lakefresh_published_{abs(hash((table, id(rows))))}"
    source.createOrReplaceTempView(view)
    columns = ", ".join(quote(f.name) for f in schema.fields)
    values = ", ".join(f"s.{quote(f.name)}" for f in schema.fields)
    metric_sets = "t.effective_count = s.effective_count, t.effective_ranges = s.effective_ranges"
    publish_sets = (
        "t.status = 'published', t.published_snapshot_id = s.published_snapshot_id, "
        "t.publish_seconds = s.publish_seconds, t.published_at = s.published_at"
    )
    merge = (
        f"MERGE INTO {host.backend.qualified(host.batches)} t USING {view} s "
        f"ON t.table_name = {sql_literal(table)} AND t.batch_id = s.batch_id AND "
        "((s._mark = 'publish' AND t.attempt = s.attempt) "
        " OR (s._mark = 'metrics' AND t.status = 'published')) "
        "WHEN MATCHED AND s._mark = 'publish' AND s._has_metrics "
        f"THEN UPDATE SET {publish_sets}, {metric_sets} "
        f"WHEN MATCHED AND s._mark = 'publish' THEN UPDATE SET {publish_sets} "
        f"WHEN MATCHED THEN UPDATE SET {metric_sets} "
        f"WHEN NOT MATCHED AND s._mark = 'new' THEN INSERT ({columns}) VALUES ({values})"
    )
    try:
        retry_conflicts(lambda: spark.sql(merge))
    finally:
        spark.catalog.dropTempView(view)


def _append_unlogged(
    host: PublishHost, table: str, new: list[dict[str, Any]], schema: StructType
) -> list[dict[str, Any]]:
    """Append the rows of `new` whose batches the log does not hold as published; the rows
    appended. When two runs of a table overlap, one's reconciliation can record a batch the
    other published, from its commit, as the other writes that batch's row. So the check
    reads the log (the kept read, unless the log moved since: state/reads.py) and the append
    is refused if a row of the table was added after the version it read; then both are
    tried again (retry_conflicts)."""
    rows = host.log_rows(table)
    head = host.log_head(table)
    logged = {r.attempt.batch_id for r in rows if r.attempt.status == "published"}
    new = [r for r in new if r["batch_id"] not in logged]
    if new:
        host.backend.append_rows(host.batches, new, schema, unless=(head, "table_name", table))
    return new


def _stored(
    host: PublishHost, table: str, effective: list[Effective], new: list[BatchRow]
) -> dict[str, Effective]:
    """The counts to store for these effective metrics, by batch id. A row's count is read
    less what published rows' `superseded` maps took from it, so a count written now is the
    batch's count plus what the log's published rows, and the rows written with it, say was
    taken."""
    taken = taken_from(r.superseded for r in new)
    if effective:  # a kept read, as a rule: the log's head has not moved since the last one
        for batch_id, row in host.published(table).items():
            taken[batch_id] = taken.get(batch_id, 0) + row.taken
    return {
        e.batch_id: e if e.count is None else replace(e, count=e.count + taken.get(e.batch_id, 0))
        for e in effective
    }


def taken_from(maps: Iterable[dict[str, int] | None]) -> dict[str, int]:
    """The rows these `superseded` maps took from each batch, summed, by batch id."""
    taken: dict[str, int] = {}
    for superseded in maps:
        for batch_id, n in (superseded or {}).items():
            taken[batch_id] = taken.get(batch_id, 0) + n
    return taken


def _source_schema(batches: StructType) -> StructType:
    """The `batches` columns, all nullable (a mark has no table name, a metrics row no attempt),
    then the mark's own."""
    from pyspark.sql.types import StructField, StructType

    fields = [StructField(f.name, f.dataType, True) for f in batches.fields]
    return StructType(fields + parse_schema(_MARK_COLUMNS).fields)


def _metrics(e: Effective | None) -> dict[str, Any]:
    if e is None:
        return {"_has_metrics": False}
    ranges = None if e.ranges is None else [r.to_dict() for r in e.ranges]
    return {"effective_count": e.count, "effective_ranges": ranges, "_has_metrics": True}


def _mark_row(mark: Published, e: Effective | None) -> dict[str, Any]:
    return {
        "batch_id": mark.batch_id,
        "attempt": mark.attempt,
        "published_snapshot_id": mark.version,
        "publish_seconds": round(mark.publish_seconds, 3),
        "published_at": mark.published_at,
        "_mark": "publish",
        **_metrics(e),
    }


class PublishLog:
    """One table's published batches during a run, written to the log in bulk.

    :meth:`published` is the log's view of the published batches (read once, then kept up to
    date in memory), which the effective metrics of the next batch start from; :meth:`add` takes
    a batch just published with the effective metrics its publish changed; :meth:`flush` writes
    what waits in one commit, and then passes the `after_record` fault point of each batch."""

    def __init__(self, control: ControlTables, table: str) -> None:
        self.control = control
        self.table = table
        self._published: dict[str, PublishedBatch] | None = None
        self._marks: list[Published] = []
        self._new: list[BatchRow] = []
        self._changed: dict[str, Effective] = {}
        self._unread: dict[str, PublishedBatch] = {}  # this run's unwritten batches, log not read
        self._since: float | None = None

    def published(self) -> dict[str, PublishedBatch]:
        if self._published is None:  # read only when a batch's effective metrics need it
            self._published = {**self.control.published(self.table), **self._unread}
        return self._published

    def add(
        self,
        mark: Published,
        span: tuple[str, str] | None,
        effective: list[Effective],
        row: BatchRow | None = None,
    ) -> None:
        """A batch just published, with the effective metrics its publish changed; `row`: its
        whole `batches` row when none is in the log yet (it is inserted, not marked)."""
        known = self._published if self._published is not None else self._unread
        start, end = span or (None, None)
        in_run = set(self.waiting)
        known[mark.batch_id] = PublishedBatch(mark.batch_id, None, start, end, None)
        taken: dict[str, int] = {}
        for e in effective:
            before = known.get(e.batch_id)
            if (
                row is not None
                and e.batch_id != mark.batch_id
                and e.batch_id not in in_run
                and e.batch_id not in self._changed
                and before is not None
                and before.effective_count is not None
                and e.count is not None
                and e.ranges == before.effective_ranges
            ):  # what it took from a batch of an earlier run: said in its own row, appended
                taken[e.batch_id] = before.effective_count - e.count
            else:  # its row is written with this one, or its count is stored anew (a MERGE)
                self._changed[e.batch_id] = e
            if before is not None:
                known[e.batch_id] = replace(before, effective_count=e.count, effective_ranges=e.ranges)
        if row is None:
            self._marks.append(mark)
        else:
            self._new.append(replace(row, superseded={b: n for b, n in taken.items() if n} or None))
        if self._since is None:
            self._since = time.monotonic()

    @property
    def waiting(self) -> list[str]:
        """The batches published in this run whose mark is not written yet."""
        return [m.batch_id for m in self._marks] + [r.batch_id for r in self._new]

    def due(self) -> bool:
        return self._since is not None and time.monotonic() - self._since >= FLUSH_SECONDS

    def flush(self) -> None:
        if not self._marks and not self._changed and not self._new:
            return
        done = self.waiting
        self.control.record_published(self.table, self._marks, list(self._changed.values()), self._new)
        self._marks, self._new, self._changed, self._since = [], [], {}, None
        self._unread = {}  # the log holds them now
        for batch_id in done:
            checkpoint("after_record", batch_id)
