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


DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str | float) -> float:
    """Seconds in `90`, `90s`, `500ms`, `5m`, `1h` or `2d`; raises ValueError otherwise."""
    found = DURATION.match(str(text))
    if not found or float(found.group(1)) <= 0:
        raise ValueError(f"must be a positive duration like 90s, 5m, 1h or 2d, got {text!r}")
    return float(found.group(1)) * DURATION_UNITS[found.group(2) or "s"]


def check_column_name(value: str, what: str) -> str:
    if not value or "`" in value:
        raise ValueError(f"{what} must be a non-empty column name without backticks, got {value!r}")
    return value
