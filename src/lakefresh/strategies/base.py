"""The shared interface of refresh strategies, and helpers they share.

A strategy does two things with a batch, and never touches the target in the first:

1. `stage`: compute the change set (the CDC phase) and materialize it, with the counts it will
   cause and the number of rows the target must hold after it (the audit's prediction);
2. `write`: apply the change set to the target in one commit (staged by the runner's
   write-audit-publish, so readers see nothing until it is published).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from lakefresh.columns import (
    BATCH_ID_COLUMN,
    PROVENANCE_COLUMNS,
    REASON_COLUMN,
    SYSTEM_PREFIX,
)
from lakefresh.lakehouse.backend import Layout
from lakefresh.lakehouse.functions import row_document
from lakefresh.lakehouse.sql import quote, sql_literal
from lakefresh.strategies.materialize import materialize

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructType

    from lakefresh.config.strategies import DeleteRule
    from lakefresh.lakehouse.backend import TableBackend
    from lakefresh.strategies.group import GroupChange, Member
    from lakefresh.strategies.pruning import KeyRange


HIGH_WATER_PROPERTY = "lakefresh.surrogate_key.high_water"


@dataclass
class StageContext:
    """What a strategy may know while staging a batch."""

    backend: TableBackend
    table: str  # namespace.table
    batch_id: str
    batch_time: datetime
    target_exists: bool
    batch_rows: int | None = None  # rows of the batch to stage, when the read counted them
    # The batch's quarantined rows (typed as far as they parse), when it has any: a full
    # snapshot's record in quarantine still names its key (see `spare`)
    quarantined: DataFrame | None = None
    key_range: KeyRange | None = None  # the batch's keys lie in it, when the read saw (pruning.py)
    high_water: int | None = None  # the largest sequence surrogate key issued before (surrogate.py)
    settled: bool = False  # every pass over the batch sees the same rows (reading.ReadRows)
    # `lakefresh.*` properties the strategy has the batch's commit carry (scd2's latest batch time)
    carried: dict[str, str] = field(default_factory=dict)

    def target(self) -> DataFrame:
        return self.backend.read(self.table)

    def commit_properties(self) -> dict[str, str]:
        """What the batch's commit carries besides its record (see `high_water`)."""
        mark = {} if self.high_water is None else {HIGH_WATER_PROPERTY: str(self.high_water)}
        return mark | self.carried

    def rows_of(self, batch: DataFrame) -> int:
        """How many rows the batch to stage holds: known from its read, else counted."""
        return self.batch_rows if self.batch_rows is not None else batch.count()


@dataclass
class ChangeSet:
    """The staged result of the CDC phase."""

    rows: DataFrame  # target-shaped rows to write; materialized unless `judged`; may carry STATUS_COLUMN
    judged: bool = False  # rows are intents, which the MERGE judges (strategies/key/merge.py)
    counts: dict[str, int] = field(default_factory=dict)
    record_count: int = 0
    duplicates: int = 0
    expected_rows: int | None = None  # rows the target must hold after the commit (audit)
    expected_delta: int | None = None  # or: rows it must gain (negative: lose)
    written: int = 0  # rows of this batch the commit writes to the target
    # Rows of earlier batches this commit removes or rewrites, by batch id: their effective
    # counts drop by as much, with no scan of the target. None: unknown (the runner recounts).
    superseded: dict[str, int] | None = None
    range: tuple[str, str] | None = None  # the [min, max] a range strategy replaces, as text
    # Target rows (alias `this`) for which some row of `matches` (alias `input`) makes
    # `delete_when` true are deleted in the same commit; `counts["D"]` predicts how many.
    delete_when: str | None = None
    matches: DataFrame | None = None
    # Stored rows the commit updates or deletes; None: not known. With none, the rows are inserts
    # alone (see `appends`).
    rewrites: int | None = None
    # the range the keys of every row of the change set lie in, when known: its MERGE reads
    # only the target's files that may hold such keys (pruning.py)
    key_range: KeyRange | None = None
    # the keys this commit deletes with the date each delete beats (the key columns and
    # `_lf_updated_at`), kept out of sight with the commit (state/tombstones.py); None: none kept
    tombstones: DataFrame | None = None


