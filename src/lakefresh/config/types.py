"""Spark SQL types a column may be declared as, checked without Spark: the scalar types, and
`struct<name: type, ...>`, `array<type>` and `map<key, value>` of them, nested at will."""

from __future__ import annotations

import re

from lakefresh.config.base import SPARK_TYPE

VALID_TYPES = (
    "string, int, bigint, smallint, tinyint, double, float, boolean, date, timestamp, timestamp_ntz, "
    "binary, decimal(p,s), struct<name: type, ...>, array<type>, map<string, type>"
)
_NESTED = re.compile(r"(struct|array|map)\s*<(.*)>", re.IGNORECASE | re.DOTALL)
_FIELD = re.compile(r"(`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_]*)\s*:?\s*(.+)", re.DOTALL)


def type_problem(text: str) -> str | None:
    """What is wrong with a declared column type, or None."""
    type_ = text.strip()
    nested = _NESTED.fullmatch(type_)
    if nested is None:
        return None if SPARK_TYPE.match(type_) else f"unknown type {type_!r}"
    kind, parts = nested.group(1).lower(), _split(nested.group(2))
    if parts is None:
        return "its <> or backquotes do not pair up"
    if kind == "array":
        return type_problem(parts[0]) if len(parts) == 1 else "array<...> takes one type"
    if kind == "map":
        if len(parts) != 2:
            return "map<...> takes a key type and a value type"
        return type_problem(parts[0]) or type_problem(parts[1])
    if parts == [""]:
        return "a struct needs at least one field"
    seen: set[str] = set()
    for part in parts:
        field = _FIELD.fullmatch(part.strip())
        if field is None:
            return f"{part.strip()!r} is not `name: type`"
        name = field.group(1).strip("`").replace("``", "`").lower()
        if name in seen:
            return f"field {name!r} is named twice"
        seen.add(name)
        problem = type_problem(field.group(2))
        if problem:
            return problem
    return None


def _split(inner: str) -> list[str] | None:
    """`inner` split at its top-level commas; None when its brackets or quotes do not balance."""
    parts, depth, quoted, start = [], 0, False, 0
    for at, char in enumerate(inner):
        if char == "`":
            quoted = not quoted
        elif quoted:
            continue
        elif char in "<(":
            depth += 1
        elif char in ">)":
            depth -= 1
            if depth < 0:
                return None
        elif char == "," and depth == 0:
            parts.append(inner[start:at])
            start = at + 1
    if depth or quoted:
        return None
    return [p.strip() for p in [*parts, inner[start:]]]
