"""The table-format seam: what the runner, the strategies and the state need from a table format.

:mod:`lakefresh.lakehouse.iceberg` and :mod:`lakefresh.lakehouse.delta` implement it;
:mod:`lakefresh.lakehouse.formats` routes each table to its format's backend.

A *version* is one committed state of a table, named by an integer; Iceberg calls it a
snapshot (its id), Delta a version (its number). The seam and everything above it say
`version`: a table's *head* is its current version, its *lineage* the head and the head's
ancestors, a staged commit's `parent_version` the head it was staged on. The formats' own words
stay in their packages, where they talk to the formats' APIs, and in names that are stored or
read by users (each says so where it is defined). A *snapshot* elsewhere in lakefresh is a batch
that holds a source's whole state (the `snapshot` strategy, `full_snapshots`), never a version.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from lakefresh.errors import TakenError

if TYPE_CHECKING:
    from datetime import datetime

    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from lakefresh.config.models import PipelineConfig, TableConfig
    from lakefresh.config.write_mode import Mode

# The tables lakefresh keeps beside a target `<t>`, in the target's format: a rebuild's scratch
# table (strategies/rebuild.py, verbs/rebuild.py) and the keys it deleted (state/tombstones.py)
SCRATCH = "__rebuild"
TOMBSTONES = "__tombstones"

# Where a version stands in its table's history (see `TableBackend.version_state`).
VersionState = Literal["current-lineage", "expired", "off-lineage"]

T = TypeVar("T")
# a commit's settings (its batch, its properties) are session-wide: one such write at a time
_SETTINGS_LOCK = threading.Lock()


def with_settings(spark: SparkSession, settings: dict[str, str], write: Callable[[], T]) -> T:
    """`write()` under these session settings, which are unset after it."""
    with _SETTINGS_LOCK:
        for key, value in settings.items():
            spark.conf.set(key, value)
        try:
            return write()
        finally:
            for key in settings:
                spark.conf.unset(key)


@dataclass(frozen=True)
class Layout:
    """How a target is laid out and written, in lakefresh's words; each format turns it into its
    own settings at the target's creation (`TableBackend.create`) or later (`lay_out`)."""

    partition_by: tuple[str, ...] = ()  # terms as config.checks writes them
    sort_by: tuple[str, ...] = ()  # the write order (Iceberg's; a Delta table has none)
    write_mode: Mode | None = None  # None: the format's default, or what the table has
    properties: dict[str, str] = field(default_factory=dict)  # the table's own, as the user gave them


def target_layout(config: PipelineConfig, table: TableConfig, exists: bool = False) -> Layout:
    """A target's layout as its configuration says: for a new target (`exists` False) all of it,
    for one that exists the write mode only when it must change (config/write_mode.py)."""
    from lakefresh.config import write_mode

    return Layout(
        partition_by=tuple(table.partition_by),
        sort_by=tuple(table.sort_by or ()),
        write_mode=write_mode.chosen(config, table, exists),
        properties={**config.defaults.table_properties, **table.properties},
    )


@dataclass(frozen=True)
class StagedCommit:
    """A batch written to the target but not yet visible to readers: a staged commit, with what
    the backend read from its metadata (the audit's and the metrics' numbers, no scan)."""

    table: str
    batch_id: str
    version: int  # the staged version
    parent_version: int | None  # the table's head when it was staged
    live_records: int = 0  # rows a reader of the staged version sees
    files_written: int = 0  # data files the write added
    bytes_written: int = 0  # their size
    properties: dict[str, str] = field(default_factory=dict)  # its `lakefresh.*` commit properties
    # every batch it carries, oldest first (the earlier batches of a backlog group, then batch_id)
    batches: tuple[str, ...] = ()

    def carried(self) -> tuple[str, ...]:
        return self.batches or (self.batch_id,)

    def published_already(self, published: dict[str, int]) -> int | None:
        """Given the batches the lineage gained since the commit's parent (batch id -> commit):
        this commit's id if it is already current (a publish whose outcome was unknown), else
        None; TakenError if another commit holds any batch this one carries (a run that
        overlapped this one published it: publishing this commit would apply it twice)."""
        if published.get(self.batch_id) == self.version:
            return self.version
        if taken := [b for b in self.carried() if b in published]:
            raise TakenError(self.table, taken)
        return None


@dataclass(frozen=True)
class Deletes:
    """What a merge-on-read target's readers still apply: its delete files (Iceberg; Delta's
    deletion vectors), the rows they delete, and the rows stored in its data files (deleted
    ones included)."""

    files: int = 0
    rows: int = 0
    stored: int = 0