def appends(ctx: StageContext, change: ChangeSet) -> bool:
    """Whether a change set of inserts alone (it rewrites no stored row) is appended rather than
    merged: an append reads nothing of the target. Only where the format refuses such a commit
    when the target moved since its change set read it (TableBackend.checks_appends: Iceberg's
    staged commit is published on its parent only, so a key another writer added meanwhile is
    caught, as a MERGE's would be); elsewhere (Delta) the MERGE's own conflict check guards it."""
    return change.rewrites == 0 and ctx.backend.checks_appends(ctx.table)


class Strategy(Protocol):
    """How a batch becomes one commit on the target."""

    @property
    def kind(self) -> str:
        """The kind's name (its config model's first `kind`)."""

    @property
    def status_codes(self) -> dict[str, str]:
        """The codes `stage` gives batch rows (the `batches` table's counts), with meanings."""

    @property
    def range_type(self) -> str | None:
        """ "timestamp" or "sequence" when batches own ranges of a column (effective ranges are
        kept); None otherwise."""

    def row_problems(self, df: DataFrame) -> list[tuple[Column, str]]:
        """Conditions that send a row to quarantine, with their reasons (e.g. a NULL key).

        Args:
            df: the batch's rows, typed.

        Returns:
            Pairs of (boolean column, reason).
        """

    def stage(self, ctx: StageContext, batch: DataFrame) -> ChangeSet:
        """Compute and materialize the change set of a batch of good rows.

        Args:
            ctx: the target and the batch's identity.
            batch: good rows, typed, with the source's provenance columns.

        Returns:
            The change set, its counts and the audit's prediction.
        """

    def write(self, ctx: StageContext, change: ChangeSet) -> None:
        """Apply the change set to the target in exactly one commit.

        Args:
            ctx: the target and the batch's identity.
            change: what `stage` returned.
        """

    def unique_keys(self) -> list[str]:
        """Columns that must be unique in the target (for the optional audit); [] for none."""


@runtime_checkable
class GroupStaging(Protocol):
    """A strategy that can stage several pending batches of a table as one commit (run/backlog.py)."""

    def stage_group(self, ctx: StageContext, batch: DataFrame, members: list[Member]) -> GroupChange:
        """The group's one change set and each member's own counts (strategies/group.py)."""


@runtime_checkable
class Dimension(Protocol):
    """A strategy whose table facts look surrogate keys up in (run/lookups.py)."""

    def skeleton_rows(self, ctx: StageContext, missing: DataFrame) -> DataFrame:
        """Target-shaped rows for natural keys the table lacks (early-arriving facts)."""


def data_columns(df: DataFrame) -> list[str]:
    """The batch's own columns: without provenance or system columns."""
    return [c for c in df.columns if c not in PROVENANCE_COLUMNS and not c.startswith(SYSTEM_PREFIX)]


def hashdiff(columns: list[str], schema: StructType, value: Callable[[str], Column] | None = None) -> Column:
    """A change-detection hash of columns: 16 bytes (MD5) of their JSON object, names sorted
    (`row_document`: in UTC, with the microseconds a JSON timestamp leaves out). `schema` gives
    the columns' types; `value(name)`, when given, is the value hashed under a name (default:
    the column itself).

    JSON makes it delimiter-safe ('a,b', NULL) != ('a', 'b,NULL') and type-aware (1 != '1').
    NULL fields are left out of the object, so adding an all-NULL column to a table does not
    change the hash of existing rows. Stored as BINARY(16): the hash is rewritten with every row a
    MERGE touches, so its width is paid on every batch (a hex SHA-256 string is four times wider
    and does not compress). MD5 detects changes; it is not used for anything adversarial.
    """
    from pyspark.sql import functions as F

    return F.unhex(F.md5(row_document(sorted(columns, key=str.lower), schema, value)))


