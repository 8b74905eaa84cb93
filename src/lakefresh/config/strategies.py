"""Strategy configs, one model per `kind` (aliases share a model), joined as a discriminated union."""

from __future__ import annotations

from typing import Any, ClassVar, Literal, get_args

from pydantic import Field, field_validator, model_validator

from lakefresh.config.base import FieldPath, Model, check_column_name
from lakefresh.config.expressions import check_condition, parse_row_pure

NamedColumns = list[tuple[FieldPath, str]]


def named(field: str, value: str | list[str] | None) -> NamedColumns:
    """The columns a field names, each with its path (`keys[1]`)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [((field,), value)]
    return [((field, i), v) for i, v in enumerate(value)]


class StrategyBase(Model):
    """What every strategy kind's config answers. The rest of lakefresh asks these, never a kind's
    name: adding a kind or an option touches its config model, its strategy and their tests."""

    # a lookup may take surrogate keys from a table of this kind (with `surrogate_key`)
    dimension: ClassVar[bool] = False
    # the table's rows are change events (+A -R -C +C): `current()` derives each key's latest state
    change_log: ClassVar[bool] = False

    @classmethod
    def kinds(cls) -> tuple[str, ...]:
        """The `kind` values (the name and its aliases) that select this model."""
        return tuple(get_args(cls.model_fields["kind"].annotation))

    def key_columns(self) -> list[str]:
        """The columns that identify a row's entity (its natural key); [] for unkeyed kinds."""
        return []

    def surrogate(self) -> SurrogateKeyConfig | None:
        """The surrogate key the strategy fills, if any."""
        return None

    def validity_columns(self) -> tuple[str, str] | None:
        """For kinds whose rows are versions valid over time, the (valid from, valid to) columns:
        a lookup may ask for the version valid at a time. None for the others."""
        return None

    def keeps_history(self) -> bool:
        """Whether the strategy also keeps `<table>_history`."""
        return False

    def corrected_rows_alone(self) -> bool:
        """Whether a batch of only some corrected rows changes only those rows' keys (what
        `replay` needs); False where a batch replaces or retires the rest (a full snapshot, a
        range, a delete predicate)."""
        return False

    def one_batch_at_a_time(self) -> str | None:
        """Why a backlog of this table's batches is not folded into one commit, when an option
        the group staging does not implement says so; None otherwise."""
        return None

    def added_columns(self) -> list[str]:
        """The columns the strategy writes into its target besides the batch's."""
        key = self.surrogate()
        return [key.column, key.inferred_column] if key else []

    def column_fields(self) -> NamedColumns:
        """The batch columns the strategy reads, each with the field that names it."""
        return []

    def required_columns(self) -> list[str]:
        return list(dict.fromkeys(column for _, column in self.column_fields()))


class DeleteRule(Model):
    """Which batch rows are deletes: a marker column holding a value, or a SQL condition."""

    column: str | None = Field(None, description="Marker column, e.g. is_deleted.")
    value: Any = Field(True, description="The marker value that means deleted.")
    condition: str | None = Field(None, description="SQL condition over the batch, e.g. op = 'D'.")

    @model_validator(mode="after")
    def _one_of(self) -> DeleteRule:
        if (self.column is None) == (self.condition is None):
            raise ValueError("give exactly one of `column` (with `value`) or `condition`")
        return self

    @field_validator("condition")
    @classmethod
    def _condition(cls, value: str | None) -> str | None:
        return value if value is None else check_condition(value, "the condition")

    def column_fields(self) -> NamedColumns:
        return [(("delete", *path), column) for path, column in named("column", self.column)]


class SurrogateKeyConfig(Model):
    """A surrogate key column the strategy fills, for facts to reference rows by one number."""

    column: str = Field(description="Name of the surrogate key column, e.g. customer_sk.")
    generator: Literal["hash", "sequence"] = Field(
        "hash",
        description="hash: xxhash64 of the natural key (with scd2: and valid_from), the same in "
        "every run and rebuild; sequence: the largest key in the table + 1, 2, ... in natural key "
        "order, never reused.",
    )
    inferred_column: str = Field(
        "is_inferred",
        description="Boolean column, true on skeleton rows made for early-arriving facts.",
    )

    @field_validator("column", "inferred_column")
    @classmethod
    def _names(cls, value: str) -> str:
        return check_column_name(value, "column")

    @model_validator(mode="after")
    def _differ(self) -> SurrogateKeyConfig:
        if self.column.lower() == self.inferred_column.lower():
            raise ValueError(f"column and inferred_column must differ, both are {self.column!r}")
        return self


