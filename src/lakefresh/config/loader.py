"""Load a pipeline file: render it with Jinja2, parse the YAML, validate it into models.

Errors name the file, the field (as a path that follows the file: `tables[1] (orders).keys[0]`),
the bad value and the valid values, in plain words (see `messages`).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2
import yaml
from pydantic import ValidationError

from lakefresh.config.checks import local_problems
from lakefresh.config.messages import format_validation_error
from lakefresh.config.models import PipelineConfig
from lakefresh.errors import ConfigError
from lakefresh.secrets import register_variables

__all__ = ["format_validation_error", "load_config", "parse", "render", "validate", "validate_pipeline"]


class _Undefined(Exception):
    """A template name with no value (raised from inside Jinja, reported by `render`)."""

    def __init__(self, owner: object, name: str | None, message: str = "") -> None:
        super().__init__(message or name)
        self.owner, self.name = owner, name


class _Strict(jinja2.StrictUndefined):
    """StrictUndefined that remembers what was looked up in what (for a message of our own)."""

    __slots__ = ()

    def __init__(
        self, hint: str | None = None, obj: Any = jinja2.utils.missing, name: Any = None, exc: Any = None
    ) -> None:
        super().__init__(hint, obj, name, functools.partial(_Undefined, obj, name))  # type: ignore[arg-type]


class _Used(dict[str, str]):
    """Variables for the template that remember which of them it read."""

    def __init__(self, values: Mapping[str, str]) -> None:
        super().__init__(values)
        self.used: dict[str, str] = {}

    def __getitem__(self, name: str) -> str:
        value = super().__getitem__(name)
        self.used[name] = value
        return value

    def get(self, name: str, default: Any = None) -> Any:
        if name in self:
            return self[name]
        return default


def render(text: str, variables: Mapping[str, str], source: str) -> str:
    """Render the pipeline text: `{{ env.NAME }}`, `{{ env.get('NAME', 'default') }}`, `{{ var.x }}`.
    `{{ watermark }}` is left as it is: a `jdbc` source fills it at every run."""
    env, var = _Used(os.environ), _Used(variables)
    environment = jinja2.Environment(undefined=_Strict, keep_trailing_newline=True)
    try:
        template = environment.from_string(text)
        rendered = template.render(env=env, var=var, watermark="{{ watermark }}")
        register_variables({**env.used, **var.used})  # e.g. {{ env.PGPASSWORD }}: never shown
        return rendered
    except _Undefined as exc:
        raise ConfigError(_undefined_message(exc, env, var, text, source)) from None
    except jinja2.TemplateSyntaxError as exc:
        raise ConfigError(f"{source}:{exc.lineno or '?'}: template syntax error: {exc.message}") from None
    except Exception as exc:  # an error in an expression of the template ({{ 1/0 }}...)
        raise ConfigError(f"{source}: the template cannot be rendered: {exc}") from None


def _undefined_message(exc: _Undefined, env: object, var: object, text: str, source: str) -> str:
    name = exc.name or "?"
    if exc.owner is var:
        line = _line_of(text, "var", name)
        return (
            f"{source}:{line}: the template uses var.{name}, which is undefined; pass it with "
            f"--var {name}=VALUE"
        )
    if exc.owner is env:
        line = _line_of(text, "env", name)
        return (
            f"{source}:{line}: the template uses env.{name}, which is undefined; set the environment "
            f"variable {name}, or give a default: env.get({name!r}, 'default')"
        )
    if exc.owner is jinja2.utils.missing:
        line = _line_of(text, "", name)
        return (
            f"{source}:{line}: the template uses {name!r}, which is undefined; the template knows "
            "env.NAME, var.NAME and watermark"
        )
    return f"{source}: the template looks up {name!r} in a value that has no {name!r}"


def _line_of(text: str, owner: str, name: str) -> int | str:
    """The line of the first use of `owner.name` (or `owner['name']`) in the text, else '?'."""
    if owner:
        pattern = rf"\b{owner}\s*(\.\s*{re.escape(name)}\b|\[\s*['\"]{re.escape(name)}['\"]\s*\])"
    else:
        pattern = rf"\{{[{{%][^}}]*\b{re.escape(name)}\b"
    found = re.search(pattern, text)
    return text.count("\n", 0, found.start()) + 1 if found else "?"


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


def validate_pipeline(path: str | Path, variables: Mapping[str, str] | None = None) -> PipelineConfig:
    """`load_config`, then what only this machine can tell: source folders that do not exist
    (a run would stop those tables with the same message) and a malformed
    LAKEFRESH_SPARK_MASTER. What `lakefresh validate` checks; never starts Spark."""
    config = load_config(path, variables)
    lines = local_problems(config.tables, Path(path))
    if lines:
        header = f"{path}: {len(lines)} error(s) in the pipeline"
        raise ConfigError("\n".join([header, *(f"  {line}" for line in lines)]))
    return config
