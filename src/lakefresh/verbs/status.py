"""`status`: where each table stands, from the batch log (and, when asked, its source's
listing of what waits)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from lakefresh.clock import utc_now
from lakefresh.errors import LakefreshError
from lakefresh.lakehouse.table_rows import SparkTables
from lakefresh.results import TableStatus
from lakefresh.secrets import redact
from lakefresh.state.views import ControlView
from lakefresh.verbs.freshness import Listing, source_listing, verdict

if TYPE_CHECKING:
    from lakefresh.config.models import PipelineConfig, TableConfig
    from lakefresh.lakehouse.table_rows import TableRows
    from lakefresh.verbs.common import VerbContext


def table_status(ctx: VerbContext, pending: bool) -> list[TableStatus]:
    """`read_status` through Spark (the control tables are created when missing); with
    `pending`, the batches each table's source holds that no run took."""
    ctx.control.ensure()
    listing = (lambda table: source_listing(ctx, table)) if pending else None
    return read_status(ctx.config, SparkTables(ctx.backend), ctx.control.namespace, listing)


def read_status(
    config: PipelineConfig,
    tables: TableRows,
    namespace: str,
    listing: Callable[[TableConfig], Listing] | None = None,
) -> list[TableStatus]:
    """Per table: batches published, the last one and its position, rows, counts, quarantined
    rows waiting; with `listing`, the batches its source holds that no run took (a source that
    cannot be listed is reported on its table, not raised). A table another run holds says who
    (its lease). `tables` reads the control tables and the targets (either road)."""
    view = ControlView(tables, namespace)
    view.check()
    now = utc_now()
    leases = {r.table_name: r.describe() for r in view.live_leases()}
    waiting_rows = view.waiting_quarantine()
    logged_by_table = view.published()
    out = []
    for table in config.tables:
        name = config.qualified(table)
        exists = tables.exists(name)
        logged = logged_by_table.get(name, [])
        rows = [r for r in logged if r["status"] == "published"]
        last = newest_in_order(logged, rows)
        counts: dict[str, int] = {}
        for r in rows:
            for k, v in (r["status_counts"] or {}).items():
                counts[k] = counts.get(k, 0) + int(v)
        counts = dict(sorted(counts.items()))
        waiting, held, source_error = None, None, None
        if listing is not None:  # a source that cannot be listed is reported on its table, not raised
            try:
                waiting, held = listing(table)[1:]  # young too
            except LakefreshError as exc:
                source_error = redact(str(exc))
        loaded = max((r["published_at"] for r in rows if r["published_at"] is not None), default=None)
        out.append(
            TableStatus(
                table=table.name,
                exists=exists,
                batches_published=len(rows),
                last_batch_id=last["batch_id"] if last else None,
                position=last["source_position"] if last else None,
                last_published_at=last["published_at"] if last else None,
                rows=tables.count(name) if exists else None,
                counts=counts,
                pending=waiting,
                held=held,
                source_error=source_error,
                quarantined=waiting_rows.get(name, 0),
                lease=leases.get(name),
                freshness=verdict(config, table, loaded, now)[1],
            )
        )
    return out


def newest_in_order(logged: list[dict[str, Any]], published: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The published batch that came last in the source's order: the one first published last
    (a reload publishes a batch again in its old place; it is not the newest for that)."""
    first: dict[str, datetime] = {}
    for r in logged:  # published and reloaded attempts, oldest first
        if r["published_at"] is not None:
            first.setdefault(r["batch_id"], r["published_at"])
    return max(
        published,
        key=lambda r: (first.get(r["batch_id"], datetime.min), r["source_position"] or ""),
        default=None,
    )
