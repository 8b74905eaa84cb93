"""The one commit protocol: a change set written to a table as its format commits, exactly once.

Every writer of a target (a batch, a backlog group, a verb that rebuilds a table) goes through
one :class:`Transaction`:

1. **begin**: the table's head when the change set reads it (`head`): the commit must land on it,
   and a failed attempt is undone back to it;
2. **shape**: the table created or evolved for the change set, on that head;
3. **write**: the change set written as one commit tagged with the batch id;
4. **audit**: the commit checked before readers can rely on it;
5. **record**: what must outlive a crash after the commit becomes visible, recorded before it
   becomes visible;
6. **publish**: the commit made current, atomically, only on its parent (a compare-and-swap),
   with every batch it carries checked against the lineage (`StagedCommit.published_already`).

Whether a write is staged (Iceberg: invisible until published, so its audit and record come
before the publish) or visible at once (Delta, and any table replaced by a full refresh: the
record comes before the write, and a failed audit undoes it) is the table format's business and
is decided here alone. Either way a commit on another parent than the one its change set read
is refused (CommitConflictError: the batch is staged again).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from lakefresh.errors import CommitConflictError
from lakefresh.lakehouse.backend import StagedCommit

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from lakefresh.lakehouse.backend import TableBackend

T = TypeVar("T")
Audit = Callable[[StagedCommit], None]
# records what must outlive a crash: given the staged commit, or None before a write that is
# visible at once (its version is not known yet)
Record = Callable[[StagedCommit | None], None]


class Transaction:
    """One write of a change set to one table, from the head its change set read to its publish.
    What it did so far (`staged`, `publishing`, `version`) tells a failure's handler what is
    left to undo or settle."""

    def __init__(self, backend: TableBackend, table: str, what: str, conflict: str | None = None) -> None:
        self.backend = backend
        self.table = table
        # what a table that moved under the change set says (CommitConflictError)
        self.conflict = conflict or f"{table} moved while {what} was staged; it is staged again"
        self.existed = backend.exists(table)
        self.head = backend.head(table) if self.existed else None  # what the change set reads
        self.parent = self.head  # the parent its commit must have
        self._at_once = backend.commits_at_once(table)
        self.staged: StagedCommit | None = None
        self.touched = False  # whether it made anything visible (a write, its own schema commits)
        self.publishing = False  # its publish began: from then on only the lineage knows
        self.version: int | None = None

    def shape(self, evolve: Callable[[], T]) -> T:
        """Create or evolve the table for the change set (`evolve`, whose result is returned), on
        the head the change set read. A format whose schema changes are commits of their own
        (Delta's ALTER) gives the write the head they leave as its parent."""
        if self._at_once and self.existed:
            self._unmoved(self.backend.head(self.table), self.head)
        out = evolve()
        if self._at_once:
            self.parent = self.backend.head(self.table)
            self.touched = self.touched or self.parent != self.head
        return out

    def parent_rows(self) -> int:
        """Rows a reader of the commit's parent sees (an audit's base), from metadata."""
        return self.backend.live_records(self.table, self.parent) if self.parent is not None else 0

    def commit(
        self,
        batch_id: str,
        write: Callable[[], None],
        audit: Audit,
        record: Record,
        properties: dict[str, str] | None = None,
    ) -> int:
        """Write, audit, record and publish; the published version."""
        if self._at_once:
            self._record_first(record)
            self.touched = True
            self.staged = self.backend.stage(self.table, batch_id, write, properties)
            self._audit_visible(batch_id, audit)
        else:
            self.staged = self.backend.stage(self.table, batch_id, write, properties)
            # another writer committed after the change set read the table: the change set may
            # be wrong (an append of new keys would not see a key added meanwhile)
            self._unmoved(self.staged.parent_version, self.parent)
            audit(self.staged)
            record(self.staged)
        self.publishing = True
        self.version = self.backend.publish(self.staged)
        return self.version

    def replace_table(
        self, batch_id: str, rows: DataFrame, partition_by: list[str], audit: Audit, record: Record
    ) -> int:
        """The table itself replaced by `rows` (a new schema: `TableBackend.replace_table`), a
        commit visible at once on every format: recorded first, audited after."""
        self._record_first(record)
        self.touched = self.publishing = True  # visible once it returns, whatever follows
        self.version = self.backend.replace_table(self.table, rows, batch_id, partition_by)
        found = self.backend.live_records(self.table, self.version)
        self.staged = StagedCommit(self.table, batch_id, self.version, None, live_records=found)
        audit(self.staged)
        return self.version

    def abort(self, batch_id: str) -> None:
        """Undo what the attempt made visible (a commit visible at once, its own schema
        commits) back to the head it began on; nothing where it made nothing visible, or where
        its write was staged. Idempotent; CommitConflictError when another writer's commit came
        after it (it then stays)."""
        if self.touched:
            self.backend.undo_since(self.table, self.head, batch_id)

    def _record_first(self, record: Record) -> None:
        """Before a write visible at once: its record, on a head checked before anything is
        recorded and again just before the write."""
        self._unmoved(self.backend.head(self.table), self.parent)
        record(None)
        self._unmoved(self.backend.head(self.table), self.parent)

    def _audit_visible(self, batch_id: str, audit: Audit) -> None:
        assert self.staged is not None
        try:
            audit(self.staged)
        except Exception:
            self.abort(batch_id)
            raise

    def _unmoved(self, now: int | None, expected: int | None) -> None:
        if now != expected:
            raise CommitConflictError(self.conflict)