# The earlier batches of a backlog group (run/backlog.py), a JSON list in the group's commit summary
# (its wap.id is the last batch): all of them are applied when the commit is in the lineage.
GROUP_PROPERTY = "lakefresh.group"


@dataclass(frozen=True)
class Commit:
    """One commit of a table's lineage: its version, the batch it carries (None for a commit
    lakefresh did not make as a batch) and its operation (append, overwrite, delete, replace:
    a compaction, which changes no row). A backlog's group commit carries several batches:
    `batch_id` is the last of them, `batches` all of them, oldest first."""

    version: int
    batch_id: str | None
    operation: str
    batches: tuple[str, ...] = ()
    properties: dict[str, str] = field(default_factory=dict)  # its `lakefresh.*` properties


@dataclass(frozen=True)
class Lineage:
    """Which versions a table still has, and which of them the head descends from."""

    ancestors: frozenset[int]  # the head and its ancestors still retained
    retained: frozenset[int]  # every version the table still has (ancestors or not)
    oldest_ancestor_millis: int | None  # commit time (epoch ms) of the oldest retained ancestor
    # whether the oldest retained ancestor is the table's first commit: none of the current
    # lineage has expired (a change feed can then be read from the start)
    whole: bool = True

    def rolled_back(self, version: int, published_millis: int | None) -> bool:
        """Whether a version that was published is no longer in the lineage because the table
        was rolled back, not because it expired.

        A retained version outside the ancestors was rolled back. An expired one was rolled back
        only if it was published after the oldest ancestor still retained was committed: expiry
        removes a lineage from its old end, so an expired ancestor is older than every retained
        one."""
        if version in self.ancestors:
            return False
        if version in self.retained:
            return True
        return (
            published_millis is not None
            and self.oldest_ancestor_millis is not None
            and published_millis > self.oldest_ancestor_millis
        )


@dataclass(frozen=True)
class MergeClauses:
    """A MERGE over a change set whose rows carry a status column.

    `update_when` / `delete_when` / `insert_when` are SQL conditions over the source alias `s`.
    """

    keys: list[str]
    update_columns: list[str]
    insert_columns: list[str]
    update_when: str | None = None
    delete_when: str | None = None
    insert_when: str | None = None
    source_rows: int | None = None  # the change set's size, when known: small ones are broadcast
    # SQL over the target alias `t` that every row a source row may match meets (a key range):
    # added to the MERGE's condition, so the target's scan skips the files that cannot match
    target_condition: str | None = None


class TableDefinitions(Protocol):
    """Names and DDL: what a table is called, whether it exists, its schema, layout and properties."""

    def qualified(self, table: str) -> str:
        """The table's full name in SQL (catalog.namespace.table, quoted)."""

    def exists(self, table: str) -> bool:
        """Whether the table exists."""

    def create(self, table: str, schema: StructType, layout: Layout, staged_commits: bool = True) -> None:
        """Create the table (and its namespace) unless it exists, laid out as `layout` says. With
        `staged_commits` its writes can be staged (see `stage`); lakefresh's own tables (control
        tables, scratch tables) commit directly."""

    def lay_out(self, table: str, layout: Layout) -> list[str]:
        """Give an existing table the write mode and the write order of `layout` (its partitioning
        and properties are left as they are), each only if it has another; what changed
        (`write_mode`, `sort_by`)."""

    def take_over(self, table: str, layout: Layout) -> None:
        """Give a table another writer created what `create` gives lakefresh's targets: staged
        commits, the write mode, write order and properties of `layout` (its partitioning is
        left as it is)."""

    def log_table_properties(self) -> dict[str, str]:
        """Properties that suit lakefresh's control tables: small tables updated a row at a time
        and written by many pipelines at once. They are the format's own settings: callers pass
        them to `create` and `set_properties` without reading them."""

    def drop(self, table: str) -> None:
        """Drop a table of lakefresh's own (a temporary one) with its files."""

    def schema(self, table: str) -> StructType:
        """The table's current schema."""

    def properties(self, table: str) -> dict[str, str]:
        """The table's properties."""

    def set_properties(self, table: str, properties: dict[str, str]) -> None:
        """Set table properties (no new version)."""

    def drop_columns(self, table: str, columns: list[str]) -> None:
        """Drop columns (metadata only)."""

    def align(self, table: str, df: DataFrame, keep: tuple[str, ...] = ()) -> DataFrame:
        """Evolve the table for the batch's new columns; return the batch in the table's shape
        (plus the `keep` columns)."""


