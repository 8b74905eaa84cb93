"""The pipeline file as typed models. No pyspark here: `lakefresh validate` runs without a JVM."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from lakefresh.config.base import IDENTIFIER, ConfigProblems, FieldPath, Model
from lakefresh.config.checks import (
    column_problems,
    feed_problems,
    overlap_problems,
    partition_column,
    reference_problems,
    sort_term,
    transform_problems,
)
from lakefresh.config.engine import CatalogConfig, RunConfig, SparkConfig, StorageConfig, TableFormat
from lakefresh.config.expressions import check_query
from lakefresh.config.freshness import FreshnessConfig
from lakefresh.config.graph import dependency_order, with_history_tables
from lakefresh.config.maintenance import MaintenanceConfig
from lakefresh.config.rules import RuleConfig
from lakefresh.config.sources import SourceConfig
from lakefresh.config.strategies import StrategyConfig
from lakefresh.config.write_mode import WriteMode
from lakefresh.secrets import register_config

# Rows of these sources that delete their key, for `key` and `scd2` targets without a rule.
SOURCE_DELETE_RULES: dict[str, dict[str, Any]] = {
    "table_changes": {"condition": "_lf_change_type = 'DELETE'"},
    "delta_changes": {"condition": "_lf_change_type = 'DELETE'"},
    "synapse_link": {"column": "IsDelete", "value": True},
}


class AuditConfig(Model):
    """Checks on the staged version before it is published."""

    row_count: bool = Field(
        True, description="The staged version's row count must equal the change set's prediction."
    )
    unique_keys: bool = Field(
        False, description="Scan the staged version for duplicate keys (costs a full scan)."
    )


class BacklogConfig(Model):
    """How pending batches of one table are grouped into one commit (run/backlog.py)."""

    max_batches: int = Field(
        50, ge=1, description="Most pending batches applied in one commit; 1 applies each alone."
    )
    max_rows: int = Field(
        1_000_000, ge=1, description="Groups shrink so that one reads about this many rows."
    )


class Defaults(Model):
    """Values every table inherits unless it sets its own."""

    namespace: str = Field("default", description="Namespace of targets named without one.")
    table_properties: dict[str, str] = Field(
        default_factory=dict, description="Iceberg table properties for new targets."
    )
    audit: AuditConfig = Field(default_factory=AuditConfig)  # type: ignore[arg-type]
    maintenance: MaintenanceConfig = Field(default_factory=MaintenanceConfig)  # type: ignore[arg-type]
    backlog: BacklogConfig = Field(default_factory=BacklogConfig)  # type: ignore[arg-type]
    freshness: FreshnessConfig | None = Field(
        None, description="How fresh every target must be (`lakefresh freshness`); none by default."
    )
    write_mode: WriteMode = Field(
        "auto",
        description="How MERGE/UPDATE/DELETE write targets: `auto` (merge-on-read unless a "
        "`table_changes` source of the pipeline reads the table), `copy-on-write`, `merge-on-read` "
        "(config/write_mode.py).",
    )


class TransformConfig(Model):
    """SQL run on every batch between read and stage (after quarantine of unreadable rows)."""

    sql: str = Field(
        description="A SELECT over the batch (view `batch`) and the `views`; its result is what "
        "the strategy merges. Keep `batch.*` (or its `_lf_` columns) to keep each row's file and "
        "record for duplicate resolution and quarantine reports."
    )
    views: dict[str, str] = Field(
        default_factory=dict,
        description="More views for the SQL: alias -> a table of this pipeline (refreshed first) "
        "or any `namespace.table` of the catalog.",
    )

    @field_validator("sql")
    @classmethod
    def _sql(cls, value: str) -> str:
        return check_query(value)

    @field_validator("views")
    @classmethod
    def _aliases(cls, value: dict[str, str]) -> dict[str, str]:
        for alias in value:
            if not IDENTIFIER.match(alias) or alias.lower() == "batch":
                raise ValueError(f"view alias must be an identifier other than `batch`, got {alias!r}")
        return value


class LookupConfig(Model):
    """A dimension lookup: fact columns -> a dimension's natural key -> its surrogate key."""

    dimension: str = Field(description="A table of this pipeline with a `surrogate_key`.")
    keys: dict[str, str] = Field(
        min_length=1,
        description="Fact column -> the dimension's natural key column, for each key column.",
    )
    surrogate_key: str | None = Field(
        None,
        description="The fact column that receives the surrogate key; default: its name in the dimension.",
    )
    at: str | None = Field(
        None,
        description="For an scd2 dimension: the fact column (time or sequence) that picks the "
        "version valid then. Default: the current version.",
    )
    skeletons: bool = Field(
        True,
        description="Natural keys the dimension lacks get a skeleton row (is_inferred = true) "
        "before the facts load. False: their surrogate key stays NULL.",
    )
    defaults: dict[str, Any] = Field(
        default_factory=dict, description="Values of other dimension columns in skeleton rows."
    )


