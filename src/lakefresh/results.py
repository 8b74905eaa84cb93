"""What every call returns and what the `batches` control table stores. No pyspark here."""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

# The JSON output's names of a version (`--output json`; scripts read them): a result's `version`
# is `snapshot_id` there, its `versions` (table -> version) are `snapshots`.
JSON_KEYS = {"version": "snapshot_id", "versions": "snapshots"}


def earlier_name(now: str) -> property:
    """A read-only alias of attribute `now` under its earlier name (JSON_KEYS'), which warns:
    Python callers written before versions were named neutrally keep working."""

    def read(self: Any) -> Any:
        warnings.warn(f"use .{now}: the earlier name is deprecated", DeprecationWarning, stacklevel=2)
        return getattr(self, now)

    return property(read, doc=f"Deprecated: `{now}`.")


def json_keys(out: dict[str, Any]) -> dict[str, Any]:
    """A result as a dict (`asdict`) with the JSON output's names for its keys (JSON_KEYS)."""
    return {JSON_KEYS.get(k, k): v for k, v in out.items()}


@dataclass
class PhaseTimes:
    """Seconds spent in each step of a batch."""

    read: float = 0.0
    stage: float = 0.0
    audit: float = 0.0
    publish: float = 0.0

    @property
    def total(self) -> float:
        return self.read + self.stage + self.audit + self.publish


@dataclass
class BatchResult:
    """One batch applied (or not) to one table."""

    table: str
    batch_id: str
    status: str  # published | failed | audit_failed | refused | skipped
    position: str = ""
    record_count: int = 0
    quarantined: int = 0
    duplicates: int = 0
    skeletons: int = 0  # skeleton rows this batch's lookups added to dimensions
    counts: dict[str, int] = field(default_factory=dict)
    version: int | None = None
    files_written: int = 0
    bytes_written: int = 0
    seconds: PhaseTimes = field(default_factory=PhaseTimes)
    error: str | None = None
    in_config: bool = False  # it failed on the pipeline file (a transform, a view): fix it first
    effective_count: int | None = None  # rows of this batch in the target when it was published
    range_start: str | None = None  # the range a range strategy's batch replaced
    range_end: str | None = None
    rules: dict[str, int] = field(default_factory=dict)  # violations per data-quality rule

    snapshot_id = earlier_name("version")

    @property
    def inserted(self) -> int:
        return self.counts.get("N", 0)

    @property
    def updated(self) -> int:
        return self.counts.get("C", 0)

    @property
    def deleted(self) -> int:
        return self.counts.get("D", 0)

    @property
    def unchanged(self) -> int:
        return self.counts.get("U", 0) + self.counts.get("S", 0)

    def to_dict(self) -> dict[str, Any]:
        out = json_keys(asdict(self))
        out["seconds"]["total"] = round(self.seconds.total, 3)
        return out


@dataclass
class TableResult:
    """What one run did to one table."""

    table: str
    batches: list[BatchResult] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)  # published batches found unrecorded
    reapplied: list[str] = field(default_factory=list)  # rolled-back batches to be taken again
    refreshed: dict[str, Any] | None = None  # a full refresh before its batches: what it did
    error: str | None = None
    resume_command: str | None = None
    in_config: bool = False  # it stopped on the pipeline file (before any batch of its own)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def fix_in_config(self) -> bool:
        """Whether the fix is in the pipeline file: running again alone cannot help."""
        failed = [b for b in self.batches if b.error is not None]
        return self.in_config or bool(failed and failed[-1].in_config)

    @property
    def quarantined(self) -> int:
        """Rows its published batches sent to quarantine."""
        return sum(b.quarantined for b in self.batches if b.status == "published")

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "ok": self.ok,
            "error": self.error,
            "quarantined": self.quarantined,
            "resume_command": self.resume_command,
            "fix_in_pipeline_file": self.fix_in_config,
            "recovered": self.recovered,
            "full_refresh": self.refreshed,
            "batches": [b.to_dict() for b in self.batches],
        }


@dataclass
class RunResult:
    """What one run of a pipeline did."""

    tables: list[TableResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(t.ok for t in self.tables)

    @property
    def batches(self) -> list[BatchResult]:
        return [b for t in self.tables for b in t.batches]

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "tables": [t.to_dict() for t in self.tables]}


@dataclass(frozen=True)
class TableStatus:
    """Where one table stands: its position in the source and its last batch."""

    table: str
    exists: bool
    batches_published: int
    last_batch_id: str | None
    position: str | None
    last_published_at: datetime | None
    rows: int | None
    counts: dict[str, int]
    pending: int | None = None
    held: int | None = None  # batches its source holds that the operator took out (with pending)
    source_error: str | None = None  # why the source could not be listed (with pending)
    quarantined: int = 0  # its rows waiting in quarantine (not replayed)
    lease: str | None = None  # who holds the table's lease now, and until when
    freshness: str | None = None  # pass, warn or error against its `freshness` (None: none set)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["last_published_at"] = self.last_published_at.isoformat() if self.last_published_at else None
        return out


@dataclass
class TableFreshness:
    """How fresh one target is: when its newest batch was loaded, and when the newest batch its
    source holds was produced, against its `freshness` bounds (seconds)."""

    table: str
    status: str  # pass, warn, error; `none` without a `freshness` setting
    loaded_at: datetime | None  # the newest published batch's publish time (UTC)
    age: float | None  # seconds since then; None: never loaded
    warn_after: float | None = None
    error_after: float | None = None
    source_newest: datetime | None = None  # the newest batch the source lists (files' time, UTC)
    source_age: float | None = None
    pending: int | None = None  # batches the source holds that no run took: a run is due
    source_error: str | None = None  # why the source could not be listed

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for name in ("loaded_at", "source_newest"):
            out[name] = out[name].isoformat() if out[name] else None
        return out
