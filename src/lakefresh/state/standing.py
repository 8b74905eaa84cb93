"""Where each table stands (`status`), computed from the control tables' rows and the targets'
row counts as a :class:`~lakefresh.lakehouse.table_rows.TableRows` reads them: through Spark, or
without a JVM (lakehouse/native.py), with the same answer."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from lakefresh.clock import utc_now
from lakefresh.errors import LakefreshError
from lakefresh.results import TableStatus
from lakefresh.secrets import redact
from lakefresh.state.views import ControlView

if TYPE_CHECKING:
    from lakefresh.config.models import PipelineConfig, TableConfig
    from lakefresh.lakehouse.table_rows import TableRows


def read_status(
    config: PipelineConfig,
    tables: TableRows,
    namespace: str,
    listing: Callable[[TableConfig], tuple[int, int]] | None = None,
) -> list[TableStatus]:
    """Per table: batches published, the last one and its position, rows, counts, quarantined
    rows waiting; with `listing` (a table's batches waiting in its source and held back), the
    batches its source holds that no run took (a source that cannot be listed is reported on its
    table, not raised). A table another run holds says who
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
                waiting, held = listing(table)  # young too
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


def verdict(
    config: PipelineConfig, table: TableConfig, loaded_at: datetime | None, now: datetime
) -> tuple[float | None, str | None]:
    """The seconds since the table's newest batch was loaded, and its verdict against its
    `freshness` (None without bounds): what `freshness` and `status` say."""
    age = None if loaded_at is None else (now - loaded_at).total_seconds()
    bounds = config.freshness_for(table)
    return age, bounds.verdict(age) if bounds else None
