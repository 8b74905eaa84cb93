"""Fault injection for crash drills and tests: `LAKEFRESH_FAULTS=point[@batch][:action],...`.

Points, in the order a batch passes them: after_read, after_stage, after_write, after_audit,
after_record_staged, after_publish, after_record. Actions: `raise` (default) raises
:class:`InjectedFault`; `kill` ends the process at once with SIGKILL, as a crash would.
"""

from __future__ import annotations

import os
import signal

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


def checkpoint(point: str, batch_id: str) -> None:
    spec = os.environ.get("LAKEFRESH_FAULTS")
    if not spec:
        return
    for item in spec.split(","):
        where, _, action = item.strip().partition(":")
        name, _, only = where.partition("@")
        if name != point or (only and only != batch_id):
            continue
        if action == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        raise InjectedFault(f"injected fault at {point} of batch {batch_id}")
