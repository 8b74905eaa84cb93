"""Shared base of every config model."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from typing import Annotated

from pydantic import BaseModel, ConfigDict, WithJsonSchema

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
# a duration field: seconds once read, written as seconds or as text (90s, 5m, 1h, 2d); the
# pipeline file's JSON Schema says both (each field's validator reads the text)
Duration = Annotated[
    float,
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "number", "minimum": 0},
                {"type": "string", "pattern": r"^\s*\d+(\.\d+)?\s*(ms|s|m|h|d)?\s*$"},
            ]
        }
    ),
]


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


# --- error messages -----------------------------------------------------------------------------

FieldPath = tuple[str | int, ...]


class ConfigProblems(ValueError):
    """Problems a validator found, each at a field path below the model it validates.

    Pydantic reports a model validator's error at the model itself; the loader reads these
    paths (from the error's context) to name the exact field, e.g. `tables[1] (orders).keys[0]`.
    """

    def __init__(self, problems: list[tuple[FieldPath, str]]) -> None:
        self.problems = problems
        super().__init__(
            "; ".join(f"{dotted(path)}: {message}" if path else message for path, message in problems)
        )


def dotted(path: FieldPath) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def close_match(word: object, choices: Iterable[str]) -> str | None:
    """The choice nearest to a misspelt word (case aside), or None when none is near."""
    if not isinstance(word, str) or not word:
        return None
    by_lower = {c.lower(): c for c in choices}
    found = difflib.get_close_matches(word.lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[found[0]] if found and by_lower[found[0]] != word else None


def hinted(message: str, word: object, choices: Iterable[str], listing: str = "") -> str:
    """`message; did you mean 'x'? listing` (or `message; listing` with no near miss)."""
    choices = list(choices)
    hint = close_match(word, choices)
    out = message + (f"; did you mean {hint!r}?" if hint else "")
    if listing:
        out += (" " if hint else "; ") + listing
    return out
