"""The change-log shape (Open Data Fabric's RFC-015) that `snapshot` always writes and `key`,
`ledger` and `append` write with `output: change_log`: every row is an event with an offset, an
operation, the batch's time and the event's time."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from lakefresh.config.base import check_column_name
from lakefresh.config.strategy_base import StrategyBase

OUTPUT_DESCRIPTION = (
    "table: the target holds the rows; change_log: the target is an event log in Open Data "
    "Fabric's shape (offset, op, system_time, event_time, then the row), whose current state "
    "Pipeline.current() derives."
)
Output = Literal["table", "change_log"]
EventTimeRule = Literal["odf", "effective"]


class ChangeLogColumns(StrategyBase):
    """The names and codes of a change log's own columns, mixed into the configs of the kinds
    that may write one (listed first among the bases, so its answers win)."""

    op_codes: Literal["symbolic", "numeric"] = Field(
        "symbolic",
        description="The op column as text (+A, -R, -C, +C) or as Open Data Fabric's numbers "
        "(0 append, 1 retract, 2 correct-from, 3 correct-to).",
    )
    op_column: str = Field("op", description="Name of the op column (+A, -R, -C, +C).")
    system_time_column: str = Field(
        "system_time",
        description="The batch's time, the same for all its events: re-running the same batches "
        "gives the same log.",
    )
    event_time_column: str = Field("event_time", description="When the change took effect.")
    offset_column: str = Field("offset", description="The event's position in the log (0, 1, ...).")
    null_event_times: Literal["batch_time", "keep"] = Field(
        "batch_time",
        description="A NULL in the event_time column of a change log: batch_time: a date or "
        "timestamp takes the batch's time, and a number, which cannot, sends its row to "
        "quarantine; keep: the event is stored with a NULL event time, whatever the column's type "
        "(Open Data Fabric's kamu accepts a NULL event time on a row).",
    )
    # each kind declares these two with its own description
    output: Output = "table"
    event_time: str | None = None

    def log_columns(self) -> list[str]:
        """The log's own columns, in the order they lead every event."""
        return [self.offset_column, self.op_column, self.system_time_column, self.event_time_column]

    def writes_change_log(self) -> bool:
        """Whether the target is a change log (`snapshot` always; the others by `output`)."""
        return self.output == "change_log"

    def added_columns(self) -> list[str]:
        own = self.log_columns() if self.writes_change_log() else []
        return [*own, *super().added_columns()]

    def one_batch_at_a_time(self) -> str | None:
        if self.writes_change_log():
            return "output: change_log: applied one batch at a time (each continues the offsets)"
        return super().one_batch_at_a_time()

    @model_validator(mode="after")
    def _distinct_log_columns(self) -> ChangeLogColumns:
        system = self.log_columns()
        for name in system:
            check_column_name(name, "column")
        if len({n.lower() for n in system}) != len(system):
            raise ValueError(f"op, system time, event time and offset columns must differ, got {system}")
        clash = [k for k in self.key_columns() if k.lower() in {n.lower() for n in system}]
        if self.writes_change_log() and clash:
            raise ValueError(f"key column(s) {clash} clash with the log's system columns {system}")
        return self
