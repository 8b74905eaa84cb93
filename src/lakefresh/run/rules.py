"""Data-quality rules at run time (their configuration: config/rules.py).

Row rules are checked in the read step, on the batch's rows after `transform`, in one aggregate:
each rule's violations are counted among the rows that are loaded; `drop` rules send their
violating rows to quarantine (reason `rule NAME: violates COND`), a violated `fail` rule ends the
batch before anything is written. Batch rules are checked in the audit step, on the staged
commit, before it is published. Every rule's count of violations (for a batch rule: 1 when it did
not hold) goes to the batch's log row (`rule_results`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakefresh.columns import FILE_COLUMN, LINE_COLUMN, REASON_COLUMN
from lakefresh.errors import AuditError, ConfigError

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import Column, DataFrame

    from lakefresh.config.models import TableConfig
    from lakefresh.lakehouse.backend import TableBackend


def apply_row_rules(table: TableConfig, rows: DataFrame) -> tuple[DataFrame, dict[str, int]]:
    """`rows` (each with its quarantine reason) with the drop rules' violations quarantined, and
    each row rule's violations; AuditError when a `fail` rule is violated."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    rules = [r for r in table.rules if r.row is not None]
    if not rules:
        return rows, {}
    loaded = F.col(REASON_COLUMN).isNull()
    broken: dict[str, Column] = {r.name: ~F.coalesce(F.expr(r.row or ""), F.lit(False)) for r in rules}
    try:
        totals = rows.agg(
            *[F.sum(F.when(loaded & broken[r.name], 1).otherwise(0)).alias(r.name) for r in rules]
        ).first()
    except AnalysisException as exc:
        first = str(exc).strip().splitlines()[0]
        raise ConfigError(f"table {table.name!r}: a row rule cannot be evaluated: {first}") from exc
    counts = {r.name: int((totals[r.name] if totals else 0) or 0) for r in rules}
    for rule in rules:
        if rule.action == "fail" and counts[rule.name]:
            where = rows.filter(loaded & broken[rule.name]).orderBy(FILE_COLUMN, LINE_COLUMN).limit(3)
            shown = ", ".join(
                f"{str(r[0]).rsplit('/', 1)[-1]} line {r[1]}"
                for r in where.select(FILE_COLUMN, LINE_COLUMN).collect()
            )
            raise AuditError(
                f"rule {rule.name!r} failed: {counts[rule.name]} row(s) violate `{rule.row}` "
                f"({shown}); nothing was published"
            )
    drops = [r for r in rules if r.action == "drop"]
    if drops:
        reasons = F.concat_ws(
            "; ", *[F.when(broken[r.name], F.lit(f"rule {r.name}: violates {r.row}")) for r in drops]
        )
        rows = rows.withColumn(
            REASON_COLUMN, F.coalesce(F.col(REASON_COLUMN), F.when(reasons != "", reasons))
        )
    return rows, counts


def check_batch_rules(
    backend: TableBackend,
    table: TableConfig,
    batch: DataFrame,
    target: str,
    staged_version: int,
    resolve: Callable[[str], str],
) -> dict[str, int]:
    """Each batch rule's result over the views `batch` and `staged` (1: it did not hold);
    AuditError when a `fail` rule does not hold. `resolve` names another table as Spark reads
    it (a `relationships` rule's)."""
    from pyspark.errors import AnalysisException

    rules = [r for r in table.rules if r.checks_batch]
    if not rules:
        return {}
    spark = backend.spark
    batch.createOrReplaceTempView("batch")
    backend.read(target, staged_version).createOrReplaceTempView("staged")
    out: dict[str, int] = {}
    try:
        for rule in rules:
            query = rule.query(resolve)
            out[rule.name] = 0 if _holds(spark, table, rule.name, query, AnalysisException) else 1
            if out[rule.name] and rule.action == "fail":
                raise AuditError(
                    f"rule {rule.name!r} failed: `{query}` is not true for the staged batch; "
                    "nothing was published"
                )
    finally:
        spark.catalog.dropTempView("batch")
        spark.catalog.dropTempView("staged")
    return out


def _holds(spark: object, table: TableConfig, name: str, query: str, analysis: type[Exception]) -> bool:
    try:
        row = spark.sql(query).first()  # type: ignore[attr-defined]
    except analysis as exc:
        first = str(exc).strip().splitlines()[0]
        raise ConfigError(f"table {table.name!r}: rule {name!r} cannot be evaluated: {first}") from exc
    return bool(row is not None and row[0] is True)
