"""The upkeep policy of a target: compaction, snapshot expiry, orphan files (`lakefresh maintain`)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from lakefresh.config.base import Model, parse_duration


class MaintenanceConfig(Model):
    """Upkeep of a target (`lakefresh maintain`, or after every run with `after_runs`)."""

    compact: bool = Field(True, description="Rewrite small data files and apply delete files.")
    expire_after: float = Field(
        7 * 86400.0,
        description="Expire snapshots older than this (`7d`, `12h`); never one a downstream "
        "`table_changes` load of this pipeline still starts from, never the newest `keep_snapshots`.",
    )
    keep_snapshots: int = Field(10, ge=1, description="Snapshots always kept, however old.")
    remove_orphans_after: float | None = Field(
        3 * 86400.0,
        description="Remove files no snapshot references that are older than this (`3d`: a write "
        "in progress is younger); null: never.",
    )
    after_runs: bool = Field(False, description="Maintain the table after each run that published to it.")
    compact_at_delete_files: int | None = Field(
        20,
        ge=1,
        description="Compact a target after a run that left it holding at least this many delete "
        "files (merge-on-read writes them; readers pay for each until a compaction); null: never.",
    )

    @field_validator("expire_after", "remove_orphans_after", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        return value if value is None else parse_duration(value)

    @field_validator("remove_orphans_after")
    @classmethod
    def _a_day_at_least(cls, value: float | None) -> float | None:
        if value is not None and value < 86400:
            raise ValueError(
                "must be at least 1d: a file younger than that may belong to a write in progress "
                "(Iceberg refuses shorter intervals too)"
            )
        return value
