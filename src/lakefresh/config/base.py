"""Shared base of every config model."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# Spark SQL types a column may be declared as, checked without Spark.
SPARK_TYPE = re.compile(
    r"^(string|int|integer|bigint|long|smallint|short|tinyint|byte|double|float|real|boolean|"
    r"date|timestamp|timestamp_ntz|binary|decimal(\(\s*\d+\s*(,\s*\d+\s*)?\))?)$",
    re.IGNORECASE,
)


class Model(BaseModel):
    """Base of every config model: unknown keys are errors, values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def check_column_name(value: str, what: str) -> str:
    if not value or "`" in value:
        raise ValueError(f"{what} must be a non-empty column name without backticks, got {value!r}")
    return value
