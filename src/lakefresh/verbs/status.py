"""`status`: where each table stands, from the batch log (and, when asked, its source's
listing of what waits)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakefresh.lakehouse.table_rows import SparkTables
from lakefresh.state.standing import read_status
from lakefresh.state.views import ControlView
from lakefresh.verbs.freshness import source_listing

if TYPE_CHECKING:
    from lakefresh.config.models import TableConfig
    from lakefresh.results import TableStatus
    from lakefresh.verbs.common import VerbContext


def table_status(ctx: VerbContext, pending: bool) -> list[TableStatus]:
    """`read_status` through Spark (the control tables are created when missing); with
    `pending`, the batches each table's source holds that no run took."""
    ctx.control.ensure()
    tables = SparkTables(ctx.backend)
    view = ControlView(tables, ctx.control.namespace)

    def listing(table: TableConfig) -> tuple[int, int]:
        return source_listing(view, ctx.config.qualified(table), ctx.source(table).list_batches())[1:]

    return read_status(ctx.config, tables, ctx.control.namespace, listing if pending else None)
