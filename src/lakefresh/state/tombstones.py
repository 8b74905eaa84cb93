"""Tombstones out of sight: the ordering value of each key a `key` target deleted, kept beside the
target in `<target>__tombstones` (the target's format), where readers of the target never see it.

Databricks' AUTO CDC keeps such tombstones internally for a while
(`pipelines.cdc.tombstoneGCThresholdInSeconds`); Hudi's ordering field does the same job. With
them, a row older than a key's delete that arrives in a later batch stays out (O), as it does
with a visible tombstone row (`soft_delete_column`).

| column           | meaning                                                              |
| ---------------- | -------------------------------------------------------------------- |
| the key columns  | the deleted key                                                      |
| `_lf_updated_at` | the delete's date (its `date_column`, or the batch time): what it beats |
| `_lf_batch_id`   | the commit of the target that deleted it (a batch, or a rebuild)     |
| `_lf_kept_at`    | when it was kept (UTC): its retention counts from there              |

**Written with the batch's commit.** A batch's tombstones are written in its commit's record
step (lakehouse/commit.py), before the target's commit becomes visible, replacing any that an
earlier attempt of the batch wrote. A row counts only once its commit is in the target, so a
crash or a failure anywhere leaves no tombstone without its delete, and no delete without its
tombstone:

- a row whose commit is in the target's current lineage counts, unless a rebuild (`reset`,
  `unload`, `reload`, a full refresh) came after it: a rebuild keeps the tombstones of the
  batches it applied again, as its own;
- a row whose commit is not in the lineage counts only if it was kept before the oldest commit
  the target still has (its commit expired with the older versions): `maintain` deletes the
  rows that do not count before it expires any version, so every row older than what the
  lineage holds was a published one. A rolled-back batch's rows, and those of an attempt that
  never published, do not count.

**Retention.** A tombstone older than the table's `tombstone_retention` is no longer consulted,
and `maintain` deletes it: a row older than the delete that arrives after that brings the key
back, as it does in Databricks past its threshold. `maintain` then compacts the table once it
holds many files, as the run does with the control tables.
"""

from __future__ import annotations

from datetime import UTC, timedelta
from typing import TYPE_CHECKING

from lakefresh.clock import utc_now
from lakefresh.columns import BATCH_ID_COLUMN, UPDATED_AT_COLUMN
from lakefresh.lakehouse.backend import SCRATCH, TOMBSTONES, Layout
from lakefresh.lakehouse.failures import retry_conflicts
from lakefresh.lakehouse.functions import utc_timestamp
from lakefresh.lakehouse.sql import quote, sql_literal
from lakefresh.state.control import STATE_VERSION, VERB_PREFIX, VERSION_PROPERTY, compact_if_many_files

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from lakefresh.lakehouse.backend import TableBackend

KEPT_AT = "_lf_kept_at"
# the verbs whose commit replaces the target's rows with the batches applied again
REBUILDS = tuple(f"{VERB_PREFIX}{verb}:" for verb in ("reset", "unload", "reload", "refresh"))


def table_of(target: str) -> str:
    """The tombstone table of a target (`namespace.table`)."""
    return target + TOMBSTONES


def keep(backend: TableBackend, target: str, batch_id: str, rows: DataFrame) -> None:
    """Keep the tombstones of the commit `batch_id` (`rows`: the key columns and
    `_lf_updated_at`), replacing those an earlier attempt of it kept; the table is made by the
    first batch that deletes a key. A row without a date is not kept (it beats nothing)."""
    from pyspark.sql import functions as F

    table = table_of(target)
    out = rows.where(F.col(UPDATED_AT_COLUMN).isNotNull()).select(
        *[F.col(quote(c)) for c in rows.columns if c != BATCH_ID_COLUMN],
        F.lit(batch_id).alias(BATCH_ID_COLUMN),
        utc_timestamp(utc_now()).cast("timestamp").alias(KEPT_AT),
    )
    exists = backend.exists(table)
    earlier = f"{BATCH_ID_COLUMN} = {sql_literal(batch_id)}"
    if exists and not backend.read(table).where(earlier).isEmpty():
        _delete(backend, table, earlier)
    if out.isEmpty():  # a batch that deletes nothing writes nothing here
        return
    if not exists:
        layout = Layout(properties={VERSION_PROPERTY: str(STATE_VERSION)})
        retry_conflicts(lambda: backend.create(table, out.schema, layout, staged_commits=False))
    backend.append(table, backend.align(table, out))


