"""What adopting a table another tool wrote takes, per strategy: the layout its rows must have
under the configured names, the checks that say lakefresh can continue it exactly, and its rows
with lakefresh's system columns filled as a batch of lakefresh's would have filled them.

| strategy                               | the table                                                  |
| -------------------------------------- | ---------------------------------------------------------- |
| `append`, `ledger`, `key`              | plain rows; `ledger` and `key`: one row per key, no NULL key |
| `snapshot`, `output: change_log`       | an Open Data Fabric log: `offset` 0, 1, ... without gaps,  |
|                                        | valid `op` codes, `system_time` and `event_time` columns    |
| `scd2`                                 | versions `[valid_from, valid_to)` per key, non-overlapping, |
|                                        | at most one open (`valid_to` NULL); a dbt snapshot maps by  |
|                                        | its column names (below)                                   |

A dbt snapshot is adopted with `valid_from_column: dbt_valid_from`, `valid_to_column:
dbt_valid_to` and `valid_from_copy: dbt_updated_at` (dbt writes the version's start there too),
dbt's version id `dbt_scd_id` is a hash lakefresh does not make: the adopted table no longer stores
it (on Delta, whose columns cannot be dropped in place, it stays, NULL). The `is_current`
column, which dbt does not write, is added (`valid_to` NULL).

System columns, as a normal write fills them: `_lf_batch_id` is the adoption's id on every row;
`key`'s `_lf_hash` is the hash of its compared columns and `_lf_updated_at` the `date_column`'s
value (without one, NULL: the rows count as older than every batch lakefresh takes after them);
`scd2`'s `_lf_hash` is the hash of the tracked columns and `_lf_events` holds the event each
version starts with (and the delete that closed it, when no version of its key starts there).
A change log's events need nothing more (a snapshot's state is derived from the log).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakefresh.columns import (
    BATCH_ID_COLUMN,
    FILE_COLUMN,
    HASH_COLUMN,
    RECORD_COLUMN,
    SYSTEM_PREFIX,
    UPDATED_AT_COLUMN,
)
from lakefresh.errors import ConfigError
from lakefresh.lakehouse.sql import quote
from lakefresh.strategies.base import hashdiff
from lakefresh.strategies.changelog import NUMERIC_OPS, OPS
from lakefresh.strategies.scd2.events import SEEN, encode

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

    from lakefresh.config.strategies import StrategyConfig

ADOPTABLE = ("append", "ledger", "key", "snapshot", "scd2")
EXAMPLES = 3  # rows shown per problem
DBT_VERSION_ID = "dbt_scd_id"  # dbt snapshot's md5 of key and time: not stored by lakefresh


@dataclass(frozen=True)
class Problem:
    """One reason a table cannot be continued: what is wrong, and the rows that show it."""

    what: str
    rows: DataFrame | None = None


def adoption(config: StrategyConfig) -> Adoption:
    """How a table of this strategy is adopted; ConfigError for what cannot be adopted."""
    kind = "append" if config.kind == "none" else config.kind
    if kind not in ADOPTABLE:
        raise ConfigError(f"a {kind} table cannot be adopted: lakefresh adopts {', '.join(ADOPTABLE)} tables")
    if config.surrogate() is not None:
        raise ConfigError(
            "a table with surrogate_key cannot be adopted: its keys would not follow lakefresh's"
        )
    if config.writes_change_log():
        if kind == "key":
            raise ConfigError("a key table with output: change_log cannot be adopted (its events' hashes)")
        return ChangeLogAdoption(config)
    return {"append": Adoption, "ledger": Adoption, "key": KeyAdoption, "scd2": Scd2Adoption}[kind](config)


class Adoption:
    """A plain table (`append`, `ledger`): its keys, when it has some, unique and not NULL."""

    def __init__(self, config: Any) -> None:
        self.config = config

    def keys(self) -> list[str]:
        return list(self.config.key_columns())

    def required(self) -> list[str]:
        """The columns the table must have."""
        return self.keys()

    def dropped(self, schema: StructType) -> list[str]:
        """The table's columns the strategy does not store (`drop_columns`)."""
        gone = set(getattr(self.config, "drop_columns", []))
        return [f.name for f in schema.fields if f.name in gone]

    def layout(self, schema: StructType) -> list[str]:
        """What is missing from the table's columns, or of the wrong type."""
        have = set(schema.fieldNames())
        missing = [c for c in self.required() if c not in have]
        out = [f"missing column(s) {missing} (its columns: {sorted(have)})"] if missing else []
        own = [c for c in have if c.startswith(SYSTEM_PREFIX)]
        if own:
            out.append(f"it already has lakefresh's columns {sorted(own)}: it is lakefresh's table")
        return out + self.types(schema) if not missing else out

    def types(self, schema: StructType) -> list[str]:
        return []

    def problems(self, table: DataFrame) -> list[Problem]:
        """What in the rows stops lakefresh from continuing the table."""
        return unique_keys(table, self.keys())

    def rows(self, table: DataFrame, batch_id: str) -> DataFrame:
        """The table's rows with lakefresh's system columns, as its batch `batch_id` writes them."""
        from pyspark.sql import functions as F

        return table.withColumn(BATCH_ID_COLUMN, F.lit(batch_id))


