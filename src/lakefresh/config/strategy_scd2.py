"""The `scd2` strategy's config."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from lakefresh.config.base import check_column_name
from lakefresh.config.strategy_base import (
    DeleteRule,
    KeyedStrategyBase,
    NamedColumns,
    SurrogateKeyConfig,
    named,
)


class Scd2StrategyConfig(KeyedStrategyBase):
    """Slowly changing dimension, type 2: every change of the tracked columns is a version."""

    dimension: ClassVar[bool] = True

    kind: Literal["scd2"]
    keys: list[str] = Field(
        default_factory=list,
        description="Natural key columns. Without keys, give row_hash: each distinct row is its own entity.",
    )
    row_hash: str | None = Field(
        None,
        description="Instead of keys: a column lakefresh fills with a hash of the whole row "
        "(dlt's _dlt_id), which identifies it. A changed row retires its old hash and opens the "
        "new one; needs full_snapshots.",
    )
    track: list[str] | None = Field(
        None, description="Columns whose change opens a new version (default: all non-key columns)."
    )
    track_except: list[str] = Field(
        default_factory=list,
        description="Columns that never open a version; a change to them updates the version in place.",
    )
    untracked: Literal["update", "ignore"] = Field(
        "update",
        description="A change of columns that are not tracked: update the current version in "
        "place (T), or ignore it, keeping the values that opened the version (dbt's check "
        "strategy).",
    )
    sequence_by: str | None = Field(
        None,
        description="Timestamp or number ordering a key's changes; a version is valid from it. "
        "Without it, the batch time (e.g. the file's modification time).",
    )
    delete: DeleteRule | None = Field(None, description="Rows that close their key's version.")
    soft_delete_column: str | None = Field(
        None, description="Boolean column set on a version that a delete closed."
    )
    full_snapshots: bool = Field(
        False,
        description="Each batch is a full snapshot of the source: a key with a current version "
        "that the batch lacks is closed at the batch's time. Leave false for incremental feeds, "
        "where an absent key is simply unchanged.",
    )
    snapshot_scope: list[str] = Field(
        default_factory=list,
        description="With full_snapshots: only keys whose current values in these columns occur "
        "in the batch may be retired, so a batch is a full snapshot of its partitions only (dlt's "
        "merge_key).",
    )
    change_detection: Literal["columns", "sequence"] = Field(
        "columns",
        description="columns: a change of the tracked columns opens a version; sequence: every "
        "row whose sequence_by moved past the key's latest opens one, whatever its values (dbt's "
        "timestamp strategy, SQLMesh's SCD_TYPE_2_BY_TIME; pair it with late_rows: ignore).",
    )
    late_rows: Literal["apply", "ignore", "error"] = Field(
        "apply",
        description="A row at or before its key's latest stored event: apply slots it into history "
        "(L; at the same point the batch's row replaces the stored one), ignore leaves it out (O), "
        "error refuses the batch.",
    )
    resent_rows: Literal["derive", "record", "skip"] | None = Field(
        None,
        description="A row re-sent unchanged at a newer batch time (U, as a full snapshot "
        "re-sends every key). derive (the default with full_snapshots, validity from the batch "
        "time, late_rows: apply and no snapshot_scope) writes nothing for it: a snapshot that "
        "arrives late still re-cuts history exactly, its re-sends being implied by the versions "
        "and the snapshot times the table holds, so a batch writes only the versions it opens, "
        "closes or updates and the event memory grows with changes, not batches. record (the "
        "default elsewhere) keeps its time in the version's event memory (the version is "
        "rewritten). skip writes nothing for it and refuses a batch older than the table's "
        "latest (validity from the batch time, no sequence_by).",
    )
    deletes: Literal["close", "new_record"] = Field(
        "close",
        description="close: a delete (or a key absent from a full snapshot) closes the version; "
        "new_record: it also opens a version that repeats the last values with "
        "soft_delete_column true (dbt's hard_deletes: new_record), closed when the key returns.",
    )
    first_valid_from: Literal["sequence", "epoch", "epoch_on_first_load"] = Field(
        "sequence",
        description="sequence: a key's first version is valid from its first event; epoch: from "
        "1970-01-01 (SQLMesh's SCD_TYPE_2_BY_TIME); epoch_on_first_load: from 1970-01-01 for the "
        "keys of the table's first load only, later keys from their first event (SQLMesh's "
        "SCD_TYPE_2_BY_COLUMN).",
    )
    valid_from_copy: str | None = Field(
        None,
        description="A column that repeats each version's valid_from (dbt's dbt_updated_at).",
    )
    drop_columns: list[str] = Field(
        default_factory=list,
        description="Batch columns that are read (a delete marker, an operation column) but not "
        "stored in the versions, as Databricks' except_column_list.",
    )
    surrogate_key: SurrogateKeyConfig | None = Field(
        None, description="A surrogate key column: one key per version."
    )
    valid_from_column: str = Field("valid_from", description="Name of the valid-from column.")
    valid_to_column: str = Field("valid_to", description="Name of the valid-to column (NULL: open).")
    is_current_column: str = Field("is_current", description="Name of the is-current flag.")

    @model_validator(mode="before")
    @classmethod
    def _resent_rows_default(cls, data: Any) -> Any:
        """`resent_rows` unset: derive where the snapshot times imply re-sent rows, else record."""
        if isinstance(data, dict) and data.get("resent_rows") is None:
            why_not = _not_derivable(
                bool(data.get("full_snapshots")),
                data.get("sequence_by"),
                data.get("late_rows", "apply"),
                data.get("snapshot_scope") or [],
            )
            data = {**data, "resent_rows": "record" if why_not else "derive"}
        return data

    @model_validator(mode="after")
    def _identity(self) -> Scd2StrategyConfig:
        if bool(self.keys) == bool(self.row_hash):
            raise ValueError("give keys, or row_hash (a row is identified by its hash), not both")
        if self.row_hash:
            check_column_name(self.row_hash, "row_hash")
            if not self.full_snapshots:
                raise ValueError(
                    "row_hash identifies whole rows: a changed row leaves only when a "
                    "full snapshot lacks it; set full_snapshots: true"
                )
            if self.surrogate_key or self.track is not None or self.track_except:
                raise ValueError(
                    "row_hash: every column is the identity; no surrogate_key, track or track_except"
                )
        return self

    def key_columns(self) -> list[str]:
        return [self.row_hash] if self.row_hash else list(self.keys)

    @model_validator(mode="after")
    def _consistent(self) -> Scd2StrategyConfig:
        if self.track is not None and self.track_except:
            raise ValueError("give `track` or `track_except`, not both")
        for name in [*(self.track or []), *self.track_except]:
            check_column_name(name, "column")
        clash = set(self.keys) & set([*(self.track or []), *self.track_except])
        if clash:
            raise ValueError(f"key column(s) {sorted(clash)} cannot be tracked or excluded")
        system = self.added_columns()
        for name in system:
            check_column_name(name, "column")
        if len({n.lower() for n in system}) != len(system):
            raise ValueError(
                "valid_from, valid_to, is_current, soft-delete, valid_from_copy and surrogate key "
                f"columns must differ: {system}"
            )
        if self.sequence_by and self.sequence_by in self.keys:
            raise ValueError(f"sequence_by {self.sequence_by!r} cannot be a key column")
        if self.change_detection == "sequence" and not self.sequence_by:
            raise ValueError("change_detection: sequence needs sequence_by")
        if self.change_detection == "sequence" and (self.track is not None or self.track_except):
            raise ValueError("change_detection: sequence tracks no columns: drop track/track_except")
        if self.deletes == "new_record" and not self.soft_delete_column:
            raise ValueError("deletes: new_record flags its deletion versions: give soft_delete_column")
        if self.snapshot_scope and not self.full_snapshots:
            raise ValueError("snapshot_scope limits what a full snapshot retires: set full_snapshots")
        if self.resent_rows == "skip" and self.sequence_by:
            raise ValueError(
                "resent_rows: skip takes versions valid from the batch time, in time order: no sequence_by"
            )
        why_not = _not_derivable(self.full_snapshots, self.sequence_by, self.late_rows, self.snapshot_scope)
        if self.resent_rows == "derive" and why_not:
            raise ValueError(f"resent_rows: derive implies re-sent rows from full snapshots: {why_not}")
        for name in [*self.snapshot_scope, *self.drop_columns]:
            check_column_name(name, "column")
        clash = set(self.keys) & set(self.drop_columns)
        if clash:
            raise ValueError(f"key column(s) {sorted(clash)} must be stored: not in drop_columns")
        return self

    def surrogate(self) -> SurrogateKeyConfig | None:
        return self.surrogate_key

    def corrected_rows_alone(self) -> bool:
        return not self.full_snapshots

    def validity_columns(self) -> tuple[str, str] | None:
        return self.valid_from_column, self.valid_to_column

    def added_columns(self) -> list[str]:
        own = [self.valid_from_column, self.valid_to_column, self.is_current_column]
        return [
            *own,
            *([self.soft_delete_column] if self.soft_delete_column else []),
            *([self.valid_from_copy] if self.valid_from_copy else []),
            *super().added_columns(),
        ]

    def one_batch_at_a_time(self) -> str | None:
        return "row_hash: applied one batch at a time" if self.row_hash else None

    def column_fields(self) -> NamedColumns:
        return [
            *named("keys", self.keys),
            *named("track", self.track),
            *named("track_except", self.track_except),
            *named("sequence_by", self.sequence_by),
            *(self.delete.column_fields() if self.delete else []),
            *named("snapshot_scope", self.snapshot_scope),
            *named("drop_columns", self.drop_columns),
        ]


def _not_derivable(full_snapshots: bool, sequence_by: str | None, late_rows: str, scope: list[str]) -> str:
    """Why re-sent rows cannot be implied by the snapshot times ('' when they can): every batch
    must be a full snapshot of every key, its events all at its batch time, late ones slotted in."""
    if not full_snapshots:
        return "set full_snapshots (an incremental batch says nothing of the keys it lacks)"
    if sequence_by:
        return "no sequence_by (a snapshot's rows must all be at its batch time)"
    if late_rows != "apply":
        return "late_rows: apply"
    if scope:
        return "no snapshot_scope (a snapshot of some partitions says nothing of the others)"
    return ""
