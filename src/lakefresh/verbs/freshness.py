"""`lakefresh freshness`: how long ago each target's newest batch was loaded, against its
`freshness: {warn_after, error_after}` (config/freshness.py), as dbt's source freshness does for
a scheduler: exit code 1 when a table is over its error bound.

Beside the verdict it says where the delay is. For a source whose batches are files (a folder,
a Synapse Link export) it lists the source: the newest batch there and how many no run took. A
table that is late while its source holds batches waiting needs a run; a table whose source has
nothing new is late because the source is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from lakefresh.clock import utc_now
from lakefresh.errors import LakefreshError
from lakefresh.results import TableFreshness
from lakefresh.run.assessment import held_back
from lakefresh.secrets import redact
from lakefresh.state.control import VERB_PREFIX
from lakefresh.state.standing import verdict

if TYPE_CHECKING:
    from datetime import datetime

    from lakefresh.config.models import TableConfig
    from lakefresh.lakehouse.backend import TableBackend
    from lakefresh.state.control import ControlTables
    from lakefresh.verbs.common import VerbContext


def table_freshness(
    ctx: VerbContext, tables: list[TableConfig], now: datetime | None = None
) -> list[TableFreshness]:
    """Per table: its newest batch's load time and age, its verdict, and (for sources of files)
    the newest batch its source holds and how many wait."""
    config, backend, control = ctx.config, ctx.backend, ctx.control
    control.ensure()
    now = now or utc_now()
    loaded = last_loaded(backend, control)
    out = []
    for table in tables:
        bounds = config.freshness_for(table)
        at = loaded.get(config.qualified(table))
        age, status = verdict(config, table, at, now)
        item = TableFreshness(
            table.name,
            status or "none",
            at,
            age,
            bounds.warn_after if bounds else None,
            bounds.error_after if bounds else None,
        )
        if table.source.location is not None and not table.source.change_feed:
            try:
                item.source_newest, item.pending, _ = source_listing(ctx, table)
            except LakefreshError as exc:  # reported on its table, as `status --pending` does
                item.source_error = redact(str(exc))
            if item.source_newest is not None:
                item.source_age = (now - item.source_newest).total_seconds()
        out.append(item)
    return out


def last_loaded(backend: TableBackend, control: ControlTables) -> dict[str, datetime]:
    """Each target's newest published batch's publish time (a verb's commit is not a batch)."""
    rows = backend.spark.sql(
        f"SELECT table_name, max(published_at) FROM {backend.qualified(control.batches)} "
        f"WHERE status = 'published' AND NOT startswith(batch_id, '{VERB_PREFIX}') GROUP BY table_name"
    ).collect()
    return {r[0]: r[1] for r in rows if r[1] is not None}


class Listing(NamedTuple):
    """What a table's source holds, against its log."""

    newest: datetime | None  # the newest batch's time
    pending: int  # batches no run took yet
    held: int  # batches the operator took out (unloaded, skipped, forgotten): never taken again


def source_listing(ctx: VerbContext, table: TableConfig) -> Listing:
    """The newest batch the table's source lists (its time), how many of its batches no run took
    yet, and how many it holds that the operator took out."""
    name = ctx.config.qualified(table)
    attempts = ctx.control.attempts(name)
    published = {a.batch_id for a in attempts if a.status == "published"}
    held = set(held_back(attempts))
    listed = ctx.source(table).list_batches()
    newest = max((ref.batch_time for ref in listed), default=None)
    pending = [ref for ref in listed if ref.batch_id not in published | held]
    return Listing(newest, len(pending), len([ref for ref in listed if ref.batch_id in held]))
