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
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from lakefresh.config.base import IDENTIFIER, Model
from lakefresh.config.expressions import check_condition, check_query


class RuleConfig(Model):
    """One named rule: a row condition or a batch query, and what a violation does."""

    name: str = Field(description="The rule's name: in the batch log, quarantine reasons and errors.")
    row: str | None = Field(None, description="A SQL condition every row must meet.")
    batch: str | None = Field(
        None, description="A SQL query over the views `batch` and `staged` returning one boolean."
    )
    action: Literal["warn", "drop", "fail"] = Field(
        "fail", description="warn: count; drop: quarantine the row (row rules); fail: publish nothing."
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
        if (self.row is None) == (self.batch is None):
            raise ValueError(
                f"rule {self.name!r} needs exactly one of `row` (a condition) or `batch` (a query)"
            )
        if self.batch is not None and self.action == "drop":
            raise ValueError(
                f"rule {self.name!r}: a batch rule can warn or fail; only a row rule can drop rows"
            )
        return self
