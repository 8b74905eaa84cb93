"""A Delta table's log read on this side, through the `deltalake` package (delta-rs): what the
Connect road (lakehouse/delta/sql.py) asks of a version that Spark's SQL does not say.

A classic session asks the driver's `DeltaLog` for its newest snapshot; a Spark Connect client
has no driver of its own, and no SQL statement shows a version's idempotent-write transactions
(the `txn` actions: DESCRIBE HISTORY and DESCRIBE DETAIL hold none). delta-rs replays the same
`_delta_log` folder (its last checkpoint, then the commits after it: a few milliseconds for a
table of lakefresh's) for the version, its commit time, the applications' transaction versions,
the live files with their record counts and their deletion vectors.

So this process reads the table's storage itself: local paths, or an object store whose
credentials delta-rs finds in the environment (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID...), as Arrow's
file systems read the source folders on this road (lakehouse/storage.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakefresh.lakehouse.backend import Deletes
from lakefresh.lakehouse.storage import arrow_uri

if TYPE_CHECKING:
    from deltalake import DeltaTable

DELETION_VECTORS = "deletionVectors"  # the reader feature of a table that may have them


@dataclass(frozen=True)
class LogVersion:
    """A version of a table's log: its number and its commit's time (Unix milliseconds)."""

    version: int
    millis: int


def is_delta_table(location: str) -> bool:
    """Whether a Delta table's log is at `location`."""
    from deltalake import DeltaTable

    return bool(DeltaTable.is_deltatable(arrow_uri(location)))


def load(location: str, version: int | None = None) -> DeltaTable | None:
    """The table at its newest version (or at `version`); None when there is no table there."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        return DeltaTable(arrow_uri(location), version=version)
    except TableNotFoundError:
        return None


def newest(table: DeltaTable) -> LogVersion:
    """The table's newest version and its commit's time."""
    commits = table.history(1)
    millis = int(commits[0]["timestamp"]) if commits else 0
    return LogVersion(int(table.version()), millis)


def transaction_version(table: DeltaTable | None, app_id: str) -> int:
    """The version the table last recorded for this idempotent-write application, or -1."""
    found = None if table is None else table.transaction_version(app_id)
    return -1 if found is None else int(found)


def file_count(table: DeltaTable | None) -> int:
    """The version's live data files (DESCRIBE DETAIL's `numFiles`)."""
    return 0 if table is None else int(_add_actions(table).num_rows)


def records(table: DeltaTable) -> int | None:
    """The rows the version holds, from its files' statistics less the rows their deletion
    vectors delete (the count Delta itself makes from its metadata); None when a file has no
    statistics."""
    counts = _add_actions(table).column("num_records").to_pylist()
    if any(c is None for c in counts):
        return None
    return int(sum(counts)) - deletes(table).rows


def keeps_deletion_vectors(table: DeltaTable | None) -> bool:
    """Whether the table has Delta's deletion-vector feature (without it, it has none)."""
    return table is not None and DELETION_VECTORS in (table.protocol().reader_features or [])


def deletes(table: DeltaTable) -> Deletes:
    """The version's deletion vectors and the rows they delete (`Deletes.stored` left 0: the
    caller adds the live rows). delta-rs reads each vector of the version (a keep-mask per row
    of its file)."""
    if not keeps_deletion_vectors(table):
        return Deletes()
    import pyarrow as pa
    import pyarrow.compute as pc

    vectors = arrow(table.deletion_vectors())
    if vectors.num_rows == 0:
        return Deletes()
    kept = pc.list_flatten(vectors.column("selection_vector"))
    deleted = len(kept) - int(pc.sum(kept.cast(pa.int64())).as_py() or 0)
    return Deletes(vectors.num_rows, deleted)


def query(table: DeltaTable, sql: str) -> Any:
    """A query of the version (named `t`) through delta-rs's DataFusion, which applies deletion
    vectors (its pyarrow dataset refuses tables that have them, as lakefresh's control tables
    do), as a pyarrow Table."""
    from deltalake import QueryBuilder

    return arrow(QueryBuilder().register("t", table).execute(sql))


def rows(table: DeltaTable) -> list[dict[str, Any]]:
    """The version's rows as PySpark's `collect()` gives them (lakehouse/native.py)."""
    from lakefresh.lakehouse.native import spark_rows

    return spark_rows(query(table, "SELECT * FROM t"))


def _add_actions(table: DeltaTable) -> Any:
    return arrow(table.get_add_actions(flatten=True))


def arrow(stream: Any) -> Any:
    """delta-rs's answer (an Arrow C stream) as a pyarrow Table. Not through `pa.table()`, which
    first asks whether it is a pandas DataFrame and so imports pandas: half a second of a read
    that needs no JVM."""
    import pyarrow as pa

    return pa.RecordBatchReader.from_stream(stream).read_all()