class TableConfig(Model):
    """One target table: where its batches come from and how they merge into it."""

    name: str = Field(description="Target table: `name` or `namespace.name` inside the catalog.")
    source: Annotated[SourceConfig, Field(discriminator="kind")]
    strategy: Annotated[StrategyConfig, Field(discriminator="kind")]
    partition_by: list[str] = Field(
        default_factory=list,
        description="Iceberg partition transforms for a new target: col, days(ts), bucket(16, id)...",
    )
    sort_by: list[str] = Field(
        default_factory=list,
        description="The order the target's data files are written in (Iceberg's WRITE ORDERED "
        "BY): `col`, `col DESC`, `col ASC NULLS LAST`, a transform such as `days(ts)`. Keys that "
        "arrive in order (growing ids, recent dates) then sit in few files, and a MERGE rewrites "
        "only those (bench/README, bench_pruning.py). Set on a new target, and on an existing "
        "one before its next batch; compaction keeps the order.",
    )
    format: TableFormat | None = Field(
        None, description="This target's table format (iceberg or delta); default: the catalog's."
    )
    properties: dict[str, str] = Field(default_factory=dict, description="Table properties.")
    write_mode: WriteMode | None = Field(None, description="Overrides defaults.write_mode.")
    audit: AuditConfig | None = Field(None, description="Overrides defaults.audit.")
    depends_on: list[str] = Field(
        default_factory=list, description="Tables that must be refreshed before this one."
    )
    transform: TransformConfig | None = Field(None, description="SQL between read and stage.")
    lookups: list[LookupConfig] = Field(
        default_factory=list, description="Surrogate key lookups into dimensions of this pipeline."
    )
    maintenance: MaintenanceConfig | None = Field(None, description="Overrides defaults.maintenance.")
    backlog: BacklogConfig | None = Field(None, description="Overrides defaults.backlog.")
    freshness: FreshnessConfig | None = Field(None, description="Overrides defaults.freshness.")
    rules: list[RuleConfig] = Field(
        default_factory=list, description="Data-quality rules on each batch (config/rules.py)."
    )
    bad_rows: Literal["quarantine", "refuse"] = Field(
        "quarantine",
        description="A batch with rows that cannot be loaded: `quarantine` them and load the rest, "
        "or `refuse` the whole batch (the table stays unchanged until the batch is fixed, or "
        "skipped with `run --skip-batch`).",
    )

    max_bad_rows: int | float | None = Field(
        None,
        description="The most bad rows a batch may quarantine and still load: a count (5) or a "
        "fraction of its rows (0.01); a batch with more is refused (nothing written, it waits, "
        "the table stops at it). Default: a batch whose every row is bad is refused; 1.0 lets "
        "any batch load what it can.",
    )

    @field_validator("max_bad_rows", mode="before")
    @classmethod
    def _bad_row_limit(cls, value: object) -> object:
        wrong = isinstance(value, bool) or not isinstance(value, int | float | None)
        if not wrong and value is not None:
            wrong = value < 0 or (isinstance(value, float) and value > 1)  # type: ignore[operator]
        if wrong:
            raise ValueError(f"a count (0, 1, 2...) or a fraction from 0 to 1 (0.01), got {value!r}")
        return value

    def too_many_bad_rows(self, bad: int, rows: int) -> str | None:
        """Why a batch of `rows` rows, `bad` of them bad, is refused under `max_bad_rows`; None
        when it loads what it can."""
        limit = self.max_bad_rows
        if bad == 0:
            return None
        if limit is None:
            every = "every row of the batch is bad (max_bad_rows sets how many may be)"
            return every if bad >= rows else None
        allowed = limit * rows if isinstance(limit, float) else limit
        if bad <= allowed:
            return None
        return f"{bad} of its {rows} rows are bad, more than max_bad_rows: {limit} allows"

    @field_validator("rules")
    @classmethod
    def _distinct_rules(cls, value: list[RuleConfig]) -> list[RuleConfig]:
        names = [r.name for r in value]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"rule names must be distinct; used twice: {twice}")
        return value

    @field_validator("name")
    @classmethod
    def _table_name(cls, value: str) -> str:
        parts = value.split(".")
        if len(parts) > 2 or not all(IDENTIFIER.match(p) for p in parts):
            raise ValueError(
                f"must be `table` or `namespace.table` made of letters, digits and _, got {value!r}"
            )
        return value

    @field_validator("partition_by", "sort_by", mode="before")
    @classmethod
    def _rejoin(cls, value: Any) -> Any:
        """`[bucket(16, id)]` in YAML's flow style is two items, `bucket(16` and `id)`: join
        pieces until their parentheses close, as the file means them."""
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return value
        joined: list[str] = []
        for piece in value:
            if joined and joined[-1].count("(") > joined[-1].count(")"):
                joined[-1] += f", {piece}"
            else:
                joined.append(piece)
        return joined

    @field_validator("partition_by")
    @classmethod
    def _transforms(cls, value: list[str]) -> list[str]:
        problems: list[tuple[FieldPath, str]] = []
        for i, transform in enumerate(value):
            try:
                partition_column(transform)
            except ValueError as exc:
                problems.append(((i,), str(exc)))
        if problems:
            raise ConfigProblems(problems)
        return value

    @field_validator("sort_by")
    @classmethod
    def _sort_terms(cls, value: list[str]) -> list[str]:
        problems: list[tuple[FieldPath, str]] = []
        terms = []
        for i, term in enumerate(value):
            try:
                terms.append(sort_term(term))
            except ValueError as exc:
                problems.append(((i,), str(exc)))
        if problems:
            raise ConfigProblems(problems)
        return terms

    @model_validator(mode="before")
    @classmethod
    def _change_feed_deletes(cls, data: Any) -> Any:
        """A change feed's deletes delete in `key` and `scd2` targets, unless a rule is given:
        `table_changes` DELETE changes, Synapse Link's `IsDelete` rows."""
        if not isinstance(data, dict):
            return data
        source, strategy = data.get("source"), data.get("strategy")
        if not (isinstance(source, dict) and isinstance(strategy, dict)):
            return data
        rule = SOURCE_DELETE_RULES.get(str(source.get("kind")))
        if rule and strategy.get("kind") in ("key", "scd1", "scd2") and strategy.get("delete") is None:
            return {**data, "strategy": {**strategy, "delete": rule}}
        return data

    @model_validator(mode="after")
    def _rebuild_keeps_keys(self) -> TableConfig:
        if getattr(self.source, "backfill_behavior", None) == "overwrite":
            check_rebuild(self)
        return self

    @model_validator(mode="after")
    def _keys_and_columns(self) -> TableConfig:
        # with a transform, the strategy sees the SQL's columns (when its text tells them)
        problems = (
            transform_problems(self) + column_problems(self) + overlap_problems(self) + feed_problems(self)
        )
        if problems:
            raise ConfigProblems(problems)
        return self

    def upstream(self, names: list[str]) -> list[str]:
        """Tables of the pipeline (`names`) refreshed before this one: `depends_on`, looked-up
        dimensions, transform views and the tables its `relationships` rules read."""
        implied = [lk.dimension for lk in self.lookups]
        implied += [r.relationships.to for r in self.rules if r.relationships and r.relationships.to in names]
        if self.transform:
            implied += [t for t in self.transform.views.values() if t in names]
        return list(dict.fromkeys([*self.depends_on, *implied]))