class KeyAdoption(Adoption):
    """`key`: one row per key; `_lf_hash` and `_lf_updated_at` as `KeyStrategy.prepared` makes them."""

    def required(self) -> list[str]:
        cfg = self.config
        return [*self.keys(), *([cfg.date_column] if cfg.date_column else [])]

    def types(self, schema: StructType) -> list[str]:
        soft = self.config.soft_delete_column
        return boolean(schema, soft) if soft and soft in schema.fieldNames() else []

    def rows(self, table: DataFrame, batch_id: str) -> DataFrame:
        from pyspark.sql import functions as F

        from lakefresh.strategies.key.strategy import KeyStrategy

        soft = self.config.soft_delete_column
        batch = table.withColumn(FILE_COLUMN, F.lit(None).cast("string"))
        batch = batch.withColumn(RECORD_COLUMN, F.lit(None).cast("long"))
        columns, prepared = KeyStrategy(self.config).prepared(
            batch, F.lit(None).cast("timestamp"), F.lit(batch_id)
        )
        out = prepared.select(
            *[F.col(quote(c)) for c in columns], HASH_COLUMN, UPDATED_AT_COLUMN, BATCH_ID_COLUMN
        )
        if not soft:
            return out
        flags = table.select(*[quote(k) for k in self.keys()], quote(soft)) if soft in table.columns else None
        if flags is None:  # a table that never soft-deleted: every row live
            return out.withColumn(soft, F.lit(False))
        return out.join(flags, on=self.keys(), how="left")


class ChangeLogAdoption(Adoption):
    """An Open Data Fabric log (`snapshot`, or `append`/`ledger` with `output: change_log`)."""

    def required(self) -> list[str]:
        return [*self.config.log_columns(), *self.keys()]

    def types(self, schema: StructType) -> list[str]:
        from pyspark.sql import types as T

        cfg = self.config
        out = []
        if not isinstance(schema[cfg.offset_column].dataType, T.IntegralType):
            out.append(wrong(schema, cfg.offset_column, "an integer"))
        numeric = cfg.op_codes == "numeric"
        op_type = schema[cfg.op_column].dataType
        if not isinstance(op_type, T.IntegralType if numeric else T.StringType):
            out.append(
                wrong(
                    schema, cfg.op_column, f"{'an integer' if numeric else 'text'} (op_codes: {cfg.op_codes})"
                )
            )
        if not isinstance(schema[cfg.system_time_column].dataType, T.TimestampType):
            out.append(wrong(schema, cfg.system_time_column, "a timestamp"))
        return out

    def problems(self, table: DataFrame) -> list[Problem]:
        from pyspark.sql import functions as F

        cfg = self.config
        offset, op = F.col(quote(cfg.offset_column)), F.col(quote(cfg.op_column))
        codes = list(NUMERIC_OPS.values()) if cfg.op_codes == "numeric" else list(OPS)
        out = [
            Problem(f"NULL {cfg.offset_column}", table.filter(offset.isNull())),
            Problem(
                f"NULL {cfg.system_time_column}", table.filter(F.col(quote(cfg.system_time_column)).isNull())
            ),
            Problem(f"{cfg.op_column} not one of {codes}", table.filter(op.isNull() | ~op.isin(*codes))),
            *unique_keys(table, [cfg.offset_column], what=cfg.offset_column, nulls=False),
        ]
        seen = table.select(offset.alias("_lf_o")).filter(F.col("_lf_o").isNotNull()).distinct()
        after_gap = table.join(seen, offset - 1 == F.col("_lf_o"), "left_anti").filter(offset != 0)
        out.append(Problem(f"{cfg.offset_column} not continuous: the row before these is missing", after_gap))
        out.append(Problem(f"{cfg.offset_column} below 0", table.filter(offset < 0)))
        if table.filter(offset == 0).isEmpty() and not table.isEmpty():
            out.append(Problem(f"no {cfg.offset_column} 0: a log starts at 0"))
        return out


