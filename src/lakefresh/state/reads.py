"""The runner's reads of the `batches` log: one query per table and log version.

Before its batches, a table's run asks the log three things: its attempts and the configuration
its last published batch was applied under (both for its assessment, run/assessment.py), and the
effective metrics of its published batches (the first batch that supersedes rows). Each was a query
of its own, a Spark job of about 0.15 s on a tiny table. Now one query reads the columns all three
need, and its rows are kept with the log's version (its head); a later read that finds the head
unchanged (a metadata look-up of a few milliseconds) uses them again. Any write to the log, this
process's or another's, moves the head, so a kept read is never stale; a log with no commit yet
is kept as no rows at head None. (This assumes the log is not dropped and created again while a
process runs: a Delta table's versions would start again at 0, and a new Iceberg table's first
snapshot has no parent, as the first of the log it replaced had.) One exception keeps reads
current across runs: when this process's own append (a run's record, attempt rows) is the only
commit since a kept read, that read takes the append's rows of its table (often none) and the new
head. So a process that runs a pipeline again and again (`--continuous`, the Python API) reads
each table's rows once, not once per table per run, while no other process writes to the log. The
configuration's text, only needed when its fingerprint differs, is read on its own then. A mixin
of :class:`lakefresh.state.control.ControlTables`.

A table's rows come in the order their attempts started (then by attempt id), however the log's
files hold them and whether they were read or kept: readers take the last of a batch's rows as
its newest (reconciliation's staged attempt, `published`).
"""

from __future__ import annotations

import calendar
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakefresh.lakehouse.sql import sql_literal
from lakefresh.ranges import Interval
from lakefresh.state.published import PublishedBatch, taken_from

if TYPE_CHECKING:
    from datetime import datetime

    from lakefresh.lakehouse.backend import TableBackend

# How many log rows the kept reads hold at most, over all tables (the least recently read table's
# go first; the table just read always stays): a pipeline's tables are read again each run.
KEPT_ROWS = 100_000


@dataclass(frozen=True)
class AttemptRow:
    batch_id: str
    attempt: str
    status: str
    staged_snapshot_id: int | None  # versions, named as the `batches` columns they are read from
    published_snapshot_id: int | None = None
    published_millis: int | None = None  # when it was published, as the log says (epoch ms)


@dataclass(frozen=True)
class LogRow:
    """What the runner reads of one `batches` row."""

    attempt: AttemptRow
    published_micros: int | None
    started_micros: int | None
    effective_count: int | None
    range_start: str | None
    range_end: str | None
    effective_ranges: list[Interval] | None
    config_fingerprint: str | None
    has_config: bool
    superseded: dict[str, int] | None = None  # rows this batch took from earlier ones (version 5)


_COLUMNS = (
    "batch_id, attempt, status, staged_snapshot_id, published_snapshot_id, "
    "unix_millis(published_at), unix_micros(published_at), unix_micros(started_at), "
    "effective_count, range_start, range_end, effective_ranges, config_fingerprint, "
    "config IS NOT NULL, superseded"
)
# how the queries of this module's reads begin (`log_rows`, `read_ahead`): benchmarks and tests
# count the log's reads by them
LOG_READS = (f"SELECT {_COLUMNS} FROM ", f"SELECT table_name, {_COLUMNS} FROM ")