class DedupeBy(Model):
    """Inside a batch, the row of a key with the highest (desc) or lowest (asc) value of a column
    wins; ties go to the first occurrence (by file, then record)."""

    by: str = Field(description="The column that picks a key's winning row inside a batch.")
    order: Literal["asc", "desc"] = Field("desc", description="desc: the highest value wins.")

    @field_validator("by")
    @classmethod
    def _by(cls, value: str) -> str:
        return check_column_name(value, "column")


class KeyStrategyConfig(StrategyBase):
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
    soft_delete_column: str | None = Field(
        None,
        description="A delete leaves a tombstone: the key's row stays, its values NULL, this "
        "boolean column true and its date the delete's, so a later-arriving row older than the "
        "delete never brings the key back (Databricks' apply_as_deletes tombstones); a newer row "
        "does. Readers filter on the column. Without it, a delete removes the row.",
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

    @field_validator("keys", "exclude_from_cdc", "drop_columns", "snapshot_scope")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        for v in value:
            check_column_name(v, "column")
        if len(set(value)) != len(value):
            raise ValueError(f"columns must not repeat, got {value}")
        return value

    @field_validator("soft_delete_column")
    @classmethod
    def _soft(cls, value: str | None) -> str | None:
        return value if value is None else check_column_name(value, "column")

    @model_validator(mode="after")
    def _disjoint(self) -> KeyStrategyConfig:
        clash = set(self.keys) & set(self.exclude_from_cdc)
        if clash:
            raise ValueError(f"key column(s) {sorted(clash)} cannot also be in exclude_from_cdc")
        clash = set(self.keys) & set(self.drop_columns)
        if clash:
            raise ValueError(f"key column(s) {sorted(clash)} must be stored: not in drop_columns")
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
        return not self.full_snapshots

    def added_columns(self) -> list[str]:
        soft = [self.soft_delete_column] if self.soft_delete_column else []
        return [*soft, *super().added_columns()]

    def one_batch_at_a_time(self) -> str | None:
        options = {
            "full_snapshots": self.full_snapshots,
            "soft_delete_column": self.soft_delete_column,
            "when_matched": self.when_matched != "update",
            "when_not_matched": self.when_not_matched != "insert",
        }
        used = [name for name, on in options.items() if on]
        return f"{', '.join(used)}: applied one batch at a time" if used else None

    def column_fields(self) -> NamedColumns:
        return [
            *named("keys", self.keys),
            *named("exclude_from_cdc", self.exclude_from_cdc),
            *named("date_column", self.date_column),
            *(self.delete.column_fields() if self.delete else []),
            *named("drop_columns", self.drop_columns),
            *named("snapshot_scope", self.snapshot_scope),
            *(named("dedupe.by", self.dedupe.by) if isinstance(self.dedupe, DedupeBy) else []),
        ]


class AppendStrategyConfig(StrategyBase):
    """Every batch is appended; each row carries its batch id."""

    kind: Literal["append", "none"]

    def corrected_rows_alone(self) -> bool:
        return True


class FullStrategyConfig(StrategyBase):
    """Every batch replaces the whole table; earlier batches stay readable by time travel."""

    kind: Literal["full"]


class KeyedStrategyBase(StrategyBase):
    keys: list[str] = Field(min_length=1, description="Primary key columns.")

    def key_columns(self) -> list[str]:
        return list(self.keys)

    @field_validator("keys")
    @classmethod
    def _key_names(cls, value: list[str]) -> list[str]:
        for v in value:
            check_column_name(v, "column")
        if len(set(value)) != len(value):
            raise ValueError(f"columns must not repeat, got {value}")
        return value


class LedgerStrategyConfig(KeyedStrategyBase):
    """Append-only with a primary key: a key already in the ledger is never appended again."""

    kind: Literal["ledger"]
    event_time: str | None = Field(
        None,
        description="When a batch holds several rows with one key, the one with the earliest "
        "event time is kept (then the first by file and record). Without it: the first row.",
    )

    def corrected_rows_alone(self) -> bool:
        return True

    def column_fields(self) -> NamedColumns:
        return [*named("keys", self.keys), *named("event_time", self.event_time)]


class SnapshotStrategyConfig(KeyedStrategyBase):
    """Each batch is a full snapshot; the target is the log of changes between snapshots."""

    change_log: ClassVar[bool] = True

    kind: Literal["snapshot"]
    event_time: str | None = Field(
        None,
        description="Column holding when a row's state took effect. Without it, the batch's time "
        "(the file's or folder's modification time) is every event's time.",
    )
    op_column: str = Field("op", description="Name of the op column (+A, -R, -C, +C).")
    system_time_column: str = Field("system_time", description="When lakefresh processed the batch.")
    event_time_column: str = Field("event_time", description="When the change took effect.")
    offset_column: str = Field("offset", description="The event's position in the log (0, 1, ...).")

    @model_validator(mode="after")
    def _distinct_system_columns(self) -> SnapshotStrategyConfig:
        system = [self.op_column, self.system_time_column, self.event_time_column, self.offset_column]
        for name in system:
            check_column_name(name, "column")
        if len({n.lower() for n in system}) != len(system):
            raise ValueError(f"op, system time, event time and offset columns must differ, got {system}")
        clash = [k for k in self.keys if k.lower() in {n.lower() for n in system}]
        if clash:
            raise ValueError(f"key column(s) {clash} clash with the log's system columns {system}")
        return self

    def added_columns(self) -> list[str]:
        return [self.op_column, self.system_time_column, self.event_time_column, self.offset_column]

    def column_fields(self) -> NamedColumns:
        return [*named("keys", self.keys), *named("event_time", self.event_time)]


class RangeStrategyBase(StrategyBase):
    column: str = Field(description="The column whose range a batch replaces.")

    @field_validator("column")
    @classmethod
    def _column(cls, value: str) -> str:
        return check_column_name(value, "column")

    def column_fields(self) -> NamedColumns:
        return named("column", self.column)


class TimestampStrategyConfig(RangeStrategyBase):
    """Each batch replaces the target's rows inside its [min, max] timestamp range."""

    kind: Literal["timestamp"]
    format: str | None = Field(
        None,
        description="Spark datetime pattern for a string column, e.g. yyyy-MM-dd HH:mm:ss. "
        "Values that do not match it are quarantined.",
    )


class SequenceStrategyConfig(RangeStrategyBase):
    """Each batch replaces the target's rows inside its [min, max] range of a numeric column."""

    kind: Literal["sequence"]


class CustomStrategyConfig(StrategyBase):
    """A delete predicate over the target (`this`) and the batch (`input`), then an append."""

    kind: Literal["custom"]
    delete_when: str | None = Field(
        None,
        description="Target rows for which some batch row makes this true are deleted before the "
        "batch is appended, e.g. this.region = input.region AND this.day >= input.day. A "
        "condition on the target alone (this.day = '2024-01-01', Delta's replaceWhere) applies "
        "even when the batch is empty.",
    )
    delete_matching: list[str] = Field(
        default_factory=list,
        description="Instead of delete_when: delete the target rows whose values in these columns "
        "occur in the batch (rows with a NULL there are quarantined).",
    )
    outside_rows: Literal["keep", "drop", "refuse"] = Field(
        "keep",
        description="With a delete_when on the target alone: batch rows that do not satisfy it "
        "are appended (keep), left out (drop, W), or refuse the whole batch (refuse, Delta's "
        "replaceWhere constraint check).",
    )
    append_filter: str | None = Field(
        None, description="Only batch rows for which this is true are appended, e.g. amount > 0."
    )

    @field_validator("delete_when")
    @classmethod
    def _delete_when(cls, value: str | None) -> str | None:
        if value is not None:
            parse_row_pure(value, ("this", "input"), "delete_when")
        return value

    @field_validator("delete_matching")
    @classmethod
    def _matching(cls, value: list[str]) -> list[str]:
        for v in value:
            check_column_name(v, "column")
        if len(set(value)) != len(value):
            raise ValueError(f"columns must not repeat, got {value}")
        return value

    @model_validator(mode="after")
    def _one_predicate(self) -> CustomStrategyConfig:
        if (self.delete_when is None) == (not self.delete_matching):
            raise ValueError("give exactly one of delete_when or delete_matching")
        if self.outside_rows != "keep" and self.input_columns():
            raise ValueError(
                "outside_rows judges batch rows by a delete_when on the target alone (this.*); "
                "this one reads the batch (input.*)"
            )
        return self

    @field_validator("append_filter")
    @classmethod
    def _append_filter(cls, value: str | None) -> str | None:
        if value is not None:
            parse_row_pure(value, ("input",), "append_filter")
        return value

    def input_columns(self) -> list[str]:
        """Batch columns the delete predicate reads."""
        if self.delete_matching:
            return list(self.delete_matching)
        return parse_row_pure(self.delete_when or "", ("this", "input"), "delete_when").columns.get(
            "input", []
        )

    def column_fields(self) -> NamedColumns:
        field = "delete_matching" if self.delete_matching else "delete_when"
        named_: NamedColumns = [((field,), c) for c in self.input_columns()]
        if self.append_filter:
            filtered = parse_row_pure(self.append_filter, ("input",), "append_filter").columns
            named_ += [(("append_filter",), c) for c in filtered.get("input", [])]
        return named_


class Scd2StrategyConfig(KeyedStrategyBase):
    """Slowly changing dimension, type 2: every change of the tracked columns is a version."""

    dimension: ClassVar[bool] = True

    kind: Literal["scd2"]
    track: list[str] | None = Field(
        None, description="Columns whose change opens a new version (default: all non-key columns)."
    )
    track_except: list[str] = Field(
        default_factory=list,
        description="Columns that never open a version; a change to them updates the version in place.",
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
    deletes: Literal["close", "new_record"] = Field(
        "close",
        description="close: a delete (or a key absent from a full snapshot) closes the version; "
        "new_record: it also opens a version that repeats the last values with "
        "soft_delete_column true (dbt's hard_deletes: new_record), closed when the key returns.",
    )
    first_valid_from: Literal["sequence", "epoch"] = Field(
        "sequence",
        description="sequence: a key's first version is valid from its first event; epoch: from "
        "1970-01-01 (SQLMesh's SCD_TYPE_2_BY_TIME).",
    )
    valid_from_copy: str | None = Field(
        None,
        description="A column that repeats each version's valid_from (dbt's dbt_updated_at).",
    )
    surrogate_key: SurrogateKeyConfig | None = Field(
        None, description="A surrogate key column: one key per version."
    )
    valid_from_column: str = Field("valid_from", description="Name of the valid-from column.")
    valid_to_column: str = Field("valid_to", description="Name of the valid-to column (NULL: open).")
    is_current_column: str = Field("is_current", description="Name of the is-current flag.")

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
        for name in self.snapshot_scope:
            check_column_name(name, "column")
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

    def column_fields(self) -> NamedColumns:
        return [
            *named("keys", self.keys),
            *named("track", self.track),
            *named("track_except", self.track_except),
            *named("sequence_by", self.sequence_by),
            *(self.delete.column_fields() if self.delete else []),
            *named("snapshot_scope", self.snapshot_scope),
        ]


StrategyConfig = (
    KeyStrategyConfig
    | Scd2StrategyConfig
    | AppendStrategyConfig
    | FullStrategyConfig
    | LedgerStrategyConfig
    | SnapshotStrategyConfig
    | TimestampStrategyConfig
    | SequenceStrategyConfig
    | CustomStrategyConfig
)
# every `kind` a pipeline may name, derived from the union (aliases included)
STRATEGY_KINDS = tuple(kind for model in get_args(StrategyConfig) for kind in model.kinds())
DIMENSION_KINDS = tuple(
    kind for model in get_args(StrategyConfig) if model.dimension for kind in model.kinds()
)
