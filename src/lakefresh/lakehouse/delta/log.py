"""A Delta table's log as lakefresh reads it: which batches each version carries, the lineage
(the current version and its ancestors, a RESTORE continuing at the version it restored), the
change data feed over that lineage, and a version's rows from its checksum.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lakefresh.columns import (
    CHANGE_ORDINAL_COLUMN,
    CHANGE_SNAPSHOT_COLUMN,
    CHANGE_TIME_COLUMN,
    CHANGE_TYPE_COLUMN,
)
from lakefresh.errors import StateError
from lakefresh.lakehouse.backend import GROUP_PROPERTY, Lineage, VersionState
from lakefresh.lakehouse.changes import without_carry_overs

if TYPE_CHECKING:
    from pathlib import Path

    from pyspark.sql import DataFrame, SparkSession

BATCH_KEY = "lakefresh.batch"  # the batch a commit carries, in its userMetadata (a JSON object)
CHANGE_TYPES = {
    "insert": "INSERT",
    "delete": "DELETE",
    "update_preimage": "UPDATE_BEFORE",
    "update_postimage": "UPDATE_AFTER",
}
# Operations that change rows, as lakefresh names them (Commit.operation); any other commit
# changes no row (schema, properties, OPTIMIZE, a RESTORE seen from the version it restored).
ROW_OPERATIONS = {
    "WRITE": "append",
    "STREAMING UPDATE": "append",
    "MERGE": "overwrite",
    "UPDATE": "overwrite",
    "DELETE": "delete",
    "TRUNCATE": "delete",
    "CREATE TABLE AS SELECT": "overwrite",
    "REPLACE TABLE AS SELECT": "overwrite",
    "CREATE OR REPLACE TABLE AS SELECT": "overwrite",
    "REPLACE TABLE": "overwrite",
    "CREATE OR REPLACE TABLE": "overwrite",
    "COPY INTO": "append",
    "CLONE": "overwrite",
}
HISTORY_COLUMNS = (
    "version",
    "unix_millis(timestamp)",
    "operation",
    "operationParameters",
    "operationMetrics",
    "userMetadata",
)


@dataclass(frozen=True)
class Version:
    """One entry of a table's history."""

    version: int
    millis: int
    operation: str
    parameters: dict[str, str | None]  # a JSON null as None, as DESCRIBE HISTORY gives it
    metrics: dict[str, str]
    metadata: dict[str, Any]

    @property
    def batches(self) -> tuple[str, ...]:
        batch = self.metadata.get(BATCH_KEY)
        if batch is None:
            return ()
        group = self.metadata.get(GROUP_PROPERTY)
        return (*([str(b) for b in json.loads(str(group))] if group else []), str(batch))

    @property
    def properties(self) -> dict[str, str]:
        """Its `lakefresh.*` properties, the batch aside."""
        return {k: str(v) for k, v in self.metadata.items() if k.startswith("lakefresh.") and k != BATCH_KEY}

    @property
    def changes_rows(self) -> bool:
        return self.operation in ROW_OPERATIONS


class VersionLog:
    """A table's retained history (newest first) at one moment: the lineage facts of
    `TableBackend` answered from it."""

    def __init__(self, history: list[Version]) -> None:
        self.history = history
        self.lineage = lineage(history)

    def head(self) -> int | None:
        return self.lineage[0].version if any(v.changes_rows for v in self.lineage) else None

    def view(self) -> Lineage:
        """The lineage as `TableBackend.lineage` gives it."""
        oldest = self.lineage[-1].millis if self.lineage else None
        whole = (
            not self.history or min(v.version for v in self.history) == 0
        )  # the log from its first version
        return Lineage(
            frozenset(v.version for v in self.lineage),
            frozenset(v.version for v in self.history),
            oldest,
            whole,
        )

    def entry(self, table: str, version: int) -> Version:
        for entry in self.history:
            if entry.version == version:
                return entry
        raise StateError(f"version {version} of {table} no longer exists")

    def commit_properties(self, table: str, version: int) -> dict[str, str]:
        return self.entry(table, version).properties

    def committed_at(self, table: str, version: int) -> datetime:
        millis = self.entry(table, version).millis
        return datetime.fromtimestamp(millis / 1000, UTC).replace(tzinfo=None)

    def published(self) -> dict[str, int]:
        """The batches the lineage carries (`published_in`)."""
        return published_in(self.lineage)

    def state(self, version: int) -> VersionState:
        if version not in {v.version for v in self.history}:
            return "expired"
        return "current-lineage" if version in {v.version for v in self.lineage} else "off-lineage"


