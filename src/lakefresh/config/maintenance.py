"""The upkeep policy of a target: compaction, snapshot expiry, orphan files (`lakefresh maintain`)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from lakefresh.config.base import Duration, Model, parse_duration


class MaintenanceConfig(Model):
    """Upkeep of a target (`lakefresh maintain`, or after every run with `after_runs`)."""

    compact: bool = Field(True, description="Rewrite small data files and apply delete files.")
    expire_after: Duration = Field(
        7 * 86400.0,
        description="Expire snapshots older than this (`7d`, `12h`); never one a downstream "
        "`table_changes` load of this pipeline still starts from, never the newest `keep_snapshots`.",
    )
    # versions (Iceberg's snapshots, Delta's versions); users' pipeline files name it, so it stays
    keep_snapshots: int = Field(10, ge=1, description="Snapshots always kept, however old.")
    remove_orphans_after: Duration | None = Field(
        3 * 86400.0,
        description="Remove files no snapshot references that are older than this (`3d`: a write "
        "in progress is younger); null: never.",
    )
    after_runs: bool = Field(False, description="Maintain the table after each run that published to it.")
    compact_at_deleted_ratio: float | None = Field(
        0.1,
        gt=0,
        le=1,
        description="Compact a target after a run that left at least this share of its stored rows "
        "deleted but still in its data files (merge-on-read's position deletes, Delta's deletion "
        "vectors: readers skip them on every scan until a compaction); null: never.",
    )
    compact_min_deleted_rows: int = Field(
        10_000,
        ge=1,
        description="... and at least this many rows: a small table's readers barely pay for its deletes.",
    )
    compact_at_delete_files: int | None = Field(
        None,
        ge=1,
        description="Also compact after a run that left at least this many delete files (Iceberg keeps "
        "at most one per data file, so this counts files touched, not deletes); null: never.",
    )

    @model_validator(mode="before")
    @classmethod
    def _no_compaction_in_runs(cls, data: Any) -> Any:
        """`compact_at_delete_files: null` alone said "never compact after a run" before the
        ratio existed (and the docs advised it for the largest tables): it still does."""
        if (
            isinstance(data, dict)
            and "compact_at_delete_files" in data
            and data["compact_at_delete_files"] is None
        ):
            return {"compact_at_deleted_ratio": None, **data}
        return data

    def compaction_due(self, delete_files: int, deleted_rows: int, stored_rows: int) -> str | None:
        """Why a target holding these deletes (TableBackend.deletes) is due a compaction, or None."""
        ratio, files = self.compact_at_deleted_ratio, self.compact_at_delete_files
        share = deleted_rows / stored_rows if stored_rows else 0.0
        if ratio is not None and deleted_rows >= self.compact_min_deleted_rows and share >= ratio:
            return (
                f"{deleted_rows} of {stored_rows} stored rows deleted ({share:.0%}; "
                f"compact_at_deleted_ratio {ratio:g})"
            )
        if files is not None and delete_files >= files:
            return f"{delete_files} delete files (compact_at_delete_files {files})"
        return None

    def checks_deletes(self) -> bool:
        """Whether the policy looks at a target's deletes after a run at all."""
        return self.compact_at_deleted_ratio is not None or self.compact_at_delete_files is not None

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
