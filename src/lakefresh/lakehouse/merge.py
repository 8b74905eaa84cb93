"""Row-level writes as Spark SQL MERGE statements, which any table format on Spark runs.

A backend decides what it adds around them (a broadcast limit, when to append instead); the
statements themselves, and how their sources are laid out, are the same for every format.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from lakefresh.lakehouse.checkpoints import held
from lakefresh.lakehouse.sql import quote

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from lakefresh.lakehouse.backend import MergeClauses

BROADCAST_ROWS_SETTING = "spark.lakefresh.merge.broadcastMaxRows"
DEFAULT_BROADCAST_ROWS = 1_000_000


class SqlWritesHost(Protocol):
    """What :class:`SqlWrites` needs of the backend it is a base class of: the session, a
    table's name in SQL and its append; and `broadcast_rows`, which `merge` asks."""

    spark: SparkSession

    def qualified(self, table: str) -> str:
        """The table's name in SQL."""
        ...

    def append(self, table: str, df: DataFrame) -> None:
        """The rows appended to the table."""
        ...

    def broadcast_rows(self) -> int:
        """Row sets up to this size are broadcast into joins with a target."""
        ...


class SqlWrites:
    """The row-level writes of a backend whose format runs Spark SQL's MERGE (Iceberg, Delta):
    a base class of each, its host (:class:`SqlWritesHost`)."""

    def broadcast_rows(self: SqlWritesHost) -> int:
        """Row sets up to this size are broadcast into joins with a target."""
        return int(self.spark.conf.get(BROADCAST_ROWS_SETTING, None) or DEFAULT_BROADCAST_ROWS)

    def merge(self: SqlWritesHost, table: str, source: DataFrame, clauses: MergeClauses) -> None:
        """MERGE a change set. A change set of at most `spark.lakefresh.merge.broadcastMaxRows`
        rows (default 1,000,000) is broadcast, so the target is scanned without a shuffle: a
        materialized change set has no size statistics, and Spark would otherwise sort-merge
        join it against the whole target."""
        if clauses.source_rows is not None and clauses.source_rows <= self.broadcast_rows():
            source = source.hint("broadcast")
        merge_change_set(self.spark, table, self.qualified(table), source, clauses)

    def update(self: SqlWritesHost, table: str, assignments: dict[str, str], where: str) -> None:
        """An UPDATE statement."""
        values = ", ".join(f"{quote(column)} = {value}" for column, value in assignments.items())
        self.spark.sql(f"UPDATE {self.qualified(table)} SET {values} WHERE {where}")

    def delete_and_append(
        self: SqlWritesHost,
        table: str,
        rows: DataFrame,
        delete_when: str | None,
        matches: DataFrame | None,
        deletes: int,
        equi_join: bool = False,
    ) -> None:
        """One MERGE does both (see :func:`delete_and_insert`); with no predicted deletes, rows
        are appended."""
        if not delete_when or deletes == 0:
            self.append(table, rows)
            return
        delete_and_insert(self.spark, table, self.qualified(table), rows, delete_when, matches, equi_join)


def merge_change_set(
    spark: SparkSession, table: str, target: str, source: DataFrame, clauses: MergeClauses
) -> None:
    """MERGE a change set into `table` (`target`: its name in SQL), through a temporary view of
    `source` (alias `s`; the target's alias is `t`)."""
    view = f"lakefresh_merge_source_{abs(hash((table, id(source))))}"
    source.createOrReplaceTempView(view)
    try:
        on = " AND ".join(f"t.{quote(k)} = s.{quote(k)}" for k in clauses.keys)
        if clauses.target_condition:
            on += f" AND {clauses.target_condition}"
        sql = f"MERGE INTO {target} t USING {view} s ON {on}"
        if clauses.delete_when:
            sql += f" WHEN MATCHED AND ({clauses.delete_when}) THEN DELETE"
        if clauses.update_columns:
            sets = ", ".join(f"t.{quote(c)} = s.{quote(c)}" for c in clauses.update_columns)
            cond = f" AND ({clauses.update_when})" if clauses.update_when else ""
            sql += f" WHEN MATCHED{cond} THEN UPDATE SET {sets}"
        cols = ", ".join(quote(c) for c in clauses.insert_columns)
        vals = ", ".join(f"s.{quote(c)}" for c in clauses.insert_columns)
        cond = f" AND ({clauses.insert_when})" if clauses.insert_when else ""
        sql += f" WHEN NOT MATCHED{cond} THEN INSERT ({cols}) VALUES ({vals})"
        spark.sql(sql)
    finally:
        spark.catalog.dropTempView(view)


