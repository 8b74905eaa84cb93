"""What several verbs share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from lakefresh.errors import ConfigError
from lakefresh.sources import SourceContext, make_source
from lakefresh.state.batch_row import BatchRow

if TYPE_CHECKING:
    from datetime import datetime

    from lakefresh.config.models import PipelineConfig, TableConfig
    from lakefresh.lakehouse.backend import TableBackend
    from lakefresh.results import BatchResult
    from lakefresh.sources import Source
    from lakefresh.state.control import ControlTables


@dataclass(frozen=True)
class VerbContext:
    """What every verb works with: the pipeline, its targets' format backend, the control tables,
    and the folder the pipeline's relative paths start from."""

    config: PipelineConfig
    backend: TableBackend
    control: ControlTables
    base_dir: str

    def source(self, table: TableConfig) -> Source:
        """The table's source, as a run makes it."""
        return make_source(table.source, SourceContext.of(self.config, self.backend, self.base_dir, table))


def table_and_history(
    config: PipelineConfig, backend: TableBackend, table: TableConfig, doing: str
) -> list[TableConfig]:
    """The table a verb changes, then the `<t>_history` that `history: true` brings when it
    exists; ConfigError when the table itself does not exist yet (nothing to `doing`)."""
    if not backend.exists(config.qualified(table)):
        raise ConfigError(f"table {table.name!r} does not exist yet: nothing to {doing}")
    history = [t for t in config.tables if t.name == f"{table.name}_history"]
    return [table, *[t for t in history if backend.exists(config.qualified(t))]]


def reload_row(
    name: str, table: TableConfig, outcome: BatchResult, attempt: str, staged: int | None, started: datetime
) -> BatchRow:
    """A reloaded batch's new attempt, staged on the verb's staged version (None: its commit is
    still to come)."""
    return BatchRow.of_table(
        name,
        table,
        outcome.batch_id,
        attempt,
        "staged",
        configured=True,
        source_position=outcome.position,
        record_count=outcome.record_count,
        quarantined_count=outcome.quarantined,
        duplicate_count=outcome.duplicates,
        status_counts=dict(outcome.counts),
        range_start=outcome.range_start,
        range_end=outcome.range_end,
        staged_snapshot_id=staged,
        started_at=started,
    )
