"""Validation errors in plain words, one line per problem:

    pipeline.yml: 1 error(s) in the pipeline
      tables[1] (orders).strategy.kyes: unknown field 'kyes'; did you mean 'keys'? valid fields: ...

A path follows the file as written: tables are numbered as they stand in the file and named
(a `<name>_history` table that `history: true` brings is reported at the table that brought it),
and the parts pydantic adds to its locations (a union member, the `kind` tag) are left out.
Pydantic's own wording ("Input should be", "Value error,") never reaches the user.
"""

from __future__ import annotations

import re
import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError

from lakefresh.config.base import ConfigProblems
from lakefresh.config.base import hinted as _hinted
from lakefresh.config.graph import with_history_tables
from lakefresh.config.models import PipelineConfig, TableConfig
from lakefresh.config.sources import SOURCE_KINDS
from lakefresh.config.strategies import STRATEGY_KINDS

TYPE_WORDS = {
    "string_type": "must be a text",
    "string_too_short": "must not be empty",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "list_type": "must be a list",
    "tuple_type": "must be a list",
    "set_type": "must be a list",
    "dict_type": "must be a mapping (name: value)",
    "model_type": "must be a mapping (field: value)",
    "model_attributes_type": "must be a mapping (field: value)",
    "datetime_type": "must be a date and time, e.g. 2025-01-31 08:00:00",
    "datetime_parsing": "must be a date and time, e.g. 2025-01-31 08:00:00",
    "datetime_from_date_parsing": "must be a date and time, e.g. 2025-01-31 08:00:00",
    "date_type": "must be a date, e.g. 2025-01-31",
    "date_parsing": "must be a date, e.g. 2025-01-31",
    "missing": "required, but missing",
}
# Renamed fields of a `<name>_history` table: reported as the field its table wrote.
HISTORY_FIELDS = {"sequence_by": "date_column", "track_except": "exclude_from_cdc"}


def format_validation_error(exc: ValidationError, data: Any, source: str) -> str:
    origins = _origins(data)
    found: list[tuple[str, str, int | None, bool, bool]] = []  # where, text, position, derived, union
    for error in exc.errors(include_url=False):
        for loc, message, value, show in _problems(error, data):
            where, position, derived, union = locate(loc, origins)
            shown = _short(value)
            if show and shown not in message:
                message += f" (got {shown})"
            found.append((where, message, position, derived, union))
    # a history table repeats its table's problems: shown once, at the table
    own = {position for _, _, position, derived, _ in found if position is not None and not derived}
    lines: list[str] = []
    for i, (where, message, position, derived, union) in enumerate(found):
        if derived and position in own:
            continue
        if union and i and found[i - 1][4] and found[i - 1][0] == where and lines:
            lines[-1] += f"; or {message}"  # a value no member of a union takes
            continue
        line = f"  {where}: {message}" if where else f"  {message}"
        if line not in lines:
            lines.append(line)
    return "\n".join([f"{source}: {len(lines)} error(s) in the pipeline", *lines])


def _problems(error: Any, data: Any) -> list[tuple[tuple[Any, ...], str, Any, bool]]:
    """(location, message, value, show the value) for one pydantic error; a validator's
    ConfigProblems become one each, at their own fields."""
    loc = tuple(error["loc"])
    inner = (error.get("ctx") or {}).get("error")
    if isinstance(inner, ConfigProblems):
        return [((*loc, *path), message, None, False) for path, message in inner.problems]
    value = error.get("input")
    show = error["type"] != "missing" and not isinstance(value, dict | list)
    return [(loc, plain_message(error, data), value, show)]


def plain_message(error: Any, data: Any) -> str:
    kind, loc = error["type"], tuple(error["loc"])
    ctx = error.get("ctx") or {}
    if kind == "extra_forbidden":
        valid = valid_fields(PipelineConfig, loc[:-1], data)
        listing = f"valid fields: {', '.join(valid)}" if valid else ""
        return _hinted(f"unknown field {loc[-1]!r}", loc[-1], valid, listing)
    if kind == "union_tag_invalid":
        tags = _quoted(str(ctx.get("expected_tags", "")))
        tag = ctx.get("tag")
        return _hinted(f"unknown kind {tag!r}", tag, tags, f"valid kinds: {', '.join(tags)}")
    if kind == "union_tag_not_found":
        tags = list({"source": SOURCE_KINDS, "strategy": STRATEGY_KINDS}.get(str(loc[-1]), ()))
        return "`kind` is missing" + (f"; valid kinds: {', '.join(tags)}" if tags else "")
    if kind == "literal_error":
        valid = _quoted(str(ctx.get("expected", "")))
        value = error.get("input")
        return _hinted(f"unknown value {value!r}", value, valid, f"valid values: {', '.join(valid)}")
    if kind in ("value_error", "assertion_error") and ctx.get("error") is not None:
        return str(ctx["error"])
    if kind in ("too_short", "too_long"):
        bound = "at least" if kind == "too_short" else "at most"
        count = ctx.get("min_length" if kind == "too_short" else "max_length", "?")
        return f"must have {bound} {count} item(s), has {ctx.get('actual_length', '?')}"
    if kind in TYPE_WORDS:
        return TYPE_WORDS[kind]
    return reword(str(error["msg"]))


