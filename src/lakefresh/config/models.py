"""The pipeline file as typed models. No pyspark here: `lakefresh validate` runs without a JVM."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from lakefresh.config.base import IDENTIFIER, Model
from lakefresh.config.sources import SourceConfig
from lakefresh.config.strategies import StrategyConfig


class CatalogConfig(Model):
    """The Iceberg catalog that holds targets and the `lakefresh` control namespace."""

    name: str = Field("lakefresh_catalog", description="Spark catalog name, as used in SQL.")
    type: str = Field(
        "hadoop",
        description="Iceberg catalog type: hadoop (a warehouse folder), hive, rest, jdbc, glue, "
        "nessie... Passed to Spark as spark.sql.catalog.<name>.type.",
    )
    warehouse: str | None = Field(
        "./warehouse",
        description="Warehouse location; relative paths are taken from the pipeline file's folder.",
    )
    properties: dict[str, str] = Field(
        default_factory=dict,
        description="Further catalog properties (uri, credentials, io-impl...), "
        "set as spark.sql.catalog.<name>.<key>.",
    )
    control_namespace: str = Field("lakefresh", description="Namespace of the control tables.")

    @field_validator("name", "control_namespace")
    @classmethod
    def _identifier(cls, value: str) -> str:
        if not IDENTIFIER.match(value):
            raise ValueError(f"must be a plain identifier (letters, digits, _), got {value!r}")
        return value


class SparkConfig(Model):
    """How the Spark session is made. Everything here can also come from the environment."""

    master: str = Field("local[*]", description="Spark master URL: local[*], spark://..., yarn, k8s://...")
    app_name: str = Field("lakefresh", description="Spark application name.")
    jars: Literal["bundled", "none"] | list[str] = Field(
        "bundled",
        description="bundled: the Iceberg runtime from the snowpark-connect-deps-iceberg wheel plus "
        "a relocated Jackson built at setup; none: the platform already provides Iceberg; "
        "or a list of jar paths/URLs of your own.",
    )
    packages: list[str] = Field(
        default_factory=list,
        description="Maven coordinates for spark.jars.packages, for users with Maven access.",
    )
    conf: dict[str, str] = Field(default_factory=dict, description="Any further Spark settings.")


class AuditConfig(Model):
    """Checks on the staged snapshot before it is published."""

    row_count: bool = Field(
        True, description="The staged snapshot's row count must equal the change set's prediction."
    )
    unique_keys: bool = Field(
        False, description="Scan the staged snapshot for duplicate keys (costs a full scan)."
    )


class Defaults(Model):
    """Values every table inherits unless it sets its own."""

    namespace: str = Field("default", description="Namespace of targets named without one.")
    table_properties: dict[str, str] = Field(
        default_factory=dict, description="Iceberg table properties for new targets."
    )
    audit: AuditConfig = Field(default_factory=AuditConfig)  # type: ignore[arg-type]


class TableConfig(Model):
    """One target table: where its batches come from and how they merge into it."""

    name: str = Field(description="Target table: `name` or `namespace.name` inside the catalog.")
    source: Annotated[SourceConfig, Field(discriminator="kind")]
    strategy: Annotated[StrategyConfig, Field(discriminator="kind")]
    partition_by: list[str] = Field(
        default_factory=list,
        description="Iceberg partition transforms for a new target: col, days(ts), bucket(16, id)...",
    )
    properties: dict[str, str] = Field(default_factory=dict, description="Table properties.")
    audit: AuditConfig | None = Field(None, description="Overrides defaults.audit.")
    depends_on: list[str] = Field(
        default_factory=list, description="Tables that must be refreshed before this one."
    )

    @field_validator("name")
    @classmethod
    def _table_name(cls, value: str) -> str:
        parts = value.split(".")
        if len(parts) > 2 or not all(IDENTIFIER.match(p) for p in parts):
            raise ValueError(
                f"must be `table` or `namespace.table` made of letters, digits and _, got {value!r}"
            )
        return value

    @model_validator(mode="after")
    def _keys_and_columns(self) -> TableConfig:
        self.strategy.check_against(self)
        return self


class PipelineConfig(Model):
    """A whole pipeline file."""

    catalog: CatalogConfig = Field(default_factory=CatalogConfig)  # type: ignore[arg-type]
    spark: SparkConfig = Field(default_factory=SparkConfig)  # type: ignore[arg-type]
    defaults: Defaults = Field(default_factory=Defaults)  # type: ignore[arg-type]
    tables: list[TableConfig] = Field(min_length=1, description="The target tables.")

    @model_validator(mode="after")
    def _unique_and_ordered(self) -> PipelineConfig:
        names = [t.name for t in self.tables]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"table names must be unique; repeated: {', '.join(duplicates)}")
        for table in self.tables:
            unknown = [d for d in table.depends_on if d not in names]
            if unknown:
                raise ValueError(
                    f"table {table.name!r} depends on unknown table(s) {unknown}; known tables: {names}"
                )
        dependency_order(self.tables)  # raises on cycles
        return self

    def qualified(self, table: TableConfig) -> str:
        """The target's `namespace.table` name."""
        return table.name if "." in table.name else f"{self.defaults.namespace}.{table.name}"

    def audit_for(self, table: TableConfig) -> AuditConfig:
        return table.audit or self.defaults.audit


def dependency_order(tables: list[TableConfig]) -> list[TableConfig]:
    """Tables sorted so that each comes after what it depends on; file order otherwise."""
    by_name = {t.name: t for t in tables}
    done: list[TableConfig] = []
    visiting: set[str] = set()

    def visit(table: TableConfig, path: tuple[str, ...]) -> None:
        if table in done:
            return
        if table.name in visiting:
            raise ValueError(f"dependency cycle: {' -> '.join((*path, table.name))}")
        visiting.add(table.name)
        for dep in table.depends_on:
            visit(by_name[dep], (*path, table.name))
        visiting.discard(table.name)
        done.append(table)

    for table in tables:
        visit(table, ())
    return done
