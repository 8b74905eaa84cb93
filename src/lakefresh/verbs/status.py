"""`status`: where each table stands, from the batch log (and, when asked, its source's
listing of what waits)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from lakefresh.clock import utc_now
from lakefresh.errors import LakefreshError
from lakefresh.lakehouse.sql import sql_literal
from lakefresh.results import TableStatus
from lakefresh.secrets import redact
from lakefresh.state.leases import Leases
from lakefresh.verbs.freshness import source_listing, verdict

if TYPE_CHECKING:
    from pyspark.sql import Row

    from lakefresh.verbs.common import VerbContext


def table_status(ctx: VerbContext, pending: bool) -> list[TableStatus]:
    """Per table: batches published, the last one and its position, rows, counts; with `pending`,
    the batches its source holds that no run took (a source that cannot be listed is reported
    on its table, not raised). A table another run holds says who (its lease)."""
    config, backend, control = ctx.config, ctx.backend, ctx.control
    control.ensure()
    now = utc_now()
    leases = {r.table_name: r.describe() for r in Leases(backend, control.namespace).live()}
    out = []
    waiting_rows = {
        r[0]: int(r[1])
        for r in backend.spark.sql(
            f"SELECT table_name, count(*) FROM {backend.qualified(control.quarantine)} "
            "WHERE resolved_by IS NULL GROUP BY table_name"
        ).collect()
    }
    for table in config.tables:
        name = config.qualified(table)
        exists = backend.exists(name)
        logged = backend.spark.sql(
            f"SELECT * FROM {backend.qualified(control.batches)} "
            f"WHERE table_name = {sql_literal(name)} AND status IN ('published', 'reloaded') "
            "AND NOT startswith(batch_id, 'lakefresh:') ORDER BY published_at"  # a verb's commit
        ).collect()
        rows = [r for r in logged if r["status"] == "published"]
        last = newest_in_order(logged, rows)
        counts: dict[str, int] = {}
        for r in rows:
            for k, v in (r["status_counts"] or {}).items():
                counts[k] = counts.get(k, 0) + int(v)
        waiting, held, source_error = None, None, None
        if pending:  # a source that cannot be listed is reported on its table, not raised
            try:
                waiting, held = source_listing(ctx, table)[1:]  # young too
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
                rows=backend.read(name).count() if exists else None,
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


def newest_in_order(logged: list[Row], published: list[Row]) -> Row | None:
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
