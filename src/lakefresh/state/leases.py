"""The `leases` control table: which run holds which target tables.

One row per held table: `table_name` (`namespace.table`), `run_id`, `host`, `pid`, `pipeline`
(its file), `command` (the verb that took it), `acquired_at`, `renewed_at`, `expires_at`. A run
takes the lease on every table it will write before it reads anything, in one commit for all of
them; a run that finds a live lease of another run on any of them takes none and stops
(LeaseHeld) or, told to wait, tries again until the lease is free. While the run lives a thread
renews its leases every quarter of their time to live; the run releases them when it ends
(failed, stopped by a signal or not). A killed run's lease is free once it expires. A run whose
release failed (the store it is kept on was unreachable) ended all the same: its process knows
it, and takes its leases over at the next run's start instead of waiting for them to expire.

Every write replaces the table's rows in one commit that is refused if the table was written
since the rows were read (`TableBackend.replace_rows`: a compare-and-swap), then is tried again
from a new read: so of two runs that read the table free, only one takes it. The table is small
(one row per table held now; expired rows are dropped by the next write). Expiry is read from
`expires_at` against the reader's clock: the hosts' clocks must agree to well within the lease's
time to live.
"""

from __future__ import annotations

import os
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from lakefresh.errors import CommitConflictError, LeaseHeld
from lakefresh.lakehouse.session import parse_schema
from lakefresh.state.control import create_control_table

if TYPE_CHECKING:
    from types import TracebackType

    from lakefresh.lakehouse.backend import TableBackend

LEASES_TABLE = "leases"
LEASES_SCHEMA = """
table_name string NOT NULL, run_id string NOT NULL, host string, pid bigint, pipeline string,
command string, acquired_at timestamp NOT NULL, renewed_at timestamp NOT NULL,
expires_at timestamp NOT NULL
"""
ATTEMPTS = 12  # writes tried before a conflict is raised (many pipelines renewing at once)
POLL_SECONDS = 3.0  # how often a waiting run looks again
# the run ids of this process's runs that ended without releasing their leases: no run of theirs
# lives, so their rows are not live leases to this process (other processes wait for them to expire)
_ENDED: set[str] = set()


def ended(holder: Holder) -> bool:
    """Whether `holder` is a run of this process that ended without releasing its leases."""
    return holder.run_id in _ENDED


@dataclass(frozen=True)
class Holder:
    """A run that holds (or asks for) leases."""

    run_id: str
    host: str
    pid: int
    pipeline: str | None
    command: str

    @staticmethod
    def this_process(pipeline: str | None, command: str) -> Holder:
        return Holder(uuid.uuid4().hex, socket.gethostname(), os.getpid(), pipeline, command)


@dataclass(frozen=True)
class LeaseRow:
    table_name: str
    holder: Holder
    acquired_at: datetime  # UTC, aware
    renewed_at: datetime
    expires_at: datetime

    @staticmethod
    def of(row: dict[str, Any]) -> LeaseRow:
        holder = Holder(row["run_id"], row["host"], row["pid"], row["pipeline"], row["command"])
        times = (_utc(row["acquired_at"]), _utc(row["renewed_at"]), _utc(row["expires_at"]))
        return LeaseRow(row["table_name"], holder, *times)

    def row(self) -> dict[str, Any]:
        h = self.holder
        return {
            "table_name": self.table_name,
            "run_id": h.run_id,
            "host": h.host,
            "pid": h.pid,
            "pipeline": h.pipeline,
            "command": h.command,
            "acquired_at": self.acquired_at,
            "renewed_at": self.renewed_at,
            "expires_at": self.expires_at,
        }

    def held(self, waited: str | None = None) -> LeaseHeld:
        """The error that says who holds it."""
        h = self.holder
        return LeaseHeld(
            self.table_name,
            _text(self.acquired_at),
            h.host,
            h.pid,
            h.pipeline,
            _text(self.expires_at),
            waited,
        )

    def describe(self) -> str:
        """One line for `status`: who holds it, since when, until when."""
        h = self.holder
        return (
            f"held by {h.host}/pid {h.pid} ({h.command}) since {_text(self.acquired_at)}, "
            f"expires {_text(self.expires_at)} unless renewed"
        )


def live_leases(rows: list[dict[str, Any]], tables: list[str] | None = None) -> list[LeaseRow]:
    """The leases among the `leases` table's rows that have not expired (of these tables)."""
    now = _now()
    found = [LeaseRow.of(r) for r in rows]
    return [
        r
        for r in found
        if r.expires_at > now and not ended(r.holder) and (tables is None or r.table_name in tables)
    ]


