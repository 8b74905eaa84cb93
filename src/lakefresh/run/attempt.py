"""One try of one batch (:class:`Attempt`): what each step of steps.py found, and the batch's
`batches` row built from it."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from lakefresh.clock import utc_now
from lakefresh.results import BatchResult, PhaseTimes
from lakefresh.state.batch_row import BatchRow
from lakefresh.strategies import Rebuild

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

    from lakefresh.config.models import TableConfig
    from lakefresh.lakehouse.backend import StagedCommit
    from lakefresh.lakehouse.commit import Transaction
    from lakefresh.run.reading import ReadRows
    from lakefresh.sources import BatchRef
    from lakefresh.strategies import ChangeSet, StageContext, Strategy


# The longest record a commit carries (characters of JSON); a longer one is written as a row.
MAX_CARRIED = 4096


@dataclass
class Attempt:
    """One try of one batch: what each step found, and the batch's `batches` row built from it."""

    table: TableConfig
    name: str  # namespace.table
    strategy: Strategy
    ref: BatchRef
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    started: datetime = field(default_factory=utc_now)
    times: PhaseTimes = field(default_factory=PhaseTimes)
    exists: bool = False  # whether the target existed before this attempt
    target_schema: StructType | None = None  # its schema then
    head: int | None = None  # its head then
    txn: Transaction | None = None  # its commit (a backlog group's batches share one)
    rows: ReadRows | None = None
    ctx: StageContext | None = None
    change: ChangeSet | None = None
    parent_rows: int = 0  # rows in the target's head, under the staged commit
    recorded: bool = False  # whether its `staged` row is in the log
    result: BatchResult = field(init=False)

    def __post_init__(self) -> None:
        if self.ref.replay.get("backfill") == "overwrite":
            self.strategy = Rebuild(self.strategy)  # the batch builds the table anew, then replaces it
        ref = self.ref
        self.result = BatchResult(self.name, ref.batch_id, "failed", ref.position, seconds=self.times)

    @property
    def staged(self) -> StagedCommit | None:
        """Its commit once written (staged, or visible at once)."""
        return self.txn.staged if self.txn is not None else None

    @property
    def publishing(self) -> bool:
        """Whether its publish began (from then on only the lineage knows)."""
        return self.txn is not None and self.txn.publishing

    def carried(self) -> dict[str, Any]:
        """What of its row travels in the staged commit (the rest is known only after it or
        read from the commit itself), for a crash between the publish and the log's record."""
        keep = (
            "attempt", "source_kind", "strategy", "source_position", "replay", "started_at",
            "read_seconds", "stage_seconds", "config_fingerprint", "record_count",
            "quarantined_count", "duplicate_count", "status_counts", "range_start", "range_end",
        )  # fmt: skip
        row = self.row("published", **self.counts()).columns()
        return {k: row[k] for k in keep}

    def counts(self) -> dict[str, Any]:
        """The batch's counts and range, known once it is staged (before its write)."""
        r = self.result
        return {
            "record_count": r.record_count,
            "quarantined_count": r.quarantined,
            "duplicate_count": r.duplicates,
            "status_counts": dict(r.counts),
            "range_start": r.range_start,
            "range_end": r.range_end,
        }

    def row(self, status: str, **more: Any) -> BatchRow:
        """The attempt's row of the `batches` log."""
        r, staged = self.result, self.staged
        columns: dict[str, Any] = {
            "source_position": self.ref.position,
            "replay": json_text(self.ref.replay),
            "started_at": self.started,
            "read_seconds": round(self.times.read, 3),
            "stage_seconds": round(self.times.stage, 3),
            "audit_seconds": round(self.times.audit, 3),
            **more,
        }
        if staged is not None:
            columns.update(
                **self.counts(),
                staged_snapshot_id=staged.version,
                files_written=r.files_written,
                bytes_written=r.bytes_written,
                rule_results=dict(r.rules) or None,
            )
        return BatchRow.of_table(
            self.name, self.table, self.ref.batch_id, self.id, status, configured=True, **columns
        )


def json_text(value: object) -> str:
    return json.dumps(value, default=str, sort_keys=True)
