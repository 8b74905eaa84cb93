"""A Delta table's history as lakefresh reads it: which batches each version carries, and the
lineage (the current version and its ancestors, a RESTORE continuing at the version it restored).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakefresh.lakehouse.backend import GROUP_PROPERTY

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

BATCH_KEY = "lakefresh.batch"  # the batch a commit carries, in its userMetadata (a JSON object)
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
    parameters: dict[str, str]
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
    def changes_rows(self) -> bool:
        return self.operation in ROW_OPERATIONS


def history(spark: SparkSession, qualified: str) -> list[Version]:
    """The table's retained history, newest first."""
    rows = spark.sql(f"DESCRIBE HISTORY {qualified}").selectExpr(*HISTORY_COLUMNS).collect()
    out = [
        Version(int(r[0]), int(r[1]), str(r[2]), dict(r[3] or {}), dict(r[4] or {}), _json_object(r[5]))
        for r in rows
    ]
    return sorted(out, key=lambda v: -v.version)


def lineage(entries: list[Version]) -> list[Version]:
    """The current version and its ancestors, newest first (`entries`: a history, newest
    first): a RESTORE continues at the version it restored."""
    by_version = {v.version: v for v in entries}
    out: list[Version] = []
    at = entries[0].version if entries else None
    while at is not None and at in by_version:
        entry = by_version[at]
        out.append(entry)
        at = int(entry.parameters["version"]) if entry.operation == "RESTORE" else at - 1
    return out


def _json_object(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        found = json.loads(text)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}
