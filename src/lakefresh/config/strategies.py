"""Strategy configs, one model per `kind` (aliases share a model), joined as a discriminated union."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field, field_validator, model_validator

from lakefresh.config.base import Model, check_column_name
from lakefresh.config.change_log import OUTPUT_DESCRIPTION, ChangeLogColumns, EventTimeRule, Output
from lakefresh.config.expressions import parse_row_pure
from lakefresh.config.strategy_base import (
    DeleteRule,
    KeyedStrategyBase,
    NamedColumns,
    StrategyBase,
    SurrogateKeyConfig,
    named,
)
from lakefresh.config.strategy_key import DedupeBy, KeyStrategyConfig
from lakefresh.config.strategy_scd2 import Scd2StrategyConfig

EVENT_TIME_IN_LOG = (
    "With output: change_log, the log's event time is this column's value (a timestamp, a date, "
    "or a number such as a year); a NULL takes the batch's time (a number cannot: quarantined; "
    "see null_event_times). Without it, every event's time is the batch's time."
)


class AppendStrategyConfig(ChangeLogColumns):
    """Every batch is appended; each row carries its batch id."""

    kind: Literal["append", "none"]
    output: Output = Field("table", description=OUTPUT_DESCRIPTION)
    event_time: str | None = Field(None, description=EVENT_TIME_IN_LOG)

    def corrected_rows_alone(self) -> bool:
        return not self.writes_change_log()

    def column_fields(self) -> NamedColumns:
        return named("event_time", self.event_time)


class FullStrategyConfig(StrategyBase):
    """Every batch replaces the whole table; earlier batches stay readable by time travel."""

    kind: Literal["full"]


class LedgerStrategyConfig(ChangeLogColumns, KeyedStrategyBase):
    """Append-only with a primary key: a key already in the ledger is never appended again."""

    kind: Literal["ledger"]
    event_time: str | None = Field(
        None,
        description="When a batch holds several rows with one key, the one with the earliest "
        "event time is kept (then the first by file and record). Without it: the first row. "
        + EVENT_TIME_IN_LOG,
    )
    output: Output = Field("table", description=OUTPUT_DESCRIPTION)
    log_order: Literal["event_time", "arrival"] = Field(
        "event_time",
        description="With output: change_log, the order of a batch's new events, which their "
        "offsets follow: event_time: by event time, then by file and record (Open Data Fabric's "
        "ledger; a NULL event time first); arrival: by file, then record. Without event_time the "
        "two are the same.",
    )

    @model_validator(mode="after")
    def _ordered_log(self) -> LedgerStrategyConfig:
        if "log_order" in self.model_fields_set and not self.writes_change_log():
            raise ValueError("log_order orders a change log's offsets: set output: change_log")
        return self

    def corrected_rows_alone(self) -> bool:
        return not self.writes_change_log()

    def column_fields(self) -> NamedColumns:
        return [*named("keys", self.keys), *named("event_time", self.event_time)]


class SnapshotStrategyConfig(ChangeLogColumns, KeyedStrategyBase):
    """Each batch is a full snapshot; the target is the log of changes between snapshots."""

    kind: Literal["snapshot"]
    output: Literal["change_log"] = Field("change_log", description="Always a change log.")
    event_time: str | None = Field(
        None,
        description="Column holding when a row's state took effect: a timestamp, a date, a number "
        "(e.g. a year) or ISO text. Without it, the batch's time (the file's or folder's "
        "modification time) is every event's time.",
    )
    compare_columns: list[str] | None = Field(
        None,
        description="The columns whose change is a change of the row (Open Data Fabric's "
        "compareColumns); default: every column but the keys (and event_time, whose own rule is "
        "event_time_rule). With event_time_rule: odf, list event_time here for a change of it "
        "to count.",
    )
    event_time_rule: EventTimeRule = Field(
        "odf",
        description="odf: the event time belongs to the row, as in Open Data Fabric's snapshot "
        "merge: -C and -R repeat the old row's event time, and a change of the event time alone "
        "is a correction (-C then +C; a NULL in the new row changes nothing). effective: the event "
        "time says when a change took effect: -C carries the new row's event time, -R the "
        "snapshot's latest (the batch's time without event_time), and a change of the event time "
        "alone appends nothing.",
    )

    @model_validator(mode="after")
    def _compared(self) -> SnapshotStrategyConfig:
        for name in self.compare_columns or []:
            check_column_name(name, "column")
        clash = [c for c in self.compare_columns or [] if c in self.keys]
        if self.event_time_rule == "effective" and self.event_time in (self.compare_columns or []):
            clash.append(self.event_time)
        if clash:
            raise ValueError(
                f"compare_columns {clash}: keys are never compared, nor event_time with "
                "event_time_rule: effective"
            )
        return self

    def compares_event_time(self) -> bool:
        """Whether a change of the event time alone is a change of the row."""
        compared = self.compare_columns is None or self.event_time in self.compare_columns
        return bool(self.event_time) and self.event_time_rule == "odf" and compared

    def column_fields(self) -> NamedColumns:
        return [
            *named("keys", self.keys),
            *named("event_time", self.event_time),
            *named("compare_columns", self.compare_columns),
        ]


class ExplicitRange(Model):
    """A batch's range given with the batch rather than taken from its rows' min and max."""

    pattern: str | None = Field(
        None,
        description="A regular expression over the batch id (a file's name) with groups named "
        "start and end, e.g. 'sales_(?P<start>[0-9-]+)_(?P<end>[0-9-]+)[.]csv'.",
    )
    start_column: str | None = Field(None, description="A column holding the batch's start.")
    end_column: str | None = Field(None, description="A column holding the batch's end.")
    outside: Literal["error", "drop", "keep"] = Field(
        "error",
        description="Rows outside the range: refuse the batch (error, Delta's replaceWhere "
        "check), leave them out (drop, W; SQLMesh's time-range filter), or append them (keep).",
    )

    @model_validator(mode="after")
    def _one_source(self) -> ExplicitRange:
        columns = self.start_column is not None and self.end_column is not None
        if (self.pattern is not None) == columns or (not columns and (self.start_column or self.end_column)):
            raise ValueError("give `pattern`, or both `start_column` and `end_column`")
        if self.pattern is not None:
            import re

            try:
                groups = re.compile(self.pattern).groupindex
            except re.error as exc:
                raise ValueError(f"pattern {self.pattern!r} is not a regular expression: {exc}") from None
            if not {"start", "end"} <= set(groups):
                raise ValueError(f"pattern {self.pattern!r} needs groups named start and end")
        for name in (self.start_column, self.end_column):
            if name is not None:
                check_column_name(name, "column")
        return self


class RangeStrategyBase(StrategyBase):
    column: str = Field(description="The column whose range a batch replaces.")
    range: ExplicitRange | None = Field(
        None,
        description="The batch's range given with it (its name, or two columns) instead of its "
        "rows' [min, max]; a date-only end covers its whole day.",
    )

    @field_validator("column")
    @classmethod
    def _column(cls, value: str) -> str:
        return check_column_name(value, "column")

    def column_fields(self) -> NamedColumns:
        bounds = [c for c in (self.range.start_column, self.range.end_column) if c] if self.range else []
        return [*named("column", self.column), *named("range", bounds)]


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

__all__ = [
    "DIMENSION_KINDS",
    "STRATEGY_KINDS",
    "AppendStrategyConfig",
    "CustomStrategyConfig",
    "DedupeBy",
    "DeleteRule",
    "FullStrategyConfig",
    "KeyStrategyConfig",
    "KeyedStrategyBase",
    "LedgerStrategyConfig",
    "NamedColumns",
    "RangeStrategyBase",
    "Scd2StrategyConfig",
    "SequenceStrategyConfig",
    "SnapshotStrategyConfig",
    "StrategyBase",
    "StrategyConfig",
    "SurrogateKeyConfig",
    "TimestampStrategyConfig",
    "named",
]
