"""`scd2`'s re-sent rows left out of the event memory (`resent_rows: skip`).

A row re-sent unchanged at a newer batch time (U) writes nothing then (fast.py: KEPT): its version
is not rewritten and `_lf_events` does not record it. Only a late batch could need those
re-sends: a computation over all events ends a version its late row opens at the first re-send
after it, which is no longer known. So each batch's commit carries the table's latest batch time
(LATEST_PROPERTY), and a batch older than it is refused: nothing is written, and the history is
always the one a computation over all events gives. A batch at or after it (every batch of a
feed that arrives in time order, such as daily full snapshots) is applied as with `record`.

Validity comes from the batch time (the config refuses `skip` with `sequence_by`): every event
of a batch is at its time, so the batch as a whole is late or not. The mark travels in the
commit, so a rollback takes it back with the rows it speaks for; it needs commits that carry
properties (not the Spark 3.5 line's Iceberg 1.10): elsewhere `skip` is refused.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lakefresh.config.strategies import Scd2StrategyConfig
    from lakefresh.strategies.base import StageContext

LATEST_PROPERTY = "lakefresh.scd2.latest_batch_time"
# commits looked at for the newest mark, then the whole lineage: the previous batch's commit,
# normally the newest, carries it; a commit of no batch (a compaction) may come after it
LOOK_BACK = (1, 20)


def left_out(cfg: Scd2StrategyConfig, ctx: StageContext) -> None:
    """With `resent_rows: skip`: refuse a batch older than the table's latest one (the module's
    doc), else have its commit carry the new latest batch time."""
    from lakefresh.errors import BatchRefused, ConfigError

    if cfg.resent_rows != "skip":
        return
    if not ctx.backend.carries_commit_properties(ctx.table):
        raise ConfigError(
            f"{ctx.table}: resent_rows: skip keeps the table's latest batch time in each commit, "
            "and this runtime's commits carry no properties (Iceberg before 1.12): use resent_rows: record"
        )
    at = _utc(ctx.batch_time)
    latest = _latest(ctx) if ctx.target_exists else None
    if latest is not None and at < latest:
        raise BatchRefused(
            f"{ctx.table} leaves re-sent rows out of its versions (resent_rows: skip), and this "
            f"batch ({at.isoformat()}) is older than one already applied ({latest.isoformat()}): "
            f"where the versions it opens end is no longer known. Nothing was written. Skip the "
            f"batch with --skip-batch {ctx.batch_id}, or rebuild the table with resent_rows: "
            f"record (--full-refresh)"
        )
    ctx.carried[LATEST_PROPERTY] = max(at, latest or at).isoformat()


def _latest(ctx: StageContext) -> datetime | None:
    """The newest mark in the target's lineage; None when no commit carries one (every re-send
    so far was recorded)."""
    for limit in (*LOOK_BACK, None):
        commits = ctx.backend.commits_after(ctx.table, None, limit)
        for commit in commits:
            found = commit.properties.get(LATEST_PROPERTY)
            if found is not None:
                return datetime.fromisoformat(found)
        if limit is not None and len(commits) < limit:
            return None  # that was the whole lineage
    return None


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
