"""Strategy configs, one model per `kind` (aliases share a model), joined as a discriminated union."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator, model_validator

from lakefresh.config.base import Model, check_column_name

if TYPE_CHECKING:
    from lakefresh.config.models import TableConfig


class StrategyBase(Model):
    def check_against(self, table: TableConfig) -> None:
        """Cross-checks against the rest of the table's config (declared columns...)."""
        declared = table.source.declared_columns
        if declared is None:
            return
        missing = [c for c in self.required_columns() if c not in declared]
        if missing:
            raise ValueError(
                f"strategy {self.kind!r} names column(s) {missing} that the source schema does not "  # type: ignore[attr-defined]
                f"declare; declared columns: {declared}"
            )

    def required_columns(self) -> list[str]:
        return []


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


class KeyStrategyConfig(StrategyBase):
    """Upsert by natural key, with change detection by hash and record status codes N/C/U/S/O."""

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

    @field_validator("keys", "exclude_from_cdc")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        for v in value:
            check_column_name(v, "column")
        if len(set(value)) != len(value):
            raise ValueError(f"columns must not repeat, got {value}")
        return value

    @model_validator(mode="after")
    def _disjoint(self) -> KeyStrategyConfig:
        clash = set(self.keys) & set(self.exclude_from_cdc)
        if clash:
            raise ValueError(f"key column(s) {sorted(clash)} cannot also be in exclude_from_cdc")
        if self.date_column and self.date_column in self.keys:
            raise ValueError(f"date_column {self.date_column!r} cannot be a key column")
        return self

    def required_columns(self) -> list[str]:
        cols = [*self.keys, *self.exclude_from_cdc]
        if self.date_column:
            cols.append(self.date_column)
        if self.delete and self.delete.column:
            cols.append(self.delete.column)
        return cols


class AppendStrategyConfig(StrategyBase):
    """Every batch is appended; each row carries its batch id."""

    kind: Literal["append", "none"]


class FullStrategyConfig(StrategyBase):
    """Every batch replaces the whole table; earlier batches stay readable by time travel."""

    kind: Literal["full"]


StrategyConfig = KeyStrategyConfig | AppendStrategyConfig | FullStrategyConfig
STRATEGY_KINDS = ("key", "scd1", "append", "none", "full")