class LogReads:
    backend: TableBackend
    batches: str
    _kept: OrderedDict[str, tuple[int | None, list[LogRow]]]  # a head of None: no commit yet

    def log_rows(self, table: str) -> list[LogRow]:
        """The table's rows of the log, read once per commit to the log."""
        head = self.backend.latest(self.batches)
        kept = self._kept.get(table)
        if kept is not None and kept[0] == head:
            self._kept.move_to_end(table)
            return kept[1]
        # a log with no commit yet holds no row: kept like a read, so that the process's own
        # first append to it keeps the table's read current (`appended`)
        rows: list[Any] = []
        if head is not None:
            rows = self.backend.spark.sql(
                f"SELECT {_COLUMNS} FROM {self.backend.qualified(self.batches)} "
                f"WHERE table_name = {sql_literal(table)}"
            ).collect()
        out = in_order([_log_row(r) for r in rows])
        self._kept[table] = (head, out)
        self._kept.move_to_end(table)
        self._trim()
        return out

    def read_ahead(self, tables: list[str]) -> None:
        """These tables' rows of the log in one query (a run's tables, before the first of them
        runs), each kept as `log_rows` keeps its own: a process's first run reads the log once,
        not once per table. Tables whose read is current, or more rows than KEPT_ROWS in all,
        are left to `log_rows`; so is everything when this read fails (it only saves reads: a
        log that cannot be read fails each table's run on its own, as without it)."""
        try:
            head = self.backend.latest(self.batches)
            if head is None:
                return
            missing = [t for t in dict.fromkeys(tables) if t not in self._kept or self._kept[t][0] != head]
            if len(missing) < 2:  # one table alone costs the same
                return
            names = ", ".join(sql_literal(t) for t in missing)
            rows = self.backend.spark.sql(
                f"SELECT table_name, {_COLUMNS} FROM {self.backend.qualified(self.batches)} "
                f"WHERE table_name IN ({names}) LIMIT {KEPT_ROWS + 1}"
            ).collect()
        except Exception:
            return
        if len(rows) > KEPT_ROWS:
            return
        found: dict[str, list[LogRow]] = {t: [] for t in missing}
        for r in rows:
            found[r[0]].append(_log_row(tuple(r)[1:]))
        for table, out in found.items():
            self._kept[table] = (head, in_order(out))
            self._kept.move_to_end(table)
        self._trim()

    def _trim(self) -> None:
        """At most KEPT_ROWS rows kept: the least recently read tables' go first, and the table
        read last always stays."""
        held = sum(len(k[1]) for k in self._kept.values())
        while held > KEPT_ROWS and len(self._kept) > 1:
            held -= len(self._kept.popitem(last=False)[1][1])

    def appended(self, rows: list[dict[str, Any]]) -> None:
        """This process appended these full `batches` rows: every kept read (of any table) made
        at the head this append came right after gains the append's rows of its table (often
        none) and stays current, so the next run (in this process) reads nothing. A kept read
        with another commit since is dropped: the next read queries."""
        if not rows:  # no commit of ours: the next commit, if any, is another's
            return
        kept, self._kept = self._kept, OrderedDict()
        heads: dict[int | None, int | None] = {}  # a kept head -> the head it is followed by, if only ours
        for table, (head, out) in kept.items():
            try:  # the append is done: a failure here costs the next run a read, nothing more
                if head not in heads:
                    heads[head] = self.backend.follows(self.batches, head)
                mine = [dict_row(r) for r in rows if r["table_name"] == table]
            except Exception:
                continue
            if (after := heads[head]) is not None:
                self._kept[table] = (after, in_order(out + mine) if mine else out)

    def log_head(self, table: str) -> int | None:
        """The log's version that the table's kept read was made at (None: none, or no commit)."""
        kept = self._kept.get(table)
        return kept[0] if kept else None

    def attempts(self, table: str) -> list[AttemptRow]:
        return [r.attempt for r in self.log_rows(table)]

    def published(self, table: str) -> dict[str, PublishedBatch]:
        """The table's published batches, by batch id, each with its effective count as it is
        now: its row's count less what published batches' rows say they took from it."""
        rows = self.log_rows(table)
        # a batch no longer published (rolled back, unloaded) took nothing
        taken = taken_from(r.superseded for r in rows if r.attempt.status == "published")
        return {
            r.attempt.batch_id: PublishedBatch(
                r.attempt.batch_id,
                None if r.effective_count is None else r.effective_count - taken.get(r.attempt.batch_id, 0),
                r.range_start,
                r.range_end,
                r.effective_ranges,
                taken.get(r.attempt.batch_id, 0),
            )
            for r in rows
            if r.attempt.status == "published"
        }

    def config_text(self, table: str, attempt: str) -> str:
        row = self.backend.spark.sql(
            f"SELECT config FROM {self.backend.qualified(self.batches)} WHERE table_name = "
            f"{sql_literal(table)} AND attempt = {sql_literal(attempt)} AND config IS NOT NULL LIMIT 1"
        ).first()
        return "" if row is None else str(row[0])


def last_recorded(rows: list[LogRow]) -> tuple[str, str, str] | None:
    """(batch id, attempt, config fingerprint) of the newest published batch among `rows` that
    recorded its configuration (batches of state version 2 did not)."""
    recorded = [
        r
        for r in rows
        if r.attempt.status == "published" and r.config_fingerprint is not None and r.has_config
    ]
    if not recorded:
        return None
    newest = max(recorded, key=lambda r: (r.published_micros or 0, r.started_micros or 0))
    return newest.attempt.batch_id, newest.attempt.attempt, newest.config_fingerprint or ""


def in_order(rows: list[LogRow]) -> list[LogRow]:
    """Rows in the order their attempts started (a row without a start first), then by attempt."""
    return sorted(
        rows, key=lambda r: (r.started_micros is not None, r.started_micros or 0, r.attempt.attempt)
    )


def dict_row(r: dict[str, Any]) -> LogRow:
    """A `batches` row as written (a dict of every column; or read back as PySpark collects it),
    as :func:`_log_row` reads it back."""

    published = micros(r["published_at"])
    millis = None if published is None else published // 1000
    return _log_row(
        (
            *(r[c] for c in ("batch_id", "attempt", "status", "staged_snapshot_id", "published_snapshot_id")),
            millis,
            published,
            micros(r["started_at"]),
            *(r[c] for c in ("effective_count", "range_start", "range_end", "effective_ranges")),
            r["config_fingerprint"],
            r["config"] is not None,
            r["superseded"],
        )
    )


def micros(t: datetime | None) -> int | None:
    """A timestamp's microseconds since the epoch, as PySpark's `TimestampType.toInternal` makes
    them (a naive time is this process's local time)."""
    if t is None:
        return None
    seconds = calendar.timegm(t.utctimetuple()) if t.tzinfo else time.mktime(t.timetuple())
    return int(seconds) * 1_000_000 + t.microsecond


def _log_row(r: Any) -> LogRow:
    """A row of the query of `_COLUMNS` (or the same values in a tuple: :func:`_dict_row`)."""
    ranges = (
        None if r[11] is None else [Interval(**(x if isinstance(x, dict) else x.asDict())) for x in r[11]]
    )
    return LogRow(
        AttemptRow(r[0], r[1], r[2], r[3], r[4], r[5]),
        r[6],
        r[7],
        r[8],
        r[9],
        r[10],
        ranges,
        r[12],
        bool(r[13]),
        None if r[14] is None else {str(k): int(v) for k, v in r[14].items()},
    )
