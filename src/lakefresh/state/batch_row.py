"""A row of the `batches` log, typed: its columns are those of state/control.py's
`BATCHES_SCHEMA`, in its order (tests/unit/test_batch_row.py holds them equal). Every writer of
the log builds one: a batch's attempt (run/attempt.py), a skipped batch, a recovered one, a record
its commit carried, and the verbs' own commits (`maintain`, `reset`, `unload`, `reload`)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from lakefresh.config.fingerprint import fingerprint

if TYPE_CHECKING:
    from datetime import datetime

    from lakefresh.config.models import TableConfig

# the source kind of lakefresh's own commits and log rows (the verbs'), beside the sources' kinds
VERB_SOURCE_KIND = "lakefresh"


@dataclass
class BatchRow:
    """One table's batch and attempt in the `batches` log (state/control.py says each status)."""

    table_name: str
    batch_id: str
    attempt: str
    status: str
    source_kind: str | None = None
    source_position: str | None = None
    replay: str | None = None
    record_count: int | None = None
    quarantined_count: int | None = None
    duplicate_count: int | None = None
    status_counts: dict[str, int] | None = None
    staged_snapshot_id: int | None = None  # versions, named as their stored columns
    published_snapshot_id: int | None = None
    files_written: int | None = None
    bytes_written: int | None = None
    read_seconds: float | None = None
    stage_seconds: float | None = None
    audit_seconds: float | None = None
    publish_seconds: float | None = None
    started_at: datetime | None = None
    published_at: datetime | None = None
    error: str | None = None
    lakefresh_version: str | None = None
    strategy: str | None = None
    effective_count: int | None = None
    range_start: str | None = None
    range_end: str | None = None
    effective_ranges: list[dict[str, Any]] | None = None
    config_fingerprint: str | None = None
    config: str | None = None
    rule_results: dict[str, int] | None = None
    superseded: dict[str, int] | None = None

    @classmethod
    def of_table(
        cls,
        name: str,
        table: TableConfig,
        batch_id: str,
        attempt: str,
        status: str,
        *,
        verb: bool = False,
        configured: bool = False,
        **columns: Any,
    ) -> BatchRow:
        """A row of `table` (named `name`, namespace.table): its source kind (lakefresh's own for a
        `verb`'s commit) and strategy, and, `configured`, the configuration that shaped the
        batch's result (its fingerprint, and the settings without secrets)."""
        if configured:
            columns["config_fingerprint"], columns["config"] = fingerprint(table)
        return cls(
            name,
            batch_id,
            attempt,
            status,
            source_kind=VERB_SOURCE_KIND if verb else table.source.kind,
            strategy=table.strategy.kind,
            **columns,
        )

    @classmethod
    def from_record(cls, record: dict[str, Any], **columns: Any) -> BatchRow:
        """A row from a record (a commit's JSON): its columns, then `columns` over them; keys
        that are no column are left out."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in {**record, **columns}.items() if k in known})

    def columns(self) -> dict[str, Any]:
        """The row's columns by name, in the schema's order."""
        return {f.name: getattr(self, f.name) for f in fields(self)}