def history(spark: SparkSession, qualified: str) -> list[Version]:
    """The table's retained history, newest first."""
    rows = spark.sql(f"DESCRIBE HISTORY {qualified}").selectExpr(*HISTORY_COLUMNS).collect()
    out = [
        Version(int(r[0]), int(r[1]), str(r[2]), dict(r[3] or {}), dict(r[4] or {}), _json_object(r[5]))
        for r in rows
    ]
    return sorted(out, key=lambda v: -v.version)


def history_entry(commit: dict[str, Any], log: Path | None = None) -> Version:
    """A history entry as the `deltalake` package gives it (`DeltaTable.history()`: a commit's
    `commitInfo`, its version added), read as DESCRIBE HISTORY's row is: its time the commit's
    in-commit timestamp, else its file's modification time in the table's `_delta_log` folder
    `log` when that is at hand (as Delta's history manager takes it; the `timestamp` delta-rs
    gives is the one the writer put in the commit, a few milliseconds earlier), and each
    parameter's value as JSON text (delta-rs gives a number as a number), a JSON null as None.
    A commit file's own `commitInfo` reads the same way."""
    version = int(commit["version"])
    millis = commit.get("inCommitTimestamp")
    if millis is None and log is not None and (file := log / f"{version:020d}.json").exists():
        millis = file.stat().st_mtime_ns // 1_000_000
    parameters = commit.get("operationParameters") or {}
    return Version(
        version,
        int(commit["timestamp"] if millis is None else millis),
        str(commit["operation"]),
        {str(k): v if v is None or isinstance(v, str) else json.dumps(v) for k, v in parameters.items()},
        dict(commit.get("operationMetrics") or {}),
        _json_object(commit.get("userMetadata")),
    )


@dataclass(frozen=True)
class CommitFile:
    """A commit's file in a table's `_delta_log` folder, as read: its version, its modification
    time (Unix milliseconds) and its text (one action per line)."""

    version: int
    modified: int
    text: str

    def commit_info(self) -> dict[str, Any] | None:
        """Its `commitInfo` action, or None (a writer may leave it out)."""
        for line in self.text.splitlines():
            if '"commitInfo"' in line:  # not every action parsed: a big write adds many files
                action = json.loads(line)
                if "commitInfo" in action:
                    return dict(action["commitInfo"])
        return None


def entries_after(previous: Version | None, files: list[CommitFile]) -> list[Version] | None:
    """The history entries of the commits after `previous` (DESCRIBE HISTORY's entry of the first
    file's version; None: the files are the whole log, from version 0), newest first, as
    DESCRIBE HISTORY gives them: each commit's time its in-commit timestamp, else its file's
    modification time, made a millisecond later than the commit before it when it is not later
    (Delta's history manager does the same: a store may keep modification times to the
    second). None when the first file is not `previous`'s commit (the table was made anew
    since), or a commit has no `commitInfo`: then the history is read whole."""
    out: list[Version] = []
    for file in files:
        info = file.commit_info()
        if info is None:
            return None
        entry = history_entry({**info, "version": file.version})
        if "inCommitTimestamp" not in info:
            entry = replace(entry, millis=_not_before(file.modified, previous, out))
        if not out and previous is not None and entry != previous:
            return None
        out.append(entry)
    return out[:0:-1] if previous is not None else out[::-1]


def _not_before(modified: int, previous: Version | None, done: list[Version]) -> int:
    """A commit's time from its file's: a millisecond after the commit before it when it is not
    later. The first file's commit is `previous` itself, which may have been made later already."""
    if done:
        return max(modified, done[-1].millis + 1)
    return modified if previous is None else max(modified, previous.millis)


def published_in(lineage: list[Version], since: int | None = None) -> dict[str, int]:
    """Batch id -> version of the batches a lineage (newest first) carries; with `since`, only
    those after that version (the walk stops there)."""
    out: dict[str, int] = {}
    for entry in lineage:
        if since is not None and entry.version == since:
            break
        for batch_id in reversed(entry.batches):
            out.setdefault(batch_id, entry.version)
    return out


def lineage(entries: list[Version]) -> list[Version]:
    """The current version and its ancestors, newest first (`entries`: a history, newest
    first): a RESTORE continues at the version it restored."""
    by_version = {v.version: v for v in entries}
    out: list[Version] = []
    at = entries[0].version if entries else None
    while at is not None and at in by_version:
        entry = by_version[at]
        out.append(entry)
        at = restored_version(entry, entries) if entry.operation == "RESTORE" else at - 1
    return out