class TableHistory(Protocol):
    """A table's lineage and commits: which batches it holds, since when, and how to go back."""

    def head(self, table: str) -> int | None:
        """The table's head (its current version), None for an empty new table."""

    def latest(self, table: str) -> int | None:
        """The table's newest commit, whatever it changed, read without a job or the history: a
        marker that moves with every write (None before the first)."""

    def follows(self, table: str, marker: int | None) -> int | None:
        """The table's newest commit (as `latest` says it) when it is the only one made since
        `marker` (an earlier `latest`; None: the table had no commit then), else None: how a
        writer knows that nothing but its own commit came after what it last read."""

    def lineage(self, table: str) -> Lineage:
        """The table's retained versions and the head's ancestors (rollback checks)."""

    def published_batches(self, table: str, since: int | None = None) -> dict[str, int]:
        """Batch id -> version of the batches the current lineage carries, newest first (only
        those published after version `since`, when given: the cost then does not grow with
        the table's history)."""

    def commits_after(self, table: str, version: int | None, limit: int | None = None) -> list[Commit]:
        """The current lineage's commits after `version` (an ancestor; None: every
        retained one), newest first; with `limit`, at most that many (the newest)."""

    def roll_back_to(self, table: str, version: int) -> None:
        """Make an ancestor version the table's head again, in one metadata commit (the later
        versions stay retained, so it can be undone)."""

    def committed_at(self, table: str, version: int) -> datetime:
        """When a version was committed (UTC, naive); StateError if the table no longer has it."""

    def version_state(self, table: str, version: int) -> VersionState:
        """`current-lineage` if the version is the head or one of its ancestors,
        `expired` if the table no longer has it, `off-lineage` otherwise (a rollback left it)."""

    def live_records(self, table: str, version: int) -> int:
        """Rows a reader of the version sees, from the table's metadata (no scan); StateError if
        the table no longer has it."""


class StagedCommits(Protocol):
    """Writes that readers see only once published: the exactly-once commit (lakehouse/commit.py)."""

    def stage(
        self,
        table: str,
        batch_id: str,
        write: Callable[[], None],
        properties: dict[str, str] | None = None,
    ) -> StagedCommit:
        """Run `write` so that its commit is staged (invisible) and tagged with the batch id, and
        with `properties` in its commit metadata where the format can (the staged commit's
        `properties` say which it holds)."""

    def commits_at_once(self, table: str) -> bool:
        """Whether `stage` makes the write visible at once (Delta) instead of staging it (Iceberg):
        then what must outlive a crash after the write is recorded before it. Asked by the
        commit protocol alone (lakehouse/commit.py)."""

    def checks_appends(self, table: str) -> bool:
        """Whether a commit that only adds rows is refused when another writer committed since
        its change set read the table (Iceberg: a staged commit is published on its parent only).
        Where not (Delta), a change set of inserts is merged: the MERGE's own conflict check
        guards it."""

    def commit_properties(self, table: str, version: int) -> dict[str, str]:
        """The `lakefresh.*` properties a commit was made with (see `stage`)."""

    def with_properties(self, table: str, properties: dict[str, str], write: Callable[[], None]) -> None:
        """`write()`, one commit of no batch to `table`, made with these `lakefresh.*` properties."""

    def undo_since(self, table: str, head: int | None, batch_id: str) -> None:
        """Undo what a failed attempt of `batch_id` made visible since `head` (the table's head
        when the attempt began): nothing where writes are staged (Iceberg); where they commit at
        once (Delta), the table is restored to `head`, if every commit since is the attempt's
        own (its batch's, or a schema change), else CommitConflictError."""

    def publish(self, staged: StagedCommit) -> int:
        """Make a staged commit current, atomically, only if the table's head is still the
        commit's parent (a compare-and-swap: no commit can land between the check and the
        publish); return the published version. Every batch the commit carries is looked up
        in the lineage first (StagedCommit.published_already): a commit already current is
        returned, one whose batches another commit holds is refused (TakenError);
        CommitConflictError if the table moved since the commit was staged."""


class TableUpkeep(Protocol):
    """Upkeep (`lakefresh maintain`): compaction, expiry of old versions, orphan files."""

    def file_count(self, table: str) -> int:
        """Data and delete files in the table's head."""

    def deletes(self, table: str) -> Deletes:
        """The deletes in the table's head that readers apply (merge-on-read writes
        them), read from metadata."""

    def maintain(
        self,
        table: str,
        compact: bool,
        expire_before: datetime | None,
        keep_versions: int,
        orphans_before: datetime | None,
    ) -> dict[str, int]:
        """A target's upkeep: with `compact`, rewrite small data files and apply delete files
        (commits that change no row); expire the versions committed before `expire_before`
        except the newest `keep_versions`; remove files no version references that are older
        than `orphans_before`. Returns what was done, by name (files rewritten, versions
        expired, orphan files removed)."""

    def compact(self, table: str, keep_versions: int) -> None:
        """Rewrite a small table's files into few, deletes applied; keep the newest versions."""


