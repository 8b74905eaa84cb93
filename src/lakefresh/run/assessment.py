"""Assess a table before its batches: what its target's lineage and its `batches` log say, read
and written nowhere.

One :class:`Assessment` serves every caller: `run` settles it (:meth:`Bookkeeping.settle`, the
only place that writes what it found), `plan` shows it, and the rebuild verbs settle it before
they rebuild. It says:

- whether the target exists, its lineage (batch id -> version, newest first), and the batch ids
  not to take again (`applied`): those in the lineage, those the log holds as published, and
  those the operator took out (`unloaded`, `skipped`, `forgotten`);
- verbs whose commit is in the lineage but whose record a crash cut short (`cut_verbs`): settled
  first, since what they did decides which batches are live;
- batches a later verb unloaded that the log still holds as published (`unloaded`);
- published batches the log does not know (`recovered`), each with how it is to be recorded;
- staged attempts that never published (`stale`), to be abandoned;
- published batches a rollback of the target removed (`rolled_back`, found now; `waiting`, every
  one still waiting for the operator's decision);
- the result-shaping configuration changes since the newest batch that recorded its own
  (`config_changes`), as the log will hold it once settled.

It reads through two small protocols, :class:`TargetReads` (the target's lineage) and
:class:`LogReader` (the `batches` log): a run's and the rebuild verbs' are the format backend and
the control tables (Spark); `plan`'s, where the tables can be read without a JVM, are
lakehouse/native.py's reader and state/log_rows.py's log over it, so one assessment serves both.
Reads are the ones a run made before: the lineage's full view (`TableBackend.lineage`) only when
published batches are missing from it, the verbs' replays only when verbs are in it, a commit's
time and properties only for a batch to recover, the recorded configuration's text only when its
fingerprint differs from today's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from lakefresh.config.fingerprint import changes, fingerprint
from lakefresh.state.control import is_verb
from lakefresh.state.published import RECORD_PROPERTY, Published
from lakefresh.state.reads import AttemptRow, LogRow, last_recorded

if TYPE_CHECKING:
    from lakefresh.config.models import TableConfig
    from lakefresh.lakehouse.backend import Lineage


class TargetReads(Protocol):
    """What an assessment reads of a target: its lineage (`TableBackend`'s members of the
    same names, or lakehouse/native.py's reader without a JVM)."""

    def exists(self, table: str) -> bool:
        """Whether the table exists."""

    def published_batches(self, table: str) -> dict[str, int]:
        """Batch id -> version of the batches its current lineage carries, newest first."""

    def lineage(self, table: str) -> Lineage:
        """Which versions it still has, and which the current one descends from."""

    def committed_at(self, table: str, version: int) -> datetime:
        """When a version was committed (UTC, naive)."""

    def commit_properties(self, table: str, version: int) -> dict[str, str]:
        """The `lakefresh.*` properties a commit carries."""


class LogReader(Protocol):
    """What an assessment reads of the `batches` log (`ControlTables`, or state/log_rows.py's
    reader of its rows without a JVM)."""

    def log_rows(self, table: str) -> list[LogRow]:
        """The table's rows of the log, in the order their attempts started."""

    def replays(self, table: str, batch_ids: list[str]) -> dict[str, str]:
        """The `replay` of these batches' attempts, by batch id (a published attempt's first)."""

    def config_text(self, table: str, attempt: str) -> str:
        """The configuration an attempt recorded ("" when none)."""


# Attempts whose batch is never taken again: undone on purpose, or skipped by the operator.
NEVER_AGAIN = ("forgotten", "skipped", "unloaded")


def held_back(attempts: list[AttemptRow], published: set[str] | None = None) -> dict[str, str]:
    """The batches the operator took out that are not published now (`published`: the log's
    published batches, else those of `attempts`), by their status: never taken again."""
    if published is None:
        published = {a.batch_id for a in attempts if a.status == "published"}
    return {a.batch_id: a.status for a in attempts if a.status in NEVER_AGAIN and a.batch_id not in published}


@dataclass(frozen=True)
class Recovered:
    """A published batch the log does not know (a crash between its publish and its record)."""

    batch_id: str
    version: int
    published_at: datetime  # its commit's time
    attempt: str | None = None  # its staged attempt on that version (or its last): marked published
    record: str | None = None  # else its record, carried in its commit's properties

    @property
    def how(self) -> str:
        """How it is recorded: `staged` (its attempt marked), `carried` (its row from its commit),
        `lineage` (a row from the lineage alone: no counts)."""
        return "staged" if self.attempt else "carried" if self.record is not None else "lineage"


@dataclass(frozen=True)
class Assessment:
    """What a table's target and its log say before its batches (see the module's docstring)."""

    name: str
    table: TableConfig
    exists: bool
    lineage: dict[str, int]
    dropped: int = 0  # published batches the log holds of a target that no longer exists
    cut_verbs: list[Published] = field(default_factory=list)
    undone: frozenset[str] = frozenset()  # in the lineage, unloaded by a later verb
    unloaded: list[str] = field(default_factory=list)  # undone, yet published in the log
    recovered: list[Recovered] = field(default_factory=list)  # in lineage order, newest first
    stale: list[AttemptRow] = field(default_factory=list)
    rolled_back: list[str] = field(default_factory=list)  # published, rolled back: found now
    waiting: list[str] = field(default_factory=list)  # rolled back, waiting for a decision
    applied: frozenset[str] = frozenset()  # not to take again, before a decision on `waiting`
    config_since: str | None = None  # the batch whose recorded configuration today's is compared with
    config_changes: list[str] = field(default_factory=list)
    # batches the operator took out and that are not in the table: never taken again, by status
    held: dict[str, str] = field(default_factory=dict)

    def not_again(self, decision: str | None) -> set[str]:
        """The batch ids not to take again once the operator decided on the rolled-back ones."""
        return set(self.applied) | (set(self.waiting) if decision == "forget" else set())


def assess(backend: TargetReads, control: LogReader | None, name: str, table: TableConfig) -> Assessment:
    """Assess target `name` of `table` against its log (None: no control table exists yet)."""
    exists = backend.exists(name)
    lineage = backend.published_batches(name) if exists else {}
    rows = control.log_rows(name) if control is not None else []
    attempts = [r.attempt for r in rows]
    published = {a.batch_id: a for a in attempts if a.status == "published"}
    cut = _cut_verbs(backend, name, lineage, attempts)
    undone = _undone(control, name, lineage) if control is not None else set()
    logged = set(published) - undone
    cut_ids = {v.batch_id for v in cut}
    recovered = [
        _recovered(backend, name, b, s, attempts)
        for b, s in lineage.items()
        if b not in logged and b not in undone and b not in cut_ids
    ]
    rolled_back = _rolled_back(backend, name, lineage, published) if exists else []
    still_published = set(published) - set(rolled_back)
    marked = {a.batch_id for a in attempts if a.status == "rolled_back"}
    waiting = sorted((marked | set(rolled_back)) - still_published)
    never_again = {a.batch_id for a in attempts if a.status in NEVER_AGAIN}
    settling = {v.batch_id: v.attempt for v in cut} | {r.batch_id: r.attempt for r in recovered if r.attempt}
    found = Assessment(
        name,
        table,
        exists,
        lineage,
        dropped=0 if exists else len(published),
        cut_verbs=cut,
        undone=frozenset(undone),
        unloaded=sorted(undone & set(published)),
        recovered=recovered,
        stale=_stale(attempts, lineage),
        rolled_back=rolled_back,
        waiting=waiting,
        applied=frozenset(set(lineage) | (logged - set(waiting)) | never_again),
        held=held_back(attempts, logged),
    )
    newest = [(b, settling[b]) for b in lineage if b in settling]
    return _with_config(found, control, rows, newest, undone | set(rolled_back))


def _cut_verbs(
    backend: TargetReads, name: str, lineage: dict[str, int], attempts: list[AttemptRow]
) -> list[Published]:
    """Verbs whose commit is in the lineage but whose record a crash cut short (their attempt is
    still `staged`), in lineage order."""
    logged = {a.batch_id for a in attempts if a.status == "published"}
    out = []
    for batch_id, version in lineage.items():
        staged = [a for a in attempts if a.batch_id == batch_id and a.status == "staged"]
        if is_verb(batch_id) and batch_id not in logged and staged:
            when = backend.committed_at(name, version)
            out.append(Published(batch_id, staged[-1].attempt, version, when))
    return out


def _undone(control: LogReader, name: str, lineage: dict[str, int]) -> set[str]:
    """The batches the lineage holds whose rows a later verb commit in it removed (`unload`)
    and no verb after that brought back (`reload`): their commits are still ancestors, but
    the table no longer holds them."""
    verbs = [b for b in lineage if is_verb(b)]
    if not verbs:
        return set()
    replays = control.replays(name, verbs)
    out: set[str] = set()
    for verb in reversed(verbs):  # oldest first
        spec = json.loads(replays.get(verb) or "{}")
        out |= set(spec.get("unloaded", []))
        out -= set(spec.get("reloaded", []))
    return out


def _recovered(
    backend: TargetReads, name: str, batch_id: str, version: int, attempts: list[AttemptRow]
) -> Recovered:
    """How a published batch the log does not know is to be recorded: its staged attempt on its
    version (else its last staged one) marked, else the record its commit carried, else a row
    from the lineage alone."""
    staged = [a for a in attempts if a.batch_id == batch_id and a.status == "staged"]
    match = [a for a in staged if a.staged_snapshot_id == version] or staged[-1:]
    when = backend.committed_at(name, version)
    if match:
        return Recovered(batch_id, version, when, attempt=match[0].attempt)
    record = backend.commit_properties(name, version).get(RECORD_PROPERTY)
    return Recovered(batch_id, version, when, record=record)


def _stale(attempts: list[AttemptRow], lineage: dict[str, int]) -> list[AttemptRow]:
    """Staged attempts that never published: their batch is not in the lineage, or they were
    staged beside a verb that never published (a reload's new attempts, on its staged rows)."""
    staged = [a for a in attempts if a.status == "staged"]
    stale = [a for a in staged if a.batch_id not in lineage]
    cut = {a.staged_snapshot_id for a in stale if is_verb(a.batch_id)}  # a verb's staged rows
    return stale + [a for a in staged if a not in stale and a.staged_snapshot_id in cut]


def _rolled_back(
    backend: TargetReads, name: str, lineage: dict[str, int], published: dict[str, AttemptRow]
) -> list[str]:
    """Published batches that a rollback of the target removed from its lineage (sorted).
    Versions that expired as ancestors (expiry) and commits without a batch (compaction) are
    not a rollback; the lineage's full view is read only when a published batch is missing."""
    missing = [a for b, a in published.items() if b not in lineage and a.published_snapshot_id is not None]
    if not missing:
        return []
    view = backend.lineage(name)
    return sorted(
        a.batch_id
        for a in missing
        if a.published_snapshot_id is not None
        and view.rolled_back(a.published_snapshot_id, a.published_millis)
    )


def _with_config(
    found: Assessment,
    control: LogReader | None,
    rows: list[LogRow],
    settling: list[tuple[str, str]],
    gone: set[str],
) -> Assessment:
    """`found` with the result-shaping changes of today's configuration since the newest batch
    that recorded its own, as the log holds it once settled: the attempts settling marks
    published (`settling`, newest first) are newer than any it holds; batches it marks
    unloaded or rolled back (`gone`) are no longer published."""
    by_attempt = {r.attempt.attempt: r for r in rows}
    marked = [by_attempt[a] for _, a in settling if a in by_attempt]
    recorded_now = [r for r in marked if r.config_fingerprint is not None and r.has_config]
    newest = (
        (
            recorded_now[0].attempt.batch_id,
            recorded_now[0].attempt.attempt,
            recorded_now[0].config_fingerprint or "",
        )
        if recorded_now
        else last_recorded([r for r in rows if r.attempt.batch_id not in gone])
    )
    if newest is None or control is None:
        return found
    batch_id, attempt, recorded = newest
    now, text = fingerprint(found.table)
    found_changes = changes(control.config_text(found.name, attempt), text) if now != recorded else []
    return replace(found, config_since=batch_id, config_changes=found_changes)
