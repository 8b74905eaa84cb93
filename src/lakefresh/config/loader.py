"""Load a pipeline file: render it with Jinja2, parse the YAML, validate it into models.

Errors name the file, the field (as a dotted path), the bad value and the valid values.
"""

from __future__ import annotations

import os
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2
import yaml
from pydantic import BaseModel, ValidationError

from lakefresh.config.models import PipelineConfig
from lakefresh.errors import ConfigError


def render(text: str, variables: Mapping[str, str], source: str) -> str:
    """Render the pipeline text: `{{ env.NAME }}`, `{{ env.get('NAME', 'default') }}`, `{{ var.x }}`.
    `{{ watermark }}` is left as it is: a `jdbc` source fills it at every run."""
    environment = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    try:
        template = environment.from_string(text)
        return template.render(env=dict(os.environ), var=dict(variables), watermark="{{ watermark }}")
    except jinja2.UndefinedError as exc:
        raise ConfigError(
            f"{source}: template uses an undefined name ({exc.message}); pass it with "
            "--var NAME=VALUE or set the environment variable"
        ) from exc
    except jinja2.TemplateError as exc:
        line = getattr(exc, "lineno", None)
        raise ConfigError(f"{source}:{line or '?'}: template error: {exc}") from exc


def parse(text: str, source: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark else source
        raise ConfigError(f"{where}: invalid YAML: {getattr(exc, 'problem', exc)}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the pipeline must be a mapping with a `tables` list")
    return data


def validate(data: dict[str, Any], source: str) -> PipelineConfig:
    try:
        return PipelineConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, data, source)) from None


def load_config(path: str | Path, variables: Mapping[str, str] | None = None) -> PipelineConfig:
    """Read, render and validate a pipeline file. Never starts Spark."""
    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"{file}: pipeline file not found")
    text = render(file.read_text(encoding="utf-8"), variables or {}, str(file))
    return validate(parse(text, str(file)), str(file))


# --- error messages ---------------------------------------------------------------------------


def format_validation_error(exc: ValidationError, data: Any, source: str) -> str:
    lines = [f"{source}: {exc.error_count()} error(s) in the pipeline"]
    for error in exc.errors(include_url=False):
        loc = error["loc"]
        field = dotted(loc)
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            valid = valid_fields(PipelineConfig, loc[:-1], data)
            message = f"unknown field {loc[-1]!r}" + (f"; valid fields: {', '.join(valid)}" if valid else "")
        elif error["type"] in {"union_tag_invalid", "union_tag_not_found"}:
            message = message.replace("Input tag", "kind").replace("found using 'kind' ", "")
        value = error.get("input")
        shown = "" if isinstance(value, dict | list) or error["type"] == "missing" else f" (got {value!r})"
        lines.append(f"  {field or '<root>'}: {message}{shown}")
    return "\n".join(lines)


def dotted(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in {"function-after", "function-before"} or str(part).startswith("function-"):
            continue
        else:
            out += f".{part}" if out else str(part)
    return out


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
    # a discriminated union: the part is the tag
    for member in typing.get_args(current):
        member_model = _unwrap_model(member)
        if member_model and "kind" in member_model.model_fields:
            tags = typing.get_args(member_model.model_fields["kind"].annotation)
            if part in tags:
                return member_model
    return None


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
