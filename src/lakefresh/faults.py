"""Fault injection for crash drills and tests: `LAKEFRESH_FAULTS=point[@batch][:action],...`.

Points, in the order a batch passes them: after_read, after_stage, after_write, after_audit,
after_record_staged, after_publish, after_record (passed by every batch of a table's run once the
commit that marks them published is made, at the run's end: run/steps.py). Actions: `raise` (default) raises
:class:`InjectedFault`; `kill` ends the process at once with SIGKILL, as a crash would;
`crash` raises :class:`SimulatedCrash`, a BaseException that no handler of lakefresh catches, so
no clean-up runs and the durable state is what `kill` leaves, in the same process (the contract
suites use it at every point); `pause=PATH` (for race tests) writes `PATH.paused`, then waits
until the file PATH exists (at once if it does already; at most LAKEFRESH_FAULT_PAUSE_SECONDS,
default 300, then it raises).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from lakefresh.errors import InjectedFault

POINTS = (
    "after_read",
    "after_stage",
    "after_write",
    "after_audit",
    "after_record_staged",
    "after_publish",
    "after_record",
)


class SimulatedCrash(BaseException):
    """The process 'dies' here: not an Exception, so no `except Exception` clean-up runs."""


ACTIONS = ("raise", "kill", "crash")


def checkpoint(point: str, batch_id: str) -> None:
    spec = os.environ.get("LAKEFRESH_FAULTS")
    if not spec:
        return
    for item in spec.split(","):
        where, _, action = item.strip().rpartition(":")  # a batch id may hold ':' (a time)
        if not where or not (action in ACTIONS or action.startswith("pause=")):
            where, action = item.strip(), "raise"
        name, _, only = where.partition("@")
        if name != point or (only and only != batch_id):
            continue
        if action == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if action == "crash":
            raise SimulatedCrash(f"simulated crash at {point} of batch {batch_id}")
        if action.startswith("pause="):
            _pause(Path(action.removeprefix("pause=")), point, batch_id)
            continue
        raise InjectedFault(f"injected fault at {point} of batch {batch_id}")


def _pause(go: Path, point: str, batch_id: str) -> None:
    if go.exists():
        return
    Path(f"{go}.paused").write_text(f"{point}@{batch_id}\n", encoding="utf-8")
    deadline = time.monotonic() + float(os.environ.get("LAKEFRESH_FAULT_PAUSE_SECONDS", "300"))
    while not go.exists():
        if time.monotonic() > deadline:
            raise InjectedFault(f"paused at {point} of batch {batch_id}; {go} never appeared")
        time.sleep(0.05)
