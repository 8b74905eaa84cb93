"""The `batches` log's marks for what the operator did and for what a rollback or a verb changed:
rolled back, unloaded, forgotten, reloaded, resolved quarantine rows, corrected counts. A mixin of
:class:`lakefresh.state.control.ControlTables`, which owns the tables and their schemas."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from lakefresh.lakehouse.literals import literal_rows
from lakefresh.lakehouse.session import parse_schema
from lakefresh.lakehouse.sql import sql_literal

if TYPE_CHECKING:
    from lakefresh.lakehouse.backend import TableBackend


class MarksHost(Protocol):
    """What :class:`OperatorMarks` needs of its host (:class:`lakefresh.state.control.ControlTables`):
    the control tables and their writes, each tried again while another pipeline's commit
    conflicts."""

    backend: TableBackend
    batches: str
    quarantine: str

    def _update(self, table: str, where: str, assignments: dict[str, str]) -> None:
        """The table's rows of `batches` that meet `where` get these SQL values."""
        ...

    def _mark(self, control_table: str, assignments: dict[str, str], where: str) -> None:
        """A control table's rows that meet `where` get these SQL values."""
        ...

    def _sql(self, statement: str) -> None:
        """A write to a control table."""
        ...


class OperatorMarks:
    """The operator's marks in the log; a mixin whose host is a :class:`MarksHost`."""

    def replays(self: MarksHost, table: str, batch_ids: list[str]) -> dict[str, str]:
        """The `replay` of these batches' attempts, by batch id: a published attempt's first (a
        verb's commit in the lineage whose record a crash left `staged`, or that a rollback
        marked `unloaded` and a `set_current_snapshot` brought back, counts too)."""
        ids = ", ".join(sql_literal(b) for b in batch_ids)
        rows = self.backend.spark.sql(
            f"SELECT batch_id, replay FROM {self.backend.qualified(self.batches)} WHERE table_name = "
            f"{sql_literal(table)} AND batch_id IN ({ids}) AND replay IS NOT NULL "
            "ORDER BY CASE status WHEN 'published' THEN 0 ELSE 1 END DESC"
        ).collect()
        return {r[0]: r[1] for r in rows}  # the last row of a batch wins: a published one

    def fingerprints(self: MarksHost, table: str) -> dict[str, str]:
        """The configuration fingerprint each published batch was applied under (when recorded)."""
        rows = self.backend.spark.sql(
            f"SELECT batch_id, config_fingerprint FROM {self.backend.qualified(self.batches)} "
            f"WHERE table_name = {sql_literal(table)} AND status = 'published' "
            "AND config_fingerprint IS NOT NULL"
        ).collect()
        return {r[0]: r[1] for r in rows}

    def configuration(self: MarksHost, table: str, batch_id: str) -> tuple[str, str] | None:
        """The configuration fingerprint and settings an attempt of this batch recorded."""
        row = self.backend.spark.sql(
            f"SELECT config_fingerprint, config FROM {self.backend.qualified(self.batches)} WHERE "
            f"table_name = {sql_literal(table)} AND batch_id = {sql_literal(batch_id)} "
            "AND config_fingerprint IS NOT NULL LIMIT 1"
        ).first()
        return None if row is None else (row[0], row[1])

    def position(self: MarksHost, table: str, batch_id: str) -> str | None:
        """The source position a published batch was recorded with."""
        row = self.backend.spark.sql(
            f"SELECT source_position FROM {self.backend.qualified(self.batches)} WHERE table_name = "
            f"{sql_literal(table)} AND batch_id = {sql_literal(batch_id)} AND status = 'published' LIMIT 1"
        ).first()
        return None if row is None else row[0]

    def mark_resolved(self: MarksHost, table: str, batch_id: str, by: str) -> int:
        """Mark the batch's unresolved quarantine rows as resolved by a replay batch; how many."""
        where = f"table_name = {sql_literal(table)} AND batch_id = {sql_literal(batch_id)}"
        where += " AND resolved_by IS NULL"
        name = self.backend.qualified(self.quarantine)
        row = self.backend.spark.sql(f"SELECT count(*) FROM {name} WHERE {where}").first()
        self._mark(self.quarantine, {"resolved_by": sql_literal(by)}, where)
        return int(row[0]) if row else 0

    def mark_reloaded(self: MarksHost, table: str, batch_ids: list[str], keep_attempt: str) -> None:
        """The earlier published attempts of batches a `reload` applied again from their current
        content (the reload's attempt, `keep_attempt`, is the published one now)."""
        if batch_ids:
            ids = ", ".join(sql_literal(b) for b in batch_ids)
            self._update(
                table,
                f"batch_id IN ({ids}) AND status IN ('published', 'unloaded') "
                f"AND attempt <> {sql_literal(keep_attempt)}",
                {"status": "'reloaded'"},
            )
            self._sql(  # the reload's attempt records the bad rows of the batch's current content
                f"DELETE FROM {self.backend.qualified(self.quarantine)} WHERE table_name = "
                f"{sql_literal(table)} AND batch_id IN ({ids}) AND attempt <> {sql_literal(keep_attempt)}"
            )

    def correct_counts(
        self: MarksHost, table: str, counts: dict[str, dict[str, int]], fingerprint: str, config: str
    ) -> None:
        """After a rebuild: the status counts of the published batches it applied again (a later
        batch may find other rows once one before it is unloaded or reloaded), and the
        configuration they were applied under; one MERGE."""
        if not counts:
            return
        source = literal_rows(
            self.backend.spark,
            [{"batch_id": b, "status_counts": c} for b, c in counts.items()],
            parse_schema("batch_id string, status_counts map<string, bigint>"),
        )
        view = f"lakefresh_counts_{abs(hash(table))}"
        source.createOrReplaceTempView(view)
        try:
            self._sql(
                f"MERGE INTO {self.backend.qualified(self.batches)} t USING {view} s "
                f"ON t.table_name = {sql_literal(table)} AND t.batch_id = s.batch_id "
                "AND t.status = 'published' WHEN MATCHED THEN UPDATE SET t.status_counts = "
                f"s.status_counts, t.config_fingerprint = {sql_literal(fingerprint)}, "
                f"t.config = {sql_literal(config)}"
            )
        finally:
            self.backend.spark.catalog.dropTempView(view)

    def mark_rolled_back(self: MarksHost, table: str, batch_ids: list[str]) -> None:
        """Published batches that are no longer in the target's lineage (it was rolled back):
        the table holds none of their rows."""
        if batch_ids:
            ids = ", ".join(sql_literal(b) for b in batch_ids)
            gone = {"status": "'rolled_back'", "effective_count": "0"}
            self._update(table, f"batch_id IN ({ids}) AND status = 'published'", gone)

    def mark_unloaded(self: MarksHost, table: str, batch_ids: list[str]) -> None:
        """Published batches the operator undid (`rollback`, `unload`): never taken again, and
        the table holds none of their rows."""
        if batch_ids:
            ids = ", ".join(sql_literal(b) for b in batch_ids)
            gone = {"status": "'unloaded'", "effective_count": "0"}
            self._update(table, f"batch_id IN ({ids}) AND status = 'published'", gone)

    def settle_rolled_back(self: MarksHost, table: str, batch_ids: list[str], decision: str) -> None:
        """The operator's decision on rolled-back batches. `forget`: they become `forgotten` and
        are never taken again. `reapply`: they stay `rolled_back` (their new attempt is logged
        beside) and their quarantine rows are withdrawn, since the new attempt writes its own."""
        if not batch_ids:
            return
        ids = ", ".join(sql_literal(b) for b in batch_ids)
        if decision == "forget":
            self._update(table, f"batch_id IN ({ids}) AND status = 'rolled_back'", {"status": "'forgotten'"})
        else:
            self._sql(
                f"DELETE FROM {self.backend.qualified(self.quarantine)} "
                f"WHERE table_name = {sql_literal(table)} AND batch_id IN ({ids})"
            )
