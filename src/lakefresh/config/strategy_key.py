"""The `key` strategy's config (alias `scd1`)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from lakefresh.config.base import Duration, Model, check_column_name, parse_duration
from lakefresh.config.change_log import OUTPUT_DESCRIPTION, ChangeLogColumns, EventTimeRule, Output
from lakefresh.config.strategy_base import DeleteRule, NamedColumns, SurrogateKeyConfig, named


class DedupeBy(Model):
    """Inside a batch, the row of a key with the highest (desc) or lowest (asc) value of a column
    wins; ties go to the first occurrence (by file, then record)."""

    by: str = Field(description="The column that picks a key's winning row inside a batch.")
    order: Literal["asc", "desc"] = Field("desc", description="desc: the highest value wins.")

    @field_validator("by")
    @classmethod
    def _by(cls, value: str) -> str:
        return check_column_name(value, "column")


class KeyStrategyConfig(ChangeLogColumns):
    """Upsert by natural key, with change detection by hash and record status codes N/C/U/S/O."""

    dimension: ClassVar[bool] = True

    kind: Literal["key", "scd1"]
    keys: list[str] = Field(min_length=1, description="Natural key columns.")
    date_column: str | None = Field(
        None,
        description="The record's last update time in the source. Older records never overwrite "
        "newer ones. Without it, the batch time (e.g. the file's modification time) is the "
        "record's date.",
    )
    exclude_from_cdc: list[str] = Field(
        default_factory=list, description="Columns ignored by change detection (still stored)."
    )
    delete: DeleteRule | None = Field(None, description="Rows that delete their key.")
    truncate: DeleteRule | None = Field(
        None,
        description="Rows that truncate the table (Databricks' apply_as_truncates), e.g. "
        "{condition: \"op = 'TRUNCATE'\"}: every stored key not newer than the marker is deleted "
        "(E) and the batch's rows before it are dropped (O); the marker itself is not stored (Z) "
        "and may have NULL keys.",
    )
    soft_delete_column: str | None = Field(
        None,
        description="A delete leaves a tombstone: the key's row stays, its values NULL, this "
        "boolean column true and its date the delete's, so a later-arriving row older than the "
        "delete never brings the key back (Databricks' apply_as_deletes tombstones); a newer row "
        "does. Readers filter on the column. Without it, a delete removes the row.",
    )
    tombstone_retention: Duration | None = Field(
        None,
        description="Remember each deleted key's date out of sight, in `<table>__tombstones` "
        "beside the target, for this long (90s, 12h, 2d): a row older than the delete that "
        "arrives in a later batch stays out (O) instead of bringing the key back, as Databricks' "
        "AUTO CDC tombstones (pipelines.cdc.tombstoneGCThresholdInSeconds) and Hudi's ordering "
        "field do; readers of the target never see them. They are written with the batch's "
        "commit; `maintain` deletes those past the retention. Without it (and without "
        "soft_delete_column) a deleted key is forgotten.",
    )
    undated_deletes: Literal["quarantine", "apply"] = Field(
        "quarantine",
        description="A delete whose date_column is NULL: quarantined like any row without a "
        "date (its place in the order is unknown), or `apply`: it deletes its key whatever the "
        "stored row's date, as Hudi does with a delete that has no ordering value (its SQL "
        "DELETE writes such records). Such a delete loses to a dated row of its key in the "
        "same batch, and keeps no tombstone.",
    )
    dedupe: Literal["last", "first"] | DedupeBy = Field(
        "last",
        description="Which of a key's rows inside one batch wins, among those with the latest "
        "date: last or first by file, then record; or {by: column, order: asc|desc} (only "
        "without date_column). It never orders rows across batches: the batch time (or "
        "date_column) does.",
    )
    full_snapshots: bool = Field(
        False,
        description="Each batch is a full snapshot of the source: stored keys the batch lacks are "
        "deleted (status R), as AUTO CDC FROM SNAPSHOT does for SCD type 1.",
    )
    snapshot_scope: list[str] = Field(
        default_factory=list,
        description="With full_snapshots: only stored keys whose values in these columns occur in "
        "the batch may be deleted, so a batch is a full snapshot of its partitions only (dlt's "
        "merge_key).",
    )
    when_matched: Literal["update", "delete", "ignore"] = Field(
        "update",
        description="What a row whose key is stored (and not older) does: update it (C), delete "
        "it (D), or nothing (M), as a MERGE's WHEN MATCHED clause.",
    )
    when_not_matched: Literal["insert", "ignore"] = Field(
        "insert",
        description="What a row whose key is not stored does: insert it (N), or nothing (X).",
    )
    drop_columns: list[str] = Field(
        default_factory=list,
        description="Batch columns that are read (a delete marker, the date, a dedupe column) but "
        "not stored in the target, as Databricks' except_column_list.",
    )
    surrogate_key: SurrogateKeyConfig | None = Field(None, description="A surrogate key column.")
    history: bool = Field(
        False,
        description="Also keep `<table>_history`: every change of a key as an SCD2 version "
        "(valid_from, valid_to, is_current), refreshed from the same batches.",
    )
    output: Output = Field(
        "table",
        description=OUTPUT_DESCRIPTION + " As an upsert stream (Open Data Fabric's UpsertStream): "
        "+A for a new key, -C and +C for a change, -R for a delete, nothing for an unchanged row.",
    )
    event_time: str | None = Field(
        None,
        description="With output: change_log, the column whose value is an event's time (a "
        "timestamp, a date or a number); a NULL takes the batch's time; -C and -R carry the old "
        "row's. Without it, the record's date (date_column, or the batch's time).",
    )
    event_time_rule: EventTimeRule = Field(
        "odf",
        description="With event_time: odf: a change of the event time alone is a correction (-C "
        "then +C; a NULL in the new row changes nothing), as in Open Data Fabric's upsert stream; "
        "effective: the event time says when, not what, and a change of it alone appends nothing. "
        "-C and -R carry the old row's event time either way.",
    )

    @field_validator("keys", "exclude_from_cdc", "drop_columns", "snapshot_scope")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        for v in value:
            check_column_name(v, "column")
        if len(set(value)) != len(value):
            raise ValueError(f"columns must not repeat, got {value}")
        return value

    @field_validator("tombstone_retention", mode="before")
    @classmethod
    def _retention(cls, value: str | float | None) -> float | None:
        return None if value is None else parse_duration(value)

    @field_validator("soft_delete_column", "event_time")
    @classmethod
    def _soft(cls, value: str | None) -> str | None:
        return value if value is None else check_column_name(value, "column")

    @model_validator(mode="after")
    def _log(self) -> KeyStrategyConfig:
        if self.output == "change_log":
            table_only = {
                "surrogate_key": self.surrogate_key,
                "history": self.history,
                "soft_delete_column": self.soft_delete_column,
                "tombstone_retention": self.tombstone_retention,
            }
            used = [name for name, value in table_only.items() if value]
            if used:
                raise ValueError(
                    f"{', '.join(used)}: not with output: change_log (the log keeps every version "
                    "and every delete already)"
                )
        elif self.event_time:
            raise ValueError("event_time names the change log's event time: set output: change_log")
        if "event_time_rule" in self.model_fields_set and not self.event_time:
            raise ValueError("event_time_rule judges changes of event_time: set event_time")
        return self

    @model_validator(mode="after")
    def _disjoint(self) -> KeyStrategyConfig:
        clash = set(self.keys) & set(self.exclude_from_cdc)
        if clash:
            raise ValueError(f"key column(s) {sorted(clash)} cannot also be in exclude_from_cdc")
        clash = set(self.keys) & set(self.drop_columns)
        if clash:
            raise ValueError(f"key column(s) {sorted(clash)} must be stored: not in drop_columns")
        if self.truncate and self.full_snapshots:
            raise ValueError(
                "truncate: not with full_snapshots (a full snapshot deletes what it lacks already)"
            )
        if self.event_time and self.event_time in {*self.drop_columns}:
            raise ValueError(f"event_time {self.event_time!r} is written to the log: not in drop_columns")
        if self.snapshot_scope and not self.full_snapshots:
            raise ValueError("snapshot_scope limits what a full snapshot deletes: set full_snapshots")
        if isinstance(self.dedupe, DedupeBy) and self.date_column:
            raise ValueError(
                "dedupe: {by: ...} picks a key's row when there is no ordering column; with "
                "date_column the latest date wins (ties: dedupe last or first)"
            )
        if self.soft_delete_column and self.soft_delete_column in {*self.keys, *self.drop_columns}:
            raise ValueError(
                f"soft_delete_column {self.soft_delete_column!r} clashes with a key or dropped column"
            )
        if self.tombstone_retention and self.soft_delete_column:
            raise ValueError(
                "tombstone_retention: not with soft_delete_column (its tombstones are the "
                "target's rows already)"
            )
        if self.undated_deletes == "apply" and not (self.date_column and self.delete):
            raise ValueError("undated_deletes: apply needs date_column and delete")
        if self.date_column and self.date_column in self.keys:
            raise ValueError(f"date_column {self.date_column!r} cannot be a key column")
        if self.surrogate_key:
            named = {self.surrogate_key.column, self.surrogate_key.inferred_column}
            clash = named & {*self.keys, *self.exclude_from_cdc, self.date_column}
            if clash:
                raise ValueError(f"surrogate key column(s) {sorted(clash)} clash with other columns")
        return self

    def key_columns(self) -> list[str]:
        return list(self.keys)

    def surrogate(self) -> SurrogateKeyConfig | None:
        return self.surrogate_key

    def keeps_history(self) -> bool:
        return self.history

    def corrected_rows_alone(self) -> bool:
        return not self.full_snapshots and not self.writes_change_log()

    def added_columns(self) -> list[str]:
        soft = [self.soft_delete_column] if self.soft_delete_column else []
        return [*soft, *super().added_columns()]

    def one_batch_at_a_time(self) -> str | None:
        options = {
            "full_snapshots": self.full_snapshots,
            "soft_delete_column": self.soft_delete_column,
            "when_matched": self.when_matched != "update",
            "when_not_matched": self.when_not_matched != "insert",
            "truncate": self.truncate,
            "tombstone_retention": self.tombstone_retention,
        }
        used = [name for name, on in options.items() if on]
        if used:
            return f"{', '.join(used)}: applied one batch at a time"
        return super().one_batch_at_a_time()

    def column_fields(self) -> NamedColumns:
        return [
            *named("keys", self.keys),
            *named("exclude_from_cdc", self.exclude_from_cdc),
            *named("date_column", self.date_column),
            *named("event_time", self.event_time),
            *(self.delete.column_fields() if self.delete else []),
            *(self.truncate.column_fields("truncate") if self.truncate else []),
            *named("drop_columns", self.drop_columns),
            *named("snapshot_scope", self.snapshot_scope),
            *(named("dedupe.by", self.dedupe.by) if isinstance(self.dedupe, DedupeBy) else []),
        ]
