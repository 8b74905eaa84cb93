"""The `loads` control table: which version ranges of a source table each reader has loaded.

One row per load: `load_id` (the reader: several pipelines may read one source independently),
`source_table`, `start_snapshot_id` (exclusive; NULL: from the table's first snapshot),
`end_snapshot_id` (inclusive, fixed when the load is opened), `batch_id`, `processed` and times.
A load is opened before it is read and marked processed once its batch is published to the
target; a load that was opened and not processed is read again, with the same start and end, so
its batch id is the same and the target's lineage tells whether it was applied after all.
Created on first use, with the control tables' state version.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakefresh.clock import utc_now
from lakefresh.lakehouse.failures import retry_conflicts
from lakefresh.lakehouse.sql import sql_literal
from lakefresh.state.control import LOADS_TABLE, create_control_table

if TYPE_CHECKING:
    from lakefresh.lakehouse.backend import TableBackend

# `start_snapshot_id` and `end_snapshot_id` hold versions of the source table: stored columns,
# named as they were created (renaming them would need a migration)
LOADS_SCHEMA = """
load_id string NOT NULL, source_table string NOT NULL, start_snapshot_id bigint,
end_snapshot_id bigint NOT NULL, batch_id string NOT NULL, processed boolean NOT NULL,
opened_at timestamp, processed_at timestamp
"""


@dataclass(frozen=True)
class Load:
    """A row of `loads`, its fields named as its columns."""

    load_id: str
    source_table: str
    start_snapshot_id: int | None
    end_snapshot_id: int
    batch_id: str
    processed: bool


def loads_in(rows: list[dict[str, Any]], load_id: str) -> list[Load]:
    """A reader's loads among the `loads` table's rows (read whole, by either road: the reading
    verbs' road without a JVM), oldest first as `LoadLog.loads` orders them."""
    mine = [r for r in rows if r["load_id"] == load_id]
    mine.sort(key=lambda r: (r["opened_at"] is not None, r["opened_at"] or 0, r["end_snapshot_id"]))
    fields = ("load_id", "source_table", "start_snapshot_id", "end_snapshot_id", "batch_id", "processed")
    return [Load(*(r[f] for f in fields)) for r in mine]


class LoadLog:
    def __init__(self, backend: TableBackend, namespace: str) -> None:
        self.backend = backend
        self.table = f"{namespace}.{LOADS_TABLE}"
        self._ready = False

    def ensure(self) -> None:
        if not self._ready:
            create_control_table(self.backend, self.table, LOADS_SCHEMA)
        self._ready = True

    def loads(self, load_id: str) -> list[Load]:
        """The reader's loads, oldest first."""
        self.ensure()
        rows = self.backend.spark.sql(
            "SELECT load_id, source_table, start_snapshot_id, end_snapshot_id, batch_id, processed "
            f"FROM {self.backend.qualified(self.table)} WHERE load_id = {sql_literal(load_id)} "
            "ORDER BY opened_at, end_snapshot_id"
        ).collect()
        return [Load(*r) for r in rows]

    def open(self, load: Load) -> None:
        self.ensure()
        now = utc_now()
        row = {**load.__dict__, "opened_at": now, "processed_at": now if load.processed else None}
        schema = self.backend.schema(self.table)
        retry_conflicts(lambda: self.backend.append_rows(self.table, [row], schema))

    def reopen(self, load_id: str, batch_ids: list[str]) -> None:
        """The loads of these batches are to be read again (their batches were rolled back out
        of the target and are applied again)."""
        self.ensure()
        named = ", ".join(map(sql_literal, batch_ids))
        where = f"load_id = {sql_literal(load_id)} AND batch_id IN ({named})"
        unprocessed = {"processed": "false", "processed_at": "NULL"}
        retry_conflicts(lambda: self.backend.update(self.table, unprocessed, where))

    def mark_processed(self, load_id: str, batch_id: str) -> None:
        self.ensure()
        where = f"load_id = {sql_literal(load_id)} AND batch_id = {sql_literal(batch_id)}"
        processed = {"processed": "true", "processed_at": "current_timestamp()"}
        retry_conflicts(lambda: self.backend.update(self.table, processed, where))