def delete_and_insert(
    spark: SparkSession,
    table: str,
    target: str,
    rows: DataFrame,
    delete_when: str,
    matches: DataFrame | None,
    equi_join: bool,
) -> None:
    """In one MERGE into `table` (`target`: its name in SQL): delete the target rows (alias
    `this`) for which some row of `matches` (alias `input`; None: one row with no columns) makes
    `delete_when` true, and insert `rows`.

    The MERGE's source holds the match rows and the rows to insert; the rows to insert carry
    their values in separate columns and NULL in the match columns, so they can never match, and
    are inserted. Conditions on the target alone (a range) are pushed into the target scan, so
    only files that may hold such rows are read; of those, Spark's runtime group filter rewrites
    only the files holding a matched row.

    When `delete_when` has no equality between target and batch (`equi_join` False: a range,
    `true`, `this.day >= input.day`), the match rows are copied once per *salt* (0..n-1) and a
    target row is paired only with the copy whose salt equals a hash of the row, so the join
    still hashes instead of comparing every target row with every batch row. Spark 3.5 cannot
    plan its runtime group filter over such a join when the match rows carry columns ("Couldn't
    find _lf_salt"), so in that one case the filter is off and every file the static pushdown
    selects is rewritten.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if matches is None:
        matches = spark.range(1).select()
    salts = 0 if equi_join else max(1, min(64, int(spark.conf.get("spark.sql.shuffle.partitions") or 1)))
    on = f"({delete_when})"
    if salts:
        hashable = [
            quote(f.name)
            for f in spark.table(target).schema.fields
            if not isinstance(f.dataType, T.MapType | T.ArrayType | T.StructType)
        ]
        salt_of_target = (
            f"pmod(xxhash64({', '.join('this.' + c for c in hashable)}), {salts})" if hashable else "0"
        )
        on += f" AND {salt_of_target} = input._lf_salt"
        matches = matches.crossJoin(spark.range(salts).select(F.col("id").alias("_lf_salt")))
    else:  # the rows to insert (no salt) match nothing, whatever `delete_when` makes of NULLs
        on += " AND input._lf_salt IS NOT NULL"
        matches = matches.withColumn("_lf_salt", F.lit(0).cast("bigint"))
    payload = [f"_lf_ins_{i}" for i in range(len(rows.columns))]
    match_part = matches.select(
        *[F.col(quote(c)) for c in matches.columns],
        *[F.lit(None).cast(f.dataType).alias(p) for f, p in zip(rows.schema.fields, payload, strict=True)],
    )
    insert_part = rows.select(
        *[F.lit(None).cast(f.dataType).alias(f.name) for f in matches.schema.fields],
        *[F.col(quote(c)).alias(p) for c, p in zip(rows.columns, payload, strict=True)],
    )
    view = f"lakefresh_replace_source_{abs(hash((table, id(rows))))}"
    # materialized: a MERGE reads its source more than once
    held(match_part.unionByName(insert_part).localCheckpoint(eager=True)).createOrReplaceTempView(view)
    group_filter = "spark.sql.optimizer.runtime.rowLevelOperationGroupFilter.enabled"
    without_filter = bool(salts) and len(matches.columns) > 1
    try:
        if without_filter:
            spark.conf.set(group_filter, "false")
        columns = ", ".join(quote(c) for c in rows.columns)
        values = ", ".join(f"input.{p}" for p in payload)
        spark.sql(
            f"MERGE INTO {target} AS this USING {view} AS input ON {on} "
            "WHEN MATCHED THEN DELETE "
            f"WHEN NOT MATCHED AND input._lf_salt IS NULL THEN INSERT ({columns}) VALUES ({values})"
        )
    finally:
        if without_filter:
            spark.conf.unset(group_filter)
        spark.catalog.dropTempView(view)