class Leases:
    """Reads and writes the `leases` table through the table backend."""

    def __init__(self, backend: TableBackend, namespace: str) -> None:
        self.backend = backend
        self.table = f"{namespace}.{LEASES_TABLE}"
        self._ready = False

    def ensure(self) -> None:
        if not self._ready:
            create_control_table(self.backend, self.table, LEASES_SCHEMA)
            self._ready = True

    def live(self, tables: list[str] | None = None) -> list[LeaseRow]:
        """The leases not yet expired (of these tables); none when the table does not exist
        (a reader never creates it)."""
        if not self._ready and not self.backend.exists(self.table):
            return []
        return live_leases(self.backend.read_rows(self.table)[1], tables)

    def take(self, tables: list[str], holder: Holder, ttl: float) -> None:
        """The lease on every table of `tables` for `holder`, in one commit; LeaseHeld (naming
        the first table held) if another run holds a live lease on any of them."""

        def change(rows: list[LeaseRow], now: datetime) -> list[LeaseRow]:
            live = [r for r in rows if r.expires_at > now and not ended(r.holder)]
            held = [r for r in live if r.table_name in tables and r.holder.run_id != holder.run_id]
            if held:
                raise held[0].held()
            kept = [r for r in live if r.table_name not in tables]
            until = now + timedelta(seconds=ttl)
            return kept + [LeaseRow(t, holder, now, now, until) for t in tables]

        self._swap(change)

    def renew(self, tables: list[str], holder: Holder, ttl: float) -> list[str]:
        """Move the expiry of `holder`'s leases on `tables` on; the tables whose lease it no
        longer holds (it expired and another run took it), which are not taken back."""
        lost: list[str] = []

        def change(rows: list[LeaseRow], now: datetime) -> list[LeaseRow]:
            mine = {r.table_name: r for r in rows if r.holder.run_id == holder.run_id}
            lost[:] = [t for t in tables if t not in mine]
            until = now + timedelta(seconds=ttl)
            renewed = [replace(r, renewed_at=now, expires_at=until) for r in mine.values()]
            others = [r for r in rows if r.holder.run_id != holder.run_id and r.expires_at > now]
            return others + renewed

        self._swap(change)
        return lost

    def release(self, holder: Holder) -> None:
        """Drop `holder`'s leases (nothing is written when it holds none)."""

        def change(rows: list[LeaseRow], now: datetime) -> list[LeaseRow] | None:
            if not any(r.holder.run_id == holder.run_id for r in rows):
                return None
            return [r for r in rows if r.holder.run_id != holder.run_id and r.expires_at > now]

        self._swap(change)

    def _swap(self, change: Callable[[list[LeaseRow], datetime], list[LeaseRow] | None]) -> None:
        """Read the rows, `change` them (None: nothing to write), and replace them in one commit
        refused if another wrote meanwhile; then read again and try again."""
        schema = parse_schema(LEASES_SCHEMA)
        delay = 0.05
        for attempt in range(1, ATTEMPTS + 1):
            marker, rows = self.backend.read_rows(self.table)
            new = change([LeaseRow.of(r) for r in rows], _now())
            if new is None:
                return
            try:
                self.backend.replace_rows(self.table, [r.row() for r in new], schema, marker)
                return
            except CommitConflictError:
                if attempt == ATTEMPTS:
                    raise
            time.sleep(delay * (1 + random.random()))
            delay = min(delay * 2, 2.0)


class Lease:
    """A run's hold on its tables, as a context manager: taken on entry (waiting up to `wait`
    seconds for a held table, when given), renewed by a daemon thread every quarter of `ttl`,
    released on exit. When a renewal finds a table taken over (the run was stalled past its
    lease), `on_lost` is called with those tables and the renewals end. When `stop` is set (a
    signal) while it waits, it stops waiting: LeaseHeld."""

    def __init__(
        self,
        leases: Leases,
        tables: list[str],
        holder: Holder,
        ttl: float,
        wait: float | None = None,
        say: Callable[[str], None] | None = None,
        on_lost: Callable[[list[str]], None] | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        self.leases = leases
        self.tables = sorted(set(tables))
        self.holder = holder
        self.ttl = ttl
        self.wait = wait
        self.say = say or (lambda _text: None)
        self.on_lost = on_lost
        self.stop = stop or threading.Event()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Lease:
        self.leases.ensure()
        self._take()
        self._thread = threading.Thread(target=self._renew, name="lakefresh-lease", daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
        try:
            self.leases.release(self.holder)
        except Exception as error:  # it expires, unless a later run of this process takes it over
            _ENDED.add(self.holder.run_id)
            self.say(
                f"the lease on {', '.join(self.tables)} was not released ({error}); it expires, or "
                "the next run of this process takes it over"
            )

    def _take(self) -> None:
        started = time.monotonic()
        said = False
        while True:
            try:
                self.leases.take(self.tables, self.holder, self.ttl)
                return
            except LeaseHeld as held:
                waited = time.monotonic() - started
                if self.wait is None or waited >= self.wait or self.stop.is_set():
                    if self.wait is None:
                        raise
                    row = self.leases.live([held.table])
                    raise (row[0].held(f"{round(waited)}s") if row else held) from None
                if not said:
                    self.say(f"waiting for the lease: {held}")
                    said = True
                self.stop.wait(min(POLL_SECONDS, max(0.1, self.wait - waited)))

    def _renew(self) -> None:
        while not self._done.wait(self.ttl / 4):
            try:
                lost = self.leases.renew(self.tables, self.holder, self.ttl)
            except Exception as error:  # tried again at the next quarter; it expires meanwhile
                self.say(f"the lease on {', '.join(self.tables)} was not renewed: {error}")
                continue
            if lost:
                self.say(f"the lease on {', '.join(lost)} expired and another run took it")
                if self.on_lost is not None:
                    self.on_lost(lost)
                return


def _now() -> datetime:
    return datetime.now(UTC)


def _utc(value: datetime) -> datetime:
    """A timestamp as read (naive, in local time, as PySpark gives one) as an aware UTC time."""
    return value.astimezone(UTC)


def _text(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
