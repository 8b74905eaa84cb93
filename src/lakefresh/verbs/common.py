"""What several verbs share."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakefresh.errors import ConfigError

if TYPE_CHECKING:
    from lakefresh.config.models import PipelineConfig, TableConfig
    from lakefresh.lakehouse.backend import TableBackend


def table_and_history(
    config: PipelineConfig, backend: TableBackend, table: TableConfig, doing: str
) -> list[TableConfig]:
    """The table a verb changes, then the `<t>_history` that `history: true` brings when it
    exists; ConfigError when the table itself does not exist yet (nothing to `doing`)."""
    if not backend.exists(config.qualified(table)):
        raise ConfigError(f"table {table.name!r} does not exist yet: nothing to {doing}")
    history = [t for t in config.tables if t.name == f"{table.name}_history"]
    return [table, *[t for t in history if backend.exists(config.qualified(t))]]