class Scd2Adoption(Adoption):
    """`scd2`: versions `[valid_from, valid_to)` per key, non-overlapping, at most one open."""

    def required(self) -> list[str]:
        cfg = self.config
        seq = [cfg.sequence_by] if cfg.sequence_by else []
        return [*self.keys(), *seq, cfg.valid_from_column, cfg.valid_to_column]

    def types(self, schema: StructType) -> list[str]:
        cfg = self.config
        start, end = schema[cfg.valid_from_column].dataType, schema[cfg.valid_to_column].dataType
        out = []
        if start != end:
            out.append(
                f"{cfg.valid_from_column} is {start.simpleString()}, {cfg.valid_to_column} "
                f"{end.simpleString()}: not one type"
            )
        seq = schema[cfg.sequence_by].dataType if cfg.sequence_by else None
        from pyspark.sql import types as T

        expected = seq or T.TimestampType()
        if start != expected:
            what = f"sequence_by {cfg.sequence_by!r}'s type" if seq else "a timestamp (the batch time)"
            out.append(wrong(schema, cfg.valid_from_column, f"{expected.simpleString()}, {what}"))
        for column in (cfg.is_current_column, cfg.soft_delete_column):
            if column and column in schema.fieldNames():
                out += boolean(schema, column)
        copy = cfg.valid_from_copy
        if copy and copy in schema.fieldNames() and schema[copy].dataType != start:
            out.append(wrong(schema, copy, f"{start.simpleString()}, as {cfg.valid_from_column}"))
        return out

    def dropped(self, schema: StructType) -> list[str]:
        named = {c for _, c in self.config.column_fields()}
        dbt = (
            [DBT_VERSION_ID] if DBT_VERSION_ID in schema.fieldNames() and DBT_VERSION_ID not in named else []
        )
        return [*super().dropped(schema), *dbt]

    def check_config(self) -> None:
        cfg = self.config
        if cfg.row_hash or cfg.deletes != "close" or cfg.first_valid_from != "sequence":
            raise ConfigError(
                "an scd2 table is adopted with keys, deletes: close and first_valid_from: sequence"
            )

    def problems(self, table: DataFrame) -> list[Problem]:
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        self.check_config()
        cfg, keys = self.config, self.keys()
        start, end = F.col(quote(cfg.valid_from_column)), F.col(quote(cfg.valid_to_column))
        by_key = Window.partitionBy(*[quote(k) for k in keys]).orderBy(start)
        ordered = table.withColumn("_lf_prev_end", F.lag(end).over(by_key)).withColumn(
            "_lf_prev_open", F.lag(end.isNull()).over(by_key)
        )
        opened = table.groupBy(*[quote(k) for k in keys]).agg(
            F.count(F.when(end.isNull(), 1)).alias("_lf_open")
        )
        out = [
            *unique_keys(table, [*keys, cfg.valid_from_column], what=f"key and {cfg.valid_from_column}"),
            Problem(f"NULL {cfg.valid_from_column}", table.filter(start.isNull())),
            Problem(f"{cfg.valid_to_column} not after {cfg.valid_from_column}", table.filter(end <= start)),
            Problem(
                "more than one open version of a key",
                table.join(opened.filter(F.col("_lf_open") > 1), on=keys, how="left_semi"),
            ),
            Problem(
                "versions overlapping the one before them",
                ordered.filter(F.col("_lf_prev_open") | (F.col("_lf_prev_end") > start)).drop(
                    "_lf_prev_open"
                ),
            ),
        ]
        current = cfg.is_current_column
        if current in table.columns:
            wrong_flag = F.col(quote(current)).isNull() | (F.col(quote(current)) != end.isNull())
            out.append(
                Problem(f"{current} not equal to {cfg.valid_to_column} IS NULL", table.filter(wrong_flag))
            )
        copy = cfg.valid_from_copy
        if copy and copy in table.columns:
            out.append(
                Problem(
                    f"{copy} not equal to {cfg.valid_from_column}",
                    table.filter(~F.col(quote(copy)).eqNullSafe(start)),
                )
            )
        return out

    def rows(self, table: DataFrame, batch_id: str) -> DataFrame:
        """Each version with its flag, hash and events: `+valid_from`, and `-valid_to` when its
        key has no version starting there (a delete closed it)."""
        from pyspark.sql import functions as F

        from lakefresh.strategies.scd2.strategy import Scd2Strategy

        cfg, keys = self.config, self.keys()
        start, end = F.col(quote(cfg.valid_from_column)), F.col(quote(cfg.valid_to_column))
        system = set(Scd2Strategy(cfg).system_columns())
        data = [c for c in table.columns if c not in system and c not in self.dropped(table.schema)]
        tracked = Scd2Strategy(cfg).tracked(data)
        starts = table.select(
            *[F.col(quote(k)).alias(f"_lf_k{i}") for i, k in enumerate(keys)], start.alias("_lf_next")
        )
        follows = end == F.col("_lf_next")
        for i, k in enumerate(keys):
            follows = follows & (F.col(quote(k)) == F.col(f"_lf_k{i}"))
        closed = table.join(starts, follows, "left")  # (key, valid_from) is unique: one match at most
        deleted = end.isNotNull() & F.col("_lf_next").isNull()
        event = F.struct(start.alias("seq"), F.lit(False).alias("del"))
        gone = F.struct(end.alias("seq"), F.lit(True).alias("del"))
        events = F.when(deleted, F.array(event, gone)).otherwise(F.array(event))
        out = closed.select(
            *[F.col(quote(c)) for c in data],
            start,
            end,
            end.isNull().alias(cfg.is_current_column),
            *(
                [
                    (
                        deleted
                        if cfg.soft_delete_column not in table.columns
                        else F.col(quote(cfg.soft_delete_column))
                    ).alias(cfg.soft_delete_column)
                ]
                if cfg.soft_delete_column
                else []
            ),
            *([start.alias(cfg.valid_from_copy)] if cfg.valid_from_copy else []),
            hashdiff(tracked, table.schema).alias(HASH_COLUMN),
            encode(events, table.schema[cfg.valid_from_column].dataType).alias(SEEN),
            F.lit(batch_id).alias(BATCH_ID_COLUMN),
        )
        return out