def check_rebuild(table: TableConfig) -> None:
    """A table may be rebuilt from scratch (a backfill that overwrites) unless that would renumber
    its sequence surrogate keys, which facts refer to."""
    key = table.strategy.surrogate()
    if key is not None and key.generator == "sequence":
        raise ValueError(
            f"table {table.name!r}: backfill_behavior: overwrite rebuilds the table and would "
            "renumber its sequence surrogate keys; use backfill_behavior: merge, or generator: hash"
        )


class PipelineConfig(Model):
    """A whole pipeline file."""

    catalog: CatalogConfig = Field(default_factory=CatalogConfig)  # type: ignore[arg-type]
    spark: SparkConfig = Field(default_factory=SparkConfig)  # type: ignore[arg-type]
    storage: StorageConfig = Field(default_factory=StorageConfig)  # type: ignore[arg-type]
    defaults: Defaults = Field(default_factory=Defaults)  # type: ignore[arg-type]
    run: RunConfig = Field(default_factory=RunConfig)  # type: ignore[arg-type]
    tables: list[TableConfig] = Field(min_length=1, description="The target tables.")

    @model_validator(mode="before")
    @classmethod
    def _history_tables(cls, data: Any) -> Any:
        """A `key` table with `history: true` brings `<name>_history`: an scd2 table over the same
        source, as if it had been written out. (First, the settings' secrets are registered, so
        that no message from here on shows them.)"""
        register_config(data)
        if not isinstance(data, dict) or not isinstance(data.get("tables"), list):
            return data
        return {**data, "tables": [table for _, table, _ in with_history_tables(data["tables"])]}

    @model_validator(mode="after")
    def _unique_and_ordered(self) -> PipelineConfig:
        problems = reference_problems(self.tables)
        if problems:
            raise ConfigProblems(problems)
        try:
            dependency_order(self.tables)
        except ValueError as exc:
            raise ConfigProblems([(("tables",), str(exc))]) from None
        return self

    @model_validator(mode="after")
    def _delta_layouts(self) -> PipelineConfig:
        """Delta partitions by plain columns and has no write order."""
        problems: list[tuple[FieldPath, str]] = []
        if self.uses_delta() and self.uses_iceberg() and self.catalog.name == "spark_catalog":
            problems.append(
                (
                    ("catalog", "name"),
                    "Delta tables need spark_catalog for Delta's catalog: name yours otherwise",
                )
            )
        for n, table in enumerate(self.tables):
            namespace = self.qualified(table).split(".")[0]
            if self.catalog.control_format == "delta" and namespace == self.catalog.control_namespace:
                problems.append(
                    (("tables", n, "name"), f"{namespace} is the control tables' namespace: choose another")
                )
            if self.format_of(table) != "delta":
                continue
            for term in table.partition_by:
                if not IDENTIFIER.match(term):
                    problems.append(
                        (
                            ("tables", n, "partition_by"),
                            f"a Delta table partitions by plain columns, not {term!r}",
                        )
                    )
            if table.sort_by:
                problems.append(
                    (("tables", n, "sort_by"), "sort_by is Iceberg's write order; a Delta table has none")
                )
        if problems:
            raise ConfigProblems(problems)
        return self

    def table(self, name: str) -> TableConfig:
        return next(t for t in self.tables if t.name == name)

    def qualified(self, table: TableConfig) -> str:
        """The target's `namespace.table` name."""
        return table.name if "." in table.name else f"{self.defaults.namespace}.{table.name}"

    def format_of(self, table: TableConfig) -> TableFormat:
        """The table format of a target: its own, else the catalog's."""
        return table.format or self.catalog.format

    def delta_tables(self) -> set[str]:
        """The `namespace.table` names of the Delta targets."""
        return {self.qualified(t) for t in self.tables if self.format_of(t) == "delta"}

    def uses_delta(self) -> bool:
        """Whether any target or the control tables are Delta tables."""
        return self.catalog.control_format == "delta" or bool(self.delta_tables())

    def reads_delta_logs(self) -> bool:
        """Whether any target, the control tables, or a source are Delta tables (whose logs
        lakefresh reads: through the driver's JVM, or on a Spark Connect client's side)."""
        return self.uses_delta() or any(t.source.reads_delta_log for t in self.tables)

    def uses_iceberg(self) -> bool:
        """Whether any target, the control tables, or a catalog table a source reads (one that is
        not a Delta target of this pipeline) are Iceberg tables: if not, the session needs
        neither Iceberg's runtime nor its catalog."""
        delta = self.delta_tables()
        read = {getattr(t.source, "table", None) for t in self.tables} - {None}
        return self.catalog.control_format == "iceberg" or len(delta) < len(self.tables) or bool(read - delta)

    def audit_for(self, table: TableConfig) -> AuditConfig:
        return table.audit or self.defaults.audit

    def maintenance_for(self, table: TableConfig) -> MaintenanceConfig:
        return table.maintenance or self.defaults.maintenance

    def backlog_for(self, table: TableConfig) -> BacklogConfig:
        return table.backlog or self.defaults.backlog

    def freshness_for(self, table: TableConfig) -> FreshnessConfig | None:
        return table.freshness or self.defaults.freshness