class TableRows(Protocol):
    """Reads and writes of rows: the strategies' targets and lakefresh's control tables."""

    def read(self, table: str, version: int | None = None) -> DataFrame:
        """The table now, or as of a version (time travel)."""

    def changes(self, table: str, start: int | None, end: int, keys: list[str]) -> DataFrame:
        """The table's changes after version `start` (exclusive; None: from its first) up to
        version `end` (inclusive): its rows plus the change columns of :mod:`lakefresh.columns`:
        CHANGE_TYPE_COLUMN (INSERT, DELETE; with `keys`, a delete and an insert of one key in
        one commit are an UPDATE_BEFORE / UPDATE_AFTER pair), CHANGE_ORDINAL_COLUMN (the
        commit's order in the range), CHANGE_SNAPSHOT_COLUMN (the version it made) and
        CHANGE_TIME_COLUMN (when it was committed). Rows a commit rewrote unchanged are left out."""

    def carries_commit_properties(self, table: str | None = None) -> bool:
        """Whether a staged commit keeps the properties `stage` gives it (its summary): of
        `table`'s format, or of every format the backend writes."""

    def broadcast_rows(self) -> int:
        """Row sets up to this size are broadcast into joins with a target."""

    def append(self, table: str, df: DataFrame) -> None:
        """Append rows."""

    def append_rows(
        self,
        table: str,
        rows: list[dict[str, Any]],
        schema: StructType,
        unless: tuple[int | None, str, str] | None = None,
    ) -> None:
        """Append a few rows given as Python values (dicts by column name; a missing key is
        NULL) of the table's `schema`: a control table's record. With `unless` (a version, a
        column, a value): refused with a commit conflict if a row whose column holds that value
        was added since that version (Iceberg; elsewhere a plain append), so that a writer that
        checked the table at that version appends nothing another wrote meanwhile."""

    def read_rows(self, table: str) -> tuple[int | None, list[dict[str, Any]]]:
        """A small control table's rows as Python values (a timestamp as a naive datetime in the
        session's time zone, as PySpark gives it), with a marker of the state they were read
        at, for `replace_rows`."""

    def replace_rows(
        self, table: str, rows: list[dict[str, Any]], schema: StructType, since: int | None
    ) -> None:
        """Replace every row of a small control table with `rows` (as `append_rows` takes them),
        in one commit, refused with a commit conflict if the table was written after `read_rows`
        returned the marker `since`: a compare-and-swap, so that of two writers that read the
        same state, one commits and the other reads again. Old versions of the table are
        dropped as it goes (it is rewritten often)."""

    def replace(self, table: str, df: DataFrame) -> None:
        """Replace every row with `df`."""

    def replace_table(self, table: str, df: DataFrame, batch_id: str, partition_by: list[str]) -> int:
        """Replace the table's schema and rows with `df`'s in one commit, visible at once and
        tagged with `batch_id`, partitioned by `partition_by` from then on: a new version of the
        table that keeps its properties and earlier versions (a full refresh under a schema its
        batches cannot evolve to). Return the commit's version."""

    def merge(self, table: str, source: DataFrame, clauses: MergeClauses) -> None:
        """MERGE a change set into the table."""

    def update(self, table: str, assignments: dict[str, str], where: str) -> None:
        """The rows that meet `where` (SQL) get these values (a plain column name -> an SQL
        expression): a control table's mark."""

    def delete_and_append(
        self,
        table: str,
        rows: DataFrame,
        delete_when: str | None,
        matches: DataFrame | None,
        deletes: int,
        equi_join: bool = False,
    ) -> None:
        """In one commit: delete target rows (`this`) for which some row of `matches` (`input`)
        makes `delete_when` true, and insert `rows`."""


class TableBackend(TableDefinitions, TableHistory, StagedCommits, TableUpkeep, TableRows, Protocol):
    """Atomic, exactly-once batch commits on one table format.

    Tables are named `namespace.table` in the pipeline's catalog. A *version* is one committed
    state of a table, named by an integer (see the module's docstring); the table's *lineage* is
    its head and the head's ancestors. A batch is
    written as a *staged commit* tagged with its batch id: invisible to readers until it is
    published, so the lineage itself tells which batches a table holds.
    """

    spark: SparkSession