def adopt(backend: TableBackend, target: str, scratch: str, verb_id: str) -> None:
    """A rebuild's tombstones (those its scratch table's batches kept) become the target's, as
    the commit `verb_id`'s; none when its batches deleted nothing."""
    source = table_of(scratch)
    if backend.exists(source):
        keep(backend, target, verb_id, backend.read(source).drop(BATCH_ID_COLUMN, KEPT_AT))
    elif backend.exists(table_of(target)):
        _delete(backend, table_of(target), f"{BATCH_ID_COLUMN} = {sql_literal(verb_id)}")


def drop(backend: TableBackend, target: str) -> None:
    """Drop a (scratch) table's tombstones, if it has any."""
    if backend.exists(table_of(target)):
        backend.drop(table_of(target))


def consulted(
    backend: TableBackend, target: str, keys: list[str], batch_keys: DataFrame, retention: float
) -> DataFrame | None:
    """The tombstones of the batch's keys (`batch_keys`) that count (the module's rules) and are
    younger than `retention` seconds: one row per key, its latest delete's `_lf_updated_at`.
    None when there are none."""
    from pyspark.sql import functions as F

    table = table_of(target)
    if not backend.exists(table):
        return None
    since = utc_timestamp(utc_now() - timedelta(seconds=retention)).cast("timestamp")
    found = (
        backend.read(table)
        .where(F.col(KEPT_AT) >= since)
        .join(batch_keys, on=keys, how="left_semi")
        .select(*[quote(k) for k in keys], UPDATED_AT_COLUMN, BATCH_ID_COLUMN, KEPT_AT)
    )
    counted = sorted(counting(backend, target, commits_of(found)))
    if not counted:
        return None
    out = found.where(F.col(BATCH_ID_COLUMN).isin(counted)).groupBy(*[quote(k) for k in keys])
    return out.agg(F.max(UPDATED_AT_COLUMN).alias(UPDATED_AT_COLUMN))


def commits_of(rows: DataFrame) -> dict[str, int]:
    """The commits of these tombstones, each with the earliest time one was kept (epoch µs)."""
    from pyspark.sql import functions as F

    kept = F.min(F.expr(f"unix_micros({KEPT_AT})"))
    return {r[0]: r[1] for r in rows.groupBy(BATCH_ID_COLUMN).agg(kept).collect()}


def counting(backend: TableBackend, target: str, commits: dict[str, int]) -> set[str]:
    """Which of these commits (id -> the earliest time a row of it was kept, epoch µs) have
    tombstones that count (the module's rules)."""
    if not commits:
        return set()
    if target.endswith(SCRATCH):  # a rebuild's scratch table: written directly, no lineage
        return set(commits)
    published = list(backend.published_batches(target))  # newest first
    rebuilt = next((i for i, b in enumerate(published) if b.startswith(REBUILDS)), None)
    live = set(published if rebuilt is None else published[: rebuilt + 1])
    oldest = None
    if rebuilt is None and backend.exists(target):
        millis = backend.lineage(target).oldest_ancestor_millis
        oldest = None if millis is None else millis * 1000
    return {c for c, at in commits.items() if c in live or (oldest is not None and at < oldest)}


def clean(backend: TableBackend, target: str, retention: float) -> int:
    """Delete the tombstones past `retention` seconds and those that do not count (`maintain`,
    before it expires any version); how many were deleted."""
    table = table_of(target)
    if not backend.exists(table):
        return 0
    rows = backend.read(table)
    commits = commits_of(rows)
    stale = sorted(set(commits) - counting(backend, target, commits))
    before = utc_now().replace(tzinfo=UTC) - timedelta(seconds=retention)
    where = f"unix_micros({KEPT_AT}) < {int(before.timestamp() * 1_000_000)}"
    if stale:
        where += f" OR {BATCH_ID_COLUMN} IN ({', '.join(map(sql_literal, stale))})"
    gone = rows.where(where).count()
    if gone:
        _delete(backend, table, where)
    return gone


def tidy(backend: TableBackend, target: str) -> int:
    """Compact the target's tombstone table once it holds more than COMPACT_AT_FILES files (each
    batch that deletes keys adds one), keeping its newest KEEP_VERSIONS versions, as the control
    tables are tidied (state/control.py): only its current rows are ever read. The files it held;
    0: left alone."""
    table = table_of(target)
    return compact_if_many_files(backend, table) if backend.exists(table) else 0


def _delete(backend: TableBackend, table: str, where: str) -> None:
    retry_conflicts(lambda: backend.spark.sql(f"DELETE FROM {backend.qualified(table)} WHERE {where}"))