def shape_target(
    ctx: StageContext, change: ChangeSet, layout: Layout | None = None, staged_commits: bool = True
) -> None:
    """Create the target in the change set's shape if it does not exist yet (laid out as
    `layout` says), evolve it for the change set's new columns, and put the change set's rows in
    the target's shape (the status column kept), ready for `write`. `staged_commits`: see
    `TableBackend.create`."""
    from lakefresh.columns import STATUS_COLUMN

    if not ctx.target_exists:
        schema = change.rows.drop(STATUS_COLUMN).schema
        ctx.backend.create(ctx.table, schema, layout or Layout(), staged_commits=staged_commits)
    keep = (STATUS_COLUMN,) if STATUS_COLUMN in change.rows.columns else ()
    change.rows = ctx.backend.align(ctx.table, change.rows, keep=keep)


def stamped(ctx: StageContext, batch: DataFrame) -> tuple[DataFrame, int]:
    """The batch's own columns plus its batch id, materialized, and how many rows it has: the
    whole change set of strategies that write every row (append, full)."""
    from pyspark.sql import functions as F

    rows = materialize(
        batch.select(
            *[F.col(quote(c)) for c in data_columns(batch)],
            F.lit(ctx.batch_id).alias(BATCH_ID_COLUMN),
        )
    )
    return rows, ctx.rows_of(rows)


def broadcast_if_small(ctx: StageContext, df: DataFrame, batch_rows: int) -> DataFrame:
    """`df` (no more rows than the batch: derived from it, or the stored rows of its keys) hinted
    for broadcast into a join, unless the batch is larger than the backend's broadcast limit."""
    from pyspark.sql import functions as F

    return F.broadcast(df) if batch_rows <= ctx.backend.broadcast_rows() else df


def is_temporal(kind: object) -> bool:
    """Whether a Spark type is a date or a timestamp (with or without time zone)."""
    from pyspark.sql import types as T

    return isinstance(kind, T.TimestampType | T.TimestampNTZType | T.DateType)


def absent_from_snapshot(
    target: DataFrame,
    batch: DataFrame,
    keys: list[str],
    live: Column,
    skeleton_column: str | None,
    scope: list[str],
    carry: tuple[str, ...] = (),
    quarantined: DataFrame | None = None,
) -> DataFrame:
    """For a batch that is a full snapshot: the keys of the stored rows where `live` holds that
    the batch lacks (with the `carry` columns). Skeleton rows (`skeleton_column` true) wait for
    their record; with a `scope`, only rows whose values there occur in the batch count (a
    snapshot of the partitions it holds: dlt's merge_key). The batch's `quarantined` rows are
    in the snapshot too (see `spare`)."""
    from pyspark.sql import functions as F

    if skeleton_column and skeleton_column in target.columns:
        live = live & ~F.coalesce(F.col(quote(skeleton_column)), F.lit(False))
    current = target.filter(live)
    if scope:
        scopes = batch.select(*[quote(c) for c in scope])
        if quarantined is not None:
            scopes = scopes.unionByName(quarantined.select(*[quote(c) for c in scope]))
        current = current.join(scopes.distinct(), on=scope, how="left_semi")
    present = batch.select(*[quote(k) for k in keys]).distinct()
    kept = [F.col(quote(c)) for c in [*keys, *carry] if c in target.columns]
    return spare(current.select(*kept).join(present, on=keys, how="left_anti"), keys, quarantined)


def spare(absent: DataFrame, keys: list[str], quarantined: DataFrame | None) -> DataFrame:
    """The stored keys a full snapshot lacks, less those its quarantined rows name: a record in
    quarantine (one bad cell) is in the snapshot, and its key stays. A quarantined record whose
    key is unknown (it did not parse) may be any stored key: then the batch retires none."""
    if quarantined is None:
        return absent
    if any(k not in quarantined.columns for k in keys):
        return absent.limit(0)
    # a NULL key is unknown when the record did not parse; a record whose key is NULL in the
    # source (quarantined for that alone: `null_key_problems`) names no stored key
    null = " OR ".join(f"{quote(k)} IS NULL" for k in keys)
    said = sql_literal(NULL_KEY_REASON.format(key="%") + "%")  # null_key_problems' reason
    unknown = f"({null}) AND NOT coalesce({REASON_COLUMN} LIKE {said}, FALSE)"
    if quarantined.filter(unknown).limit(1).count():
        return absent.limit(0)
    named = quarantined.select(*[quote(k) for k in keys]).distinct()
    return absent.join(named, on=keys, how="left_anti")


