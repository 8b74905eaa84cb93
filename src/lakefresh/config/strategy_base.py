"""What every strategy config shares: the capabilities the rest of lakefresh asks, and the
parts several kinds use (deletes, surrogate keys, keys)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal, get_args

from pydantic import Field, field_validator, model_validator

from lakefresh.config.base import FieldPath, Model, check_column_name
from lakefresh.config.expressions import check_condition

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

    @classmethod
    def kinds(cls) -> tuple[str, ...]:
        """The `kind` values (the name and its aliases) that select this model."""
        return tuple(get_args(cls.model_fields["kind"].annotation))

    def writes_change_log(self) -> bool:
        """Whether the table's rows are change events (+A -R -C +C) from which `current()` derives
        each key's latest state (config/change_log.py)."""
        return False

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

    def column_fields(self, field: str = "delete") -> NamedColumns:
        return [((field, *path), column) for path, column in named("column", self.column)]


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
