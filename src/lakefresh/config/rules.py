"""Data-quality rules of a table, as Databricks expectations and dbt tests have them.

A *row rule* is a SQL condition over one row of the batch (after `transform`); a row violates it
when the condition is false or NULL (write `x IS NULL OR x > 0` to let NULLs pass). A *batch rule*
is a query that returns one boolean, over the views `batch` (the batch's rows that are loaded)
and `staged` (the target as the batch's staged commit left it, before anyone sees it): row-count
bounds, uniqueness, accepted values, a referential check against another table
(`catalog.namespace.table`). A batch rule holds when its query returns true.

Each rule has an action: `warn` (the violations are counted in the batch log), `drop` (row rules:
the violating rows go to quarantine with the rule's name as their reason) or `fail` (nothing is
published; the batch is logged `audit_failed` with the rule's name, the count and examples).

dbt's four generic tests are rules written in one line, with dbt's meaning (a NULL passes every
test but `not_null`): `not_null: c` and `accepted_values: {column: c, values: [...]}` are row
rules; `unique: c` is a batch rule over `staged` (the table as the batch leaves it);
`relationships: {column: c, to: T, field: f}` is a batch rule: every value of c in the batch is
a value of f in T (a table of this pipeline, or `namespace.table` of the catalog).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from lakefresh.config.base import IDENTIFIER, Model
from lakefresh.config.expressions import check_condition, check_query


class AcceptedValues(Model):
    """A column whose values must be among these (NULL passes)."""

    column: str = Field(description="The column.")
    values: list[str | int | float | bool] = Field(min_length=1, description="Its accepted values.")


class Relationship(Model):
    """Every value of a column of the batch is a value of a field of another table (NULL passes)."""

    column: str = Field(description="The batch's column.")
    to: str = Field(description="The other table: a table of this pipeline, or `namespace.table`.")
    field: str = Field(description="Its column that the values must be in.")


def _quoted(column: str) -> str:
    """A column as a Spark SQL identifier, by lakehouse/sql.py's `quote` rule (config, the lowest
    layer, does not import the lakehouse)."""
    return "`" + column.replace("`", "``") + "`"


def _literal(value: object) -> str:
    """A rule's value as a Spark SQL literal, by lakehouse/sql.py's `sql_literal` rule."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


class RuleConfig(Model):
    """One named rule: a row condition or a batch query (or one of dbt's four tests in one
    line), and what a violation does."""

    name: str = Field(description="The rule's name: in the batch log, quarantine reasons and errors.")
    row: str | None = Field(None, description="A SQL condition every row must meet.")
    batch: str | None = Field(
        None, description="A SQL query over the views `batch` and `staged` returning one boolean."
    )
    action: Literal["warn", "drop", "fail"] = Field(
        "fail", description="warn: count; drop: quarantine the row (row rules); fail: publish nothing."
    )
    not_null: str | None = Field(None, description="dbt's not_null: a row rule, the column is not NULL.")
    accepted_values: AcceptedValues | None = Field(
        None, description="dbt's accepted_values: a row rule, the column's value is one of these."
    )
    unique: str | None = Field(
        None, description="dbt's unique: a batch rule, no value of the column twice in the table."
    )
    relationships: Relationship | None = Field(
        None, description="dbt's relationships: a batch rule, the batch's values are in another table."
    )

    @model_validator(mode="before")
    @classmethod
    def _tests_as_rules(cls, data: Any) -> Any:
        """dbt's tests written as the row condition or batch query they stand for."""
        if not isinstance(data, dict):
            return data
        out = dict(data)
        if isinstance(out.get("not_null"), str):
            out.setdefault("row", f"{_quoted(out['not_null'])} IS NOT NULL")
        accepted = out.get("accepted_values")
        if isinstance(accepted, dict) and isinstance(accepted.get("column"), str) and accepted.get("values"):
            column, values = _quoted(accepted["column"]), ", ".join(_literal(v) for v in accepted["values"])
            out.setdefault("row", f"{column} IS NULL OR {column} IN ({values})")
        if isinstance(out.get("unique"), str):
            column = _quoted(out["unique"])
            out.setdefault(
                "batch",
                f"SELECT count(*) = 0 FROM (SELECT {column} FROM staged WHERE {column} IS NOT NULL "
                f"GROUP BY {column} HAVING count(*) > 1)",
            )
        return out

    @property
    def checks_batch(self) -> bool:
        """Whether it is checked on the staged batch (a query), not row by row."""
        return self.batch is not None or self.relationships is not None

    def query(self, resolve: Callable[[str], str]) -> str:
        """The batch rule's query; `resolve` names a table as Spark reads it (`relationships`)."""
        if self.relationships is None:
            return self.batch or ""
        link = self.relationships
        column, field = _quoted(link.column), _quoted(link.field)
        return (
            f"SELECT count(*) = 0 FROM batch b LEFT ANTI JOIN {resolve(link.to)} p "
            f"ON b.{column} = p.{field} WHERE b.{column} IS NOT NULL"
        )

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not IDENTIFIER.match(value):
            raise ValueError(f"must be made of letters, digits and _, got {value!r}")
        return value

    @field_validator("row")
    @classmethod
    def _row(cls, value: str | None) -> str | None:
        return value if value is None else check_condition(value, "row")

    @field_validator("batch")
    @classmethod
    def _batch(cls, value: str | None) -> str | None:
        return value if value is None else check_query(value)

    @model_validator(mode="after")
    def _one_kind(self) -> RuleConfig:
        tests = [t for t in ("not_null", "accepted_values", "unique", "relationships") if getattr(self, t)]
        kinds = (self.row is not None) + (self.batch is not None) + (self.relationships is not None)
        if kinds != 1 or len(tests) > 1:
            raise ValueError(
                f"rule {self.name!r} needs exactly one of `row` (a condition), `batch` (a query), "
                "or one test: not_null, accepted_values, unique, relationships"
            )
        if self.checks_batch and self.action == "drop":
            raise ValueError(
                f"rule {self.name!r}: a batch rule can warn or fail; only a row rule can drop rows"
            )
        return self