def restored_version(entry: Version, entries: list[Version]) -> int:
    """The version a RESTORE went back to: the one it names, or for `TO TIMESTAMP AS OF` (whose
    version Delta records as null) the newest version committed at or before that time, read in
    UTC (lakefresh's sessions' zone; Delta reads the text in the restoring session's zone)."""
    from datetime import UTC, datetime

    named = _json_value(entry.parameters.get("version"))
    if named is not None:
        return int(named)
    stamp = _json_value(entry.parameters.get("timestamp"))
    try:
        at = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        raise StateError(
            f"version {entry.version} is a RESTORE whose version or time cannot be read "
            f"({entry.parameters}): the table's lineage cannot be followed through it"
        ) from None
    millis = (at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp() * 1000
    earlier = [v.version for v in entries if v.version < entry.version and v.millis <= millis]
    if earlier:
        return max(earlier)
    if any(v.version == 0 for v in entries):
        raise StateError(
            f"version {entry.version} restored a time ({stamp}) before the table's first version"
        )
    return -1  # the version it restored has left the log: the lineage ends there, as for a named one


def _json_value(text: str | None) -> Any:
    """A history parameter's value (Delta writes them as JSON text); None for null or absent."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def checksum_of(snapshot: Any) -> Any:
    """A snapshot's checksum (its version's `.crc`, or what its commit computed), or None."""
    found = snapshot.checksumOpt()
    return found.get() if found.isDefined() else None


def records_in(checksum: Any) -> int | None:
    """A version's rows from its checksum (a `VersionChecksum`, or None), without replaying the
    log: each listed file's records in its statistics, less those its deletion vector deletes,
    the sum Delta's own metadata-only count makes. Delta lists every live file there, or none:
    only for tables of up to 50 files (`allFilesInCrc`), on commits that keep the schema, and
    not on a RESTORE's. None when there is no list or a file has no statistics."""
    files = checksum.allFiles() if checksum is not None else None
    if files is None or files.isEmpty():
        return None
    listed, total = files.get(), 0
    for i in range(listed.size()):
        records = listed.apply(i).numLogicalRecords()
        if records.isEmpty():
            return None
        total += int(records.get())
    return total


def deletes_in(checksum: Any) -> tuple[int, int] | None:
    """A version's deletion vectors and the rows they delete, from its checksum (a
    `VersionChecksum`, or None) without replaying the log; None when it does not count them."""
    if checksum is None:
        return None
    vectors, rows = checksum.numDeletionVectorsOpt(), checksum.numDeletedRecordsOpt()
    if vectors.isEmpty() or rows.isEmpty():
        return None
    return int(vectors.get()), int(rows.get())


def change_feed(
    spark: SparkSession, location: str, entries: list[Version], start: int | None, end: int, keys: list[str]
) -> DataFrame:
    """The change data feed after version `start` up to `end`, in lakefresh's change columns,
    over the versions of the lineage `entries` only (what a RESTORE undid is not read, nor the
    RESTORE itself); without keys, an update is a DELETE and an INSERT. The ordinal is the
    version's distance from the first one read."""
    from functools import reduce

    from pyspark.sql import functions as F

    first = 0 if start is None else start + 1
    wanted = sorted(v.version for v in entries if first <= v.version <= end and v.operation != "RESTORE")
    runs: list[list[int]] = []
    for version in wanted:
        if runs and runs[-1][-1] == version - 1:
            runs[-1].append(version)
        else:
            runs.append([version])

    def read(low: int, high: int) -> DataFrame:
        reader = spark.read.format("delta").option("readChangeFeed", "true")
        return reader.option("startingVersion", str(low)).option("endingVersion", str(high)).load(location)

    reads = [read(run[0], run[-1]) for run in runs] or [read(end, end).limit(0)]
    rows = reduce(lambda a, b: a.unionByName(b), reads)
    types = (
        CHANGE_TYPES if keys else {**CHANGE_TYPES, "update_preimage": "DELETE", "update_postimage": "INSERT"}
    )
    kind = F.coalesce(*[F.when(F.col("_change_type") == k, F.lit(v)) for k, v in types.items()])
    out = (
        rows.withColumn(CHANGE_TYPE_COLUMN, kind)
        .withColumn(CHANGE_ORDINAL_COLUMN, F.col("_commit_version") - F.lit(first))
        .withColumnRenamed("_commit_version", CHANGE_SNAPSHOT_COLUMN)
        .withColumnRenamed("_commit_timestamp", CHANGE_TIME_COLUMN)
        .drop("_change_type")
    )
    return without_carry_overs(out, keys) if keys else out


def _json_object(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        found = json.loads(text)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}