def count_by(df: DataFrame, column: str) -> dict[str, int]:
    return {r[0]: int(r[1]) for r in df.groupBy(column).count().collect()}


NULL_KEY_REASON = "key column {key} is NULL"  # a quarantine reason; `spare` recognizes it


def null_key_problems(
    df: DataFrame, keys: list[str], column: str | None = None, what: str = ""
) -> list[tuple[Column, str]]:
    """NULL keys (and, when given, a NULL `column`, named `what`) send a row to quarantine."""
    from pyspark.sql import functions as F

    problems = []
    for key in keys:
        if key not in df.columns:
            continue
        problems.append((F.col(quote(key)).isNull(), NULL_KEY_REASON.format(key=key)))
    if column and column in df.columns:
        problems.append((F.col(quote(column)).isNull(), f"{what} column {column} is NULL"))
    return problems


def ordering_problems(
    df: DataFrame, column: str | None, what: str, text: str = "time"
) -> list[tuple[Column, str]]:
    """Values of an ordering column (a record date, a sequence) that cannot order rows: NaN or an
    infinity (Spark sorts NaN above every number, so its row would win against every later one),
    and, with `text="time"`, text that does not parse as a time (it would be NULL, and a NULL
    date is never older than a stored one); with `text="comma"`, text holding a comma (an scd2
    version's events are stored comma-separated); with `text=""`, no check of text."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from lakefresh.lakehouse.functions import try_to_timestamp

    if not column or column not in df.columns:
        return []
    kind, value = df.schema[column].dataType, F.col(quote(column))
    if isinstance(kind, T.FloatType | T.DoubleType):
        unbounded = F.isnan(value) | (F.abs(value) == F.lit(float("inf")))
        return [(unbounded, f"{what} column {column} is NaN or infinite")]
    if isinstance(kind, T.StringType) and text == "time":
        return [
            (value.isNotNull() & try_to_timestamp(value).isNull(), f"{what} column {column} is not a time")
        ]
    if isinstance(kind, T.StringType) and text == "comma":
        return [(F.coalesce(value.contains(","), F.lit(False)), f"{what} column {column} holds a comma")]
    return []


def delete_flag(rule: DeleteRule | None) -> Column:
    """True for batch rows that are deletes: a marker column holding its value, or a condition."""
    from pyspark.sql import functions as F

    if rule is None:
        return F.lit(False)
    if rule.column:
        return F.coalesce(F.col(quote(rule.column)) == F.lit(rule.value), F.lit(False))
    return F.coalesce(F.expr(rule.condition or "false"), F.lit(False))


def require_columns(df: DataFrame, columns: list[str], what: str) -> None:
    """SchemaError unless the batch has these columns, which an option of its strategy names (a
    key, an ordering column, a marker). Such a column must be in every batch: a declared column
    that a file lacks reads as NULL only when no option names it."""
    from lakefresh.errors import SchemaError

    missing = [c for c in columns if c not in df.columns]
    if missing:
        present = data_columns(df)
        raise SchemaError(
            f"{what} {missing} not in the batch (a column the strategy reads must be in every "
            f"batch; only other declared columns read as NULL when a file lacks them); its "
            f"columns: {present}"
        )


def raise_stored_duplicates(ctx: StageContext, keys: list[str], batch: DataFrame) -> None:
    """Stop a batch whose keys the target holds more than once (rows another writer added):
    name up to five such keys, so the operator can remove the extra rows."""
    from pyspark.sql import functions as F

    from lakefresh.errors import TargetError

    touched = batch.select(*[quote(k) for k in keys]).distinct()
    found = (
        ctx.target()
        .join(touched, on=list(keys), how="left_semi")
        .groupBy(*[quote(k) for k in keys])
        .count()
        .filter(F.col("count") > 1)
        .limit(5)
        .collect()
    )
    shown = ", ".join(str(tuple(r[k] for k in keys)) for r in found)
    raise TargetError(
        f"{ctx.table} holds key(s) {shown} more than once (rows written outside lakefresh?); a "
        f"keyed table needs one row per key {tuple(keys)}: delete the extra rows, then run again"
    )
