"""Strategy `custom`: a delete predicate over the target and the batch, then an append.

`delete_when` is a boolean SQL expression over a target row (alias `this`) and a batch row (alias
`input`), e.g. `this.region = input.region AND this.day >= input.day`. Every target row for which
*some* batch row makes it true is deleted; then the batch rows for which `append_filter` (over
`input` alone; optional) is true are appended. Both happen in one commit
(`TableBackend.delete_and_append`). An empty batch deletes nothing, unless the predicate is on the
target alone (`this.day = '2024-01-01'`, Delta's replaceWhere): that one always applies, and
`outside_rows` says what happens to batch rows it does not hold (appended, left out as W, or the
batch refused). `delete_matching: [a, b]` is `this.a = input.a AND this.b = input.b`, with NULLs
in those columns quarantined.

Both expressions must be row-pure; that is checked when the pipeline file is validated
(`lakefresh.config.expressions`). Status codes: N rows appended, F batch rows the filter left out,
W rows outside a target-only predicate left out, D target rows deleted (counted before the
commit; the audit checks the staged version against it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from lakefresh.columns import BATCH_ID_COLUMN, STATUS_COLUMN
from lakefresh.config.expressions import parse_row_pure
from lakefresh.config.strategies import CustomStrategyConfig
from lakefresh.errors import BatchRefused, SchemaError
from lakefresh.lakehouse.sql import quote
from lakefresh.strategies.base import ChangeSet, StageContext, count_by, data_columns, require_columns
from lakefresh.strategies.materialize import materialize

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


class CustomStrategy:
    kind = "custom"
    config_type = CustomStrategyConfig
    status_codes: ClassVar[dict[str, str]] = {
        "N": "appended",
        "F": "left out by append_filter",
        "D": "target rows deleted",
        "W": "outside the target-only delete_when: left out (outside_rows: drop)",
    }
    range_type = None

    def __init__(self, config: CustomStrategyConfig) -> None:
        self.config = config
        self.delete_when = config.delete_when or " AND ".join(
            f"this.{quote(c)} = input.{quote(c)}" for c in config.delete_matching
        )
        self.predicate = parse_row_pure(self.delete_when, ("this", "input"), "delete_when")

    def unique_keys(self) -> list[str]:
        return []

    def row_problems(self, df: DataFrame) -> list[tuple[Column, str]]:
        from pyspark.sql import functions as F

        return [
            (F.col(quote(c)).isNull(), f"delete_matching column {c} is NULL")
            for c in self.config.delete_matching
            if c in df.columns
        ]

    def stage(self, ctx: StageContext, batch: DataFrame) -> ChangeSet:
        """The batch's rows with their status (`_statused`), refused when a target-only
        predicate leaves rows out and `outside_rows: refuse` (`_refuse_outside`), the batch
        values the predicate matches on (`_matches`), and the target rows it deletes, counted
        by the batch that wrote them (`_deleted_owners`)."""
        require_columns(batch, self.config.required_columns(), "column(s) named by the custom strategy")
        inputs = self.predicate.columns.get("input", [])
        rows = self._statused(ctx, batch, inputs)
        counts = count_by(rows, STATUS_COLUMN)
        total = sum(counts.values())
        self._refuse_outside(ctx, counts)
        matches = self._matches(rows, inputs)
        owners: dict[str, int] = {}
        if ctx.target_exists and (total or not inputs):  # a target-only predicate: even when empty
            owners = self._deleted_owners(ctx, matches, inputs)
        deleted = sum(owners.values())
        appended = counts.get("N", 0)
        outside = {"W": counts["W"]} if counts.get("W") else {}
        return ChangeSet(
            rows=rows,
            counts={"N": appended, "F": counts.get("F", 0), "D": deleted, **outside},
            record_count=total,
            expected_delta=appended - deleted,
            written=appended,
            superseded=owners,
            delete_when=self.delete_when,
            matches=matches if inputs else None,
        )

    def _statused(self, ctx: StageContext, batch: DataFrame, inputs: list[str]) -> DataFrame:
        """The batch's rows with their batch id and status (N, F by `append_filter`, W outside a
        target-only predicate unless `outside_rows: keep`), materialized."""
        from pyspark.sql import functions as F

        cfg = self.config
        keep = F.expr(cfg.append_filter) if cfg.append_filter else F.lit(True)
        status = F.when(F.coalesce(keep, F.lit(False)), F.lit("N")).otherwise(F.lit("F"))
        if not inputs and cfg.outside_rows != "keep":  # judged by the target-only predicate
            inside = F.coalesce(F.expr(self.delete_when), F.lit(False))
            batch = batch.alias("this").withColumn("_lf_inside", inside)
            status = F.when(~F.col("_lf_inside"), F.lit("W")).otherwise(status)
        return materialize(
            batch.alias("input").select(
                *[F.col(quote(c)) for c in data_columns(batch)],
                F.lit(ctx.batch_id).alias(BATCH_ID_COLUMN),
                status.alias(STATUS_COLUMN),
            )
        )

    def _refuse_outside(self, ctx: StageContext, counts: dict[str, int]) -> None:
        """With `outside_rows: refuse`, a batch with rows outside the target-only predicate stops
        before anything is written."""
        if counts.get("W") and self.config.outside_rows == "refuse":
            raise BatchRefused(
                f"{counts['W']} row(s) of batch {ctx.batch_id} do not satisfy delete_when "
                f"({self.delete_when}) and {ctx.table} refuses them (outside_rows: refuse): nothing "
                f"was written. Fix the batch, or skip it for good with --skip-batch {ctx.batch_id}"
            )

    def _matches(self, rows: DataFrame, inputs: list[str]) -> DataFrame:
        """The distinct values of the batch columns `delete_when` names, materialized; for a
        target-only predicate, one row or none (whether the batch has rows)."""
        from pyspark.sql import functions as F

        matches = (
            rows.select(*[F.col(quote(c)) for c in inputs]).distinct()
            if inputs
            else rows.select(F.lit(1).alias("_lf_one")).limit(1)
        )
        return materialize(matches)

    def _deleted_owners(self, ctx: StageContext, matches: DataFrame, inputs: list[str]) -> dict[str, int]:
        """The target rows `delete_when` deletes, counted by the batch that wrote them; a target
        column the predicate names and the target lacks stops the batch."""
        from pyspark.sql import functions as F

        target = ctx.target()
        missing = [c for c in self.predicate.columns.get("this", []) if c not in target.columns]
        if missing:
            raise SchemaError(
                f"delete_when names target column(s) {missing} that {ctx.table} does not have; "
                f"its columns: {target.columns}"
            )
        doomed = (
            target.alias("this").join(
                F.broadcast(matches).alias("input"), F.expr(self.delete_when), "left_semi"
            )
            if inputs
            else target.alias("this").filter(F.expr(self.delete_when))
        )
        return count_by(doomed, BATCH_ID_COLUMN)

    def write(self, ctx: StageContext, change: ChangeSet) -> None:
        from pyspark.sql import functions as F

        inserts = change.rows.filter(F.col(STATUS_COLUMN) == "N").drop(STATUS_COLUMN)
        ctx.backend.delete_and_append(
            ctx.table,
            inserts,
            change.delete_when,
            change.matches,
            change.counts.get("D", 0),
            equi_join=self.predicate.equi_join,
        )