def unique_keys(table: DataFrame, keys: list[str], what: str = "key", nulls: bool = True) -> list[Problem]:
    """A key held by more than one row, and (`nulls`) a NULL key column."""
    from pyspark.sql import functions as F

    if not keys:
        return []
    counted = table.groupBy(*[quote(k) for k in keys]).agg(F.count(F.lit(1)).alias("_lf_n"))
    twice = table.join(counted.filter(F.col("_lf_n") > 1), on=keys, how="left_semi")
    out = [Problem(f"{what} held by more than one row", twice)]
    if nulls:
        null = None
        for k in keys:
            null = F.col(quote(k)).isNull() if null is None else null | F.col(quote(k)).isNull()
        assert null is not None
        out.append(Problem(f"NULL {what} column", table.filter(null)))
    return out


def boolean(schema: StructType, column: str) -> list[str]:
    from pyspark.sql import types as T

    return [] if isinstance(schema[column].dataType, T.BooleanType) else [wrong(schema, column, "a boolean")]


def wrong(schema: StructType, column: str, expected: str) -> str:
    return f"column {column!r} is {schema[column].dataType.simpleString()}, not {expected}"


def shown(problem: Problem, limit: int = EXAMPLES) -> str | None:
    """The problem with its count and example rows, or None when no row has it."""
    if problem.rows is None:
        return problem.what
    found = problem.rows.limit(limit + 1).collect()
    if not found:
        return None
    examples = "; ".join(_row(r.asDict()) for r in found[:limit])
    more = problem.rows.count() if len(found) > limit else len(found)
    return f"{problem.what}: {more} row(s), e.g. {examples}"


def _row(values: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {v!s}" for k, v in values.items() if not k.startswith(SYSTEM_PREFIX)) + "}"
