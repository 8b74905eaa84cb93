"""`lakefresh freshness`: how long ago each target's newest batch was loaded, against its
`freshness: {warn_after, error_after}` (config/freshness.py), as dbt's source freshness does for
a scheduler: exit code 1 when a table is over its error bound.

Beside the verdict it says where the delay is. For a source whose batches are files (a folder,
a Synapse Link export) it lists the source: the newest batch there and how many no run took. A
table that is late while its source holds batches waiting needs a run; a table whose source has
nothing new is late because the source is.

Both roads compute it here from the `batches` rows and the source's listing: read through Spark,
or without a JVM where the tables and the sources allow it (lakehouse/native.py,
sources/native_listing.py), with the same answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from lakefresh.clock import utc_now
from lakefresh.errors import LakefreshError
from lakefresh.lakehouse.table_rows import SparkTables
from lakefresh.results import TableFreshness
from lakefresh.run.assessment import held_back
from lakefresh.secrets import redact
from lakefresh.state.control import is_verb
from lakefresh.state.reads import AttemptRow
from lakefresh.state.standing import verdict
from lakefresh.state.views import ControlView

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime

    from lakefresh.config.models import PipelineConfig, TableConfig
    from lakefresh.sources import BatchRef
    from lakefresh.verbs.common import VerbContext


def table_freshness(
    ctx: VerbContext, tables: list[TableConfig], now: datetime | None = None
) -> list[TableFreshness]:
    """`read_freshness` through Spark (the control tables are created when missing)."""
    ctx.control.ensure()
    view = ControlView(SparkTables(ctx.backend), ctx.control.namespace)
    return read_freshness(ctx.config, view, tables, lambda t: ctx.source(t).list_batches(), now)


def read_freshness(
    config: PipelineConfig,
    view: ControlView,
    tables: list[TableConfig],
    listed: Callable[[TableConfig], list[BatchRef]],
    now: datetime | None = None,
) -> list[TableFreshness]:
    """Per table: its newest batch's load time and age, its verdict, and (for sources of files)
    the newest batch its source holds (`listed`: its batches, by either road) and how many
    wait."""
    view.check()
    now = now or utc_now()
    loaded = last_loaded(view)
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
                item.source_newest, item.pending, _ = source_listing(
                    view, config.qualified(table), listed(table)
                )
            except LakefreshError as exc:  # reported on its table, as `status --pending` does
                item.source_error = redact(str(exc))
            if item.source_newest is not None:
                item.source_age = (now - item.source_newest).total_seconds()
        out.append(item)
    return out


def last_loaded(view: ControlView) -> dict[str, datetime]:
    """Each target's newest published batch's publish time (a verb's commit is not a batch)."""
    out: dict[str, datetime] = {}
    for r in view.log():
        at = r["published_at"]
        if r["status"] == "published" and not is_verb(r["batch_id"]) and at is not None:
            out[r["table_name"]] = max(at, out.get(r["table_name"], at))
    return out


class Listing(NamedTuple):
    """What a table's source holds, against its log."""

    newest: datetime | None  # the newest batch's time
    pending: int  # batches no run took yet
    held: int  # batches the operator took out (unloaded, skipped, forgotten): never taken again


def source_listing(view: ControlView, name: str, listed: list[BatchRef]) -> Listing:
    """The newest batch the table's source lists (`listed`, its time), how many of its batches
    no run took yet, and how many it holds that the operator took out."""
    attempts = [AttemptRow(r["batch_id"], r["attempt"], r["status"], None) for r in view.log(name)]
    published = {a.batch_id for a in attempts if a.status == "published"}
    held = set(held_back(attempts))
    newest = max((ref.batch_time for ref in listed), default=None)
    pending = [ref for ref in listed if ref.batch_id not in published | held]
    return Listing(newest, len(pending), len([ref for ref in listed if ref.batch_id in held]))