def reword(message: str) -> str:
    """Pydantic's wording, for the errors no rule above covers."""
    message = re.sub(r"^(Value error|Assertion failed), ", "", message)
    message = re.sub(r"\s*For further information visit \S+", "", message)
    return message.replace("Input should be", "must be").replace(" after validation", "")


def _quoted(text: str) -> list[str]:
    return re.findall(r"'((?:[^'\\]|\\.)*)'", text)


def _short(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."


# --- locations ---------------------------------------------------------------------------------


def _origins(data: Any) -> list[tuple[int, str | None, str | None]]:
    """Per validated table: its position in the file, its name, and the name of the table that
    brought it (a `<name>_history` table)."""
    tables = data.get("tables") if isinstance(data, dict) else None
    if not isinstance(tables, list):
        return []
    out = []
    for position, table, parent in with_history_tables(tables):
        name = table.get("name") if isinstance(table, dict) else None
        out.append((position, name if isinstance(name, str) else None, parent))
    return out


def locate(
    loc: tuple[Any, ...], origins: list[tuple[int, str | None, str | None]]
) -> tuple[str, int | None, bool, bool]:
    """The path as the file spells it; the table's position in the file; whether the table is a
    history table; whether the path went through a union member."""
    if len(loc) >= 2 and loc[0] == "tables" and isinstance(loc[1], int) and loc[1] < len(origins):
        position, name, parent = origins[loc[1]]
        segments, union = _walk(TableConfig, loc[2:])
        if parent is not None:
            label = f"tables[{position}] ({parent}, its history table {name})"
            if len(segments) > 1 and segments[0] == "strategy":
                segments[1] = HISTORY_FIELDS.get(str(segments[1]), segments[1])
        else:
            label = f"tables[{position}]" + (f" ({name})" if name else "")
        return label + _join(segments, nested=True), position, parent is not None, union
    segments, union = _walk(PipelineConfig, loc)
    return _join(segments), None, False, union


def _walk(model: Any, loc: tuple[Any, ...]) -> tuple[list[Any], bool]:
    segments: list[Any] = []
    union = False
    annotation: Any = model
    for part in loc:
        if isinstance(part, str) and part.startswith("function-"):
            continue
        annotation = _optional(annotation)
        if annotation is None:
            segments.append(part)
            continue
        if isinstance(part, int):
            args = typing.get_args(annotation)
            annotation = args[0] if args else None
            segments.append(part)
            continue
        found = _unwrap_model(annotation)
        if found is not None:
            field = next((f for n, f in found.model_fields.items() if part in (n, f.alias)), None)
            segments.append(field.alias or part if field else part)
            annotation = field.annotation if field else None
            continue
        origin = typing.get_origin(annotation)
        if origin is dict:
            segments.append(part)
            annotation = typing.get_args(annotation)[1]
        elif origin in (typing.Union, types.UnionType):
            tagged = _tagged(annotation, part)  # the `kind` pydantic put in the path
            if tagged is None:  # a field of the member a validator checked
                field = _member_field(annotation, part)
                if field is not None:
                    segments.append(part)
                    annotation = field.annotation
                    continue
            annotation = tagged
            union = union or tagged is None  # else the union member it tried: no part of the file
        else:
            segments.append(part)
            annotation = None
    return segments, union


def _join(segments: list[Any], nested: bool = False) -> str:
    out = ""
    for part in segments:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", str(part)):
            out += f".{part}" if out or nested else str(part)
        else:
            out += f"[{str(part)!r}]"
    return out


def _optional(annotation: Any) -> Any:
    annotation = _strip(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(members) == 1:
            return _strip(members[0])
    return annotation


def _tagged(annotation: Any, tag: Any) -> Any:
    for member in typing.get_args(annotation):
        model = _unwrap_model(member)
        kind = model.model_fields.get("kind") if model is not None else None
        if kind is not None and tag in typing.get_args(kind.annotation):
            return model
    return None


def _member_field(annotation: Any, name: Any) -> Any:
    for member in typing.get_args(annotation):
        model = _unwrap_model(member)
        if model is not None:
            for field_name, field in model.model_fields.items():
                if name in (field_name, field.alias):
                    return field
    return None


def valid_fields(model: type[BaseModel], loc: tuple[Any, ...], data: Any) -> list[str]:
    """Walk the models along an error location and list the fields allowed there."""
    current: Any = model
    for part in loc:
        current = _step(current, part)
        if current is None:
            return []
    target = _unwrap_model(current)
    if target is None:
        return []
    return sorted(f.alias or name for name, f in target.model_fields.items())


def _step(current: Any, part: Any) -> Any:
    current = _strip(current)
    if isinstance(part, int):
        args = typing.get_args(current)
        return args[0] if args else None
    model = _unwrap_model(current)
    if model is not None:
        for name, info in model.model_fields.items():
            if part in (name, info.alias):
                return info.annotation
        return None
    return _tagged(current, part)  # a discriminated union: the part is the tag


def _strip(annotation: Any) -> Any:
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _unwrap_model(annotation: Any) -> type[BaseModel] | None:
    annotation = _strip(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(members) == 1:
            return _unwrap_model(members[0])
    return None
