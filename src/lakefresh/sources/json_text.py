"""Nested values from JSON text: a column declared `struct<...>`, `array<...>` or `map<string, ...>`
whose source value is text (a JSON Lines object or array, a CSV cell holding JSON).

The value is built level by level as SQL text: each object or array is parsed with its members as
text (`from_json` into `STRUCT<f: STRING, ...>`, `ARRAY<STRING>`, `MAP<STRING, STRING>`), and each
member is then read as its declared type, the leaves by the same strict casts as a top-level
column. So a member that does not fit is seen, not turned into NULL: Spark's `from_json` into the
typed schema gives NULL for a member that fails to parse, and NULL for an object where an array is
declared. A value is valid when

- it is NULL, or its text is one value of the declared kind (an object for a struct or a map, an
  array for an array; white space around it is allowed), with no key written twice, and
- an object declared as a struct has no member the struct does not name (a member would be
  dropped without a trace otherwise: declare it, or declare the column `string` to keep the text),
  and
- each member is valid, and each leaf present in the text casts to its type exactly (a number
  that would be rounded to fit does not).

JSON `null` and a missing member are NULL. A map's keys are JSON's object keys, so a map read from
JSON text has string keys.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from lakefresh.errors import SourceError
from lakefresh.lakehouse.sql import quote, sql_literal

if TYPE_CHECKING:
    from pyspark.sql.types import DataType

_LEADING_SPACE = sql_literal("^[ \\t\\r\\n]+")  # JSON's white space, as a Java regular expression
_TRAILING_SPACE = sql_literal("[ \\t\\r\\n]+$")
# SQL of a text value -> SQL of it as a leaf type, and SQL of the condition that the value is
# there but not held exactly (a number rounded, a wall-clock time the zone skips), if any
LeafCast = Callable[[str, "DataType"], tuple[str, str | None]]


def is_nested(type_: DataType) -> bool:
    from pyspark.sql import types as T

    return isinstance(type_, T.StructType | T.ArrayType | T.MapType)


def from_json_text(text: str, type_: DataType, leaf: LeafCast) -> tuple[str, str]:
    """SQL for the value of JSON `text` (SQL of a string) as `type_`, and SQL for the condition
    that the text holds such a value exactly (see the module's docstring)."""
    return _build(text, type_, leaf, 0)


def _build(text: str, type_: DataType, leaf: LeafCast, depth: int) -> tuple[str, str]:
    from pyspark.sql import types as T

    if isinstance(type_, T.StructType):
        return _struct(text, type_, leaf, depth)
    if isinstance(type_, T.ArrayType):
        items = f"from_json({text}, 'ARRAY<STRING>')"
        item = f"_lf_e{depth}"
        value, valid = _build(item, type_.elementType, leaf, depth + 1)
        checks = [f"{items} IS NOT NULL", _starts(text, "["), f"forall({items}, {item} -> {valid})"]
        return f"transform({items}, {item} -> {value})", _when_present(text, checks)
    if isinstance(type_, T.MapType):
        if not isinstance(type_.keyType, T.StringType):
            raise SourceError(
                f"a map read from JSON text has JSON's object keys, which are text: declare "
                f"map<string, {type_.valueType.simpleString()}>, not {type_.simpleString()}"
            )
        entries = f"from_json({text}, 'MAP<STRING, STRING>')"
        key, member = f"_lf_k{depth}", f"_lf_v{depth}"
        value, valid = _build(member, type_.valueType, leaf, depth + 1)
        checks = [
            f"{entries} IS NOT NULL",
            _starts(text, "{"),
            _distinct_keys(text),
            f"forall(map_values({entries}), {member} -> {valid})",
        ]
        return f"transform_values({entries}, ({key}, {member}) -> {value})", _when_present(text, checks)
    value, inexact = leaf(text, type_)
    exact = "" if inexact is None else f" AND NOT coalesce({inexact}, FALSE)"
    return value, f"({text} IS NULL OR (({value}) IS NOT NULL{exact}))"


def _struct(text: str, type_: DataType, leaf: LeafCast, depth: int) -> tuple[str, str]:
    from pyspark.sql import types as T

    assert isinstance(type_, T.StructType)
    as_text = ", ".join(f"{quote(f.name)}: STRING" for f in type_.fields)
    parsed = f"from_json({text}, {sql_literal(f'STRUCT<{as_text}>')})"
    members = []
    checks = [f"{parsed} IS NOT NULL", _starts(text, "{"), _distinct_keys(text)]
    names = ", ".join(sql_literal(f.name) for f in type_.fields)
    checks.append(f"size(array_except(json_object_keys({text}), array({names}))) = 0")
    for field in type_.fields:
        value, valid = _build(f"({parsed}).{quote(field.name)}", field.dataType, leaf, depth + 1)
        members.append(f"{sql_literal(field.name)}, {value}")
        checks.append(valid)
    value = f"CASE WHEN {parsed} IS NOT NULL THEN named_struct({', '.join(members)}) END"
    return value, _when_present(text, checks)


def _starts(text: str, bracket: str) -> str:
    """The text is one JSON object (`{`) or array (`[`): its first and its last character that
    are not white space open and close it."""
    close = "}" if bracket == "{" else "]"
    first = f"left(regexp_replace({text}, {_LEADING_SPACE}, ''), 1)"
    last = f"right(regexp_replace({text}, {_TRAILING_SPACE}, ''), 1)"
    # one value, not `[1] [2]` or `{...}}`: Spark's parser stops after the first value
    alone = f"size(from_json(concat('[', {text}, ']'), 'ARRAY<STRING>')) = 1"
    return f"({first} = {sql_literal(bracket)} AND {last} = {sql_literal(close)} AND {alone})"


def _distinct_keys(text: str) -> str:
    """No key of the object is written twice (`from_json` keeps the last for a struct, both for
    a map)."""
    keys = f"json_object_keys({text})"
    return f"size({keys}) = size(array_distinct({keys}))"


def _when_present(text: str, checks: list[str]) -> str:
    """Never NULL: a check that cannot tell (NULL) fails."""
    return f"({text} IS NULL OR coalesce(({' AND '.join(checks)}), FALSE))"
