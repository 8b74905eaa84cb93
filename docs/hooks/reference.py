"""An MkDocs hook that writes the two reference pages from the code, at every build.

`reference/config.md` walks the pydantic models of a pipeline file (`PipelineConfig` and every
model it reaches: the source and strategy kinds, their nested options) and lists each field with
its type, default and description. `reference/cli.md` walks the typer app's commands and lists
each one's arguments and options with their help. The pages exist only in the built site (they
are added to the build's files, never written into `docs/`), so they cannot drift from the code:
a field added to a model, or an option to a command, is in the next build.

Run by `mkdocs build` through `hooks:` in mkdocs.yml; `python docs/hooks/reference.py` prints
both pages instead.
"""

from __future__ import annotations

import enum
import inspect
import re
import tomllib
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from lakefresh.cli import app
from lakefresh.config.models import PipelineConfig

CONFIG_PAGE = "reference/config.md"
CLI_PAGE = "reference/cli.md"


# --- the config reference ----------------------------------------------------------------------


def _union_members(annotation: Any) -> list[Any]:
    """The members of `A | B` or `Union[A, B]`, else [annotation]."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return list(typing.get_args(annotation))
    return [annotation]


def _strip(annotation: Any) -> Any:
    """`Annotated[X, ...]` is X."""
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _is_model(annotation: Any) -> bool:
    return inspect.isclass(annotation) and issubclass(annotation, BaseModel)


def _kinds(model: type[BaseModel]) -> tuple[str, ...]:
    """The `kind` values that select a source or strategy model (its name and aliases)."""
    field = model.model_fields.get("kind")
    return tuple(typing.get_args(_strip(field.annotation))) if field else ()


def _anchor(model: type[BaseModel]) -> str:
    kinds = _kinds(model)
    base = kinds[0] if kinds else re.sub(r"(?<!^)(?=[A-Z])", "-", model.__name__).lower()
    family = "strategy" if "Strategy" in model.__name__ else "source" if "Source" in model.__name__ else ""
    return f"{family}-{base}" if kinds and family else base.replace("_", "-")


def _kind_union(annotation: Any) -> bool:
    """A union of models told apart by `kind` (the source and strategy unions)."""
    members = [_strip(m) for m in _union_members(_strip(annotation))]
    return len(members) > 1 and all(_is_model(m) and _kinds(m) for m in members)


DURATION = "duration (seconds, or 500ms, 90s, 5m, 1h, 2d)"


def _is_duration(annotation: Any, metadata: list[Any] | None = None) -> bool:
    """A field of the config's Duration type (config/base.py): a float read from text too."""
    from lakefresh.config.base import Duration

    marks = typing.get_args(Duration)[1:]
    if typing.get_origin(annotation) is typing.Annotated:
        metadata = list(typing.get_args(annotation)[1:])
    return annotation is not type(None) and any(m in marks for m in metadata or [])


def _type_text(annotation: Any, metadata: list[Any] | None = None) -> str:
    """A field's type as a reader writes it in YAML terms, models linked to their section."""
    if _is_duration(annotation, metadata):
        return DURATION
    annotation = _strip(annotation)
    if annotation is type(None):
        return "null"
    if _kind_union(annotation):
        kinds = [_kinds(_strip(m))[0] for m in _union_members(annotation)]
        return "one of: " + ", ".join(
            f"[`{k}`](#{_anchor(_strip(m))})" for k, m in zip(kinds, _union_members(annotation), strict=True)
        )
    members = _union_members(annotation)
    if len(members) > 1:
        return " or ".join(dict.fromkeys(_type_text(m) for m in members))
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " | ".join(f"`{a}`" if isinstance(a, str) else f"`{a!r}`" for a in args)
    if origin in (list, tuple, set, frozenset):
        inner = [a for a in args if a is not Ellipsis]
        return "list of " + (_type_text(inner[0]) if inner else "values")
    if origin is dict:
        return f"map of {_type_text(args[0])} to {_type_text(args[1])}" if args else "map"
    if _is_model(annotation):
        return f"[{annotation.__name__}](#{_anchor(annotation)})"
    if inspect.isclass(annotation) and issubclass(annotation, enum.Enum):
        return " | ".join(f"`{m.value}`" for m in annotation)
    names = {str: "text", int: "integer", float: "number", bool: "boolean", Any: "any value"}
    if annotation in names:
        return names[annotation]
    return f"`{getattr(annotation, '__name__', str(annotation))}`"


def _default_text(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    if field.default_factory is not None:
        value = field.default_factory()  # type: ignore[call-arg]
        if isinstance(value, BaseModel):
            return "its defaults"
    else:
        value = field.default
    if value is PydanticUndefined:
        return "required"
    if value is None:
        return "`null`"
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if value in ([], {}, ()):
        return "`[]`" if not isinstance(value, dict) else "`{}`"
    return f"`{value}`"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _models_below(annotation: Any, many: bool = False) -> Iterator[tuple[type[BaseModel], bool]]:
    """Every model a field's type names, in the order it names them, and whether the field holds
    a list of them."""
    annotation = _strip(annotation)
    if _is_model(annotation):
        yield annotation, many
        return
    listed = typing.get_origin(annotation) in (list, tuple, set, frozenset)
    for arg in typing.get_args(annotation):
        if arg is not Ellipsis and not isinstance(arg, str | int | float | bool):
            yield from _models_below(arg, many or listed)


def _model_section(model: type[BaseModel], where: str) -> list[str]:
    kinds = _kinds(model)
    if kinds:
        title = f"`{kinds[0]}`" + (f" (alias {', '.join(f'`{k}`' for k in kinds[1:])})" if kinds[1:] else "")
    else:
        title = f"`{where}`" if where else "The file"
    lines = [f"### {title} {{#{_anchor(model)}}}", ""]
    doc = inspect.getdoc(model)
    if doc and doc != inspect.getdoc(BaseModel):
        lines += [" ".join(doc.split("\n\n")[0].split()), ""]
    lines += ["| field | type | default | description |", "| --- | --- | --- | --- |"]
    for name, field in model.model_fields.items():
        described = field.description or ("selects this kind" if name == "kind" and kinds else "")
        lines.append(
            f"| `{field.alias or name}` | {_cell(_type_text(field.annotation, field.metadata))} "
            f"| {_cell(_default_text(field))} | {_cell(described)} |"
        )
    return [*lines, ""]


def config_reference() -> str:
    """The config reference page: every model a pipeline file reaches, breadth first from the
    file's top (each titled by where it is first met), then the source and strategy kinds."""
    found: dict[type[BaseModel], str] = {}
    kinds: dict[str, list[type[BaseModel]]] = {"source": [], "strategy": []}
    queue: list[tuple[type[BaseModel], str]] = [(PipelineConfig, "")]
    while queue:
        model, where = queue.pop(0)
        if model in found:
            continue
        found[model] = where
        if _kinds(model):
            family = "strategy" if "Strategy" in model.__name__ else "source"
            kinds[family].append(model)
            where = family
        for name, field in model.model_fields.items():
            for below, many in _models_below(field.annotation):
                shown = field.alias or name
                path = f"{where}.{shown}" if where else shown
                queue.append((below, path + ("[]" if many else "")))
    parts = [
        "# Configuration reference",
        "",
        "Every field of a pipeline file, generated from lakefresh's configuration models each time "
        "this site is built. A field marked *required* has no default; unknown fields are errors "
        "(`lakefresh validate` lists the valid names). What the options do, with examples: "
        "[Getting started](../getting-started.md), [Sources](../sources.md), "
        "[Strategies](../strategies.md).",
        "",
        "## The pipeline file and its parts",
        "",
    ]
    for model, where in found.items():
        if not _kinds(model):
            parts += _model_section(model, where)
    for family, title in (("source", "Sources"), ("strategy", "Strategies")):
        parts += [f"## {title}", "", f"A table's `{family}` is one of these, chosen by its `kind`.", ""]
        for model in kinds[family]:
            parts += _model_section(model, found[model])
    return "\n".join(parts)


# --- the CLI reference -------------------------------------------------------------------------


def _param_line(param: Any, context: Any) -> str:
    """One row of a command's table: typer's own help record of an argument or an option (its
    names and type, then its help with the default and the valid values)."""
    record = param.get_help_record(context)
    names, help_text = record if record else (param.name.upper(), param.help or "")
    kind = "argument" if param.param_type_name == "argument" else "option"
    return f"| `{_cell(names)}` | {kind} | {_cell(help_text)} |"


def cli_reference() -> str:
    """The CLI reference page: every command of `lakefresh`, its arguments and options."""
    root = typer.main.get_command(app)
    context = root.make_context("lakefresh", ["--help"], resilient_parsing=True)
    parts = [
        "# Command-line reference",
        "",
        "Every `lakefresh` command with its arguments and options, generated from the commands "
        "themselves at each build of this site (`lakefresh COMMAND --help` prints the same).",
        "",
        "## `lakefresh`",
        "",
        " ".join((root.help or "").split()),
        "",
        "| parameter | kind | help |",
        "| --- | --- | --- |",
        *[_param_line(p, context) for p in root.params if p.name != "help"],
        "",
    ]
    for name in root.list_commands(context):
        command = root.get_command(context, name)
        if command is None or command.hidden:
            continue
        sub = command.make_context(name, ["--help"], parent=context, resilient_parsing=True)
        arguments = [
            p.name.upper() if p.required else f"[{p.name.upper()}]"
            for p in command.params
            if p.param_type_name == "argument"
        ]
        usage = " ".join(["lakefresh", name, "[OPTIONS]", *arguments])
        parts += [f"## `lakefresh {name}`", "", f"```\n{usage}\n```", ""]
        if command.help:
            parts += [inspect.cleandoc(command.help).split("\f")[0].strip(), ""]
        params = [p for p in command.params if p.name != "help"]
        if params:
            parts += ["| parameter | kind | help |", "| --- | --- | --- |"]
            parts += [_param_line(p, sub) for p in params]
            parts.append("")
    return "\n".join(parts)


# --- the layer diagram -------------------------------------------------------------------------

LAYERS_MARK = "<!-- layers -->"


def layer_diagram(pyproject: Path) -> str:
    """The import layers of import-linter's layers contract in pyproject.toml, top to bottom, as
    a text diagram (modules of one layer side by side, independent of each other)."""
    settings = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    contracts = settings["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contracts if c["type"] == "layers")
    rows = [" | ".join(m.strip().removeprefix("lakefresh.") for m in layer.split("|")) for layer in layers]
    width = max(len(row) for row in rows)
    lines = []
    for n, row in enumerate(rows):
        lines.append(row.center(width).rstrip())
        if n < len(rows) - 1:
            lines.append("↓".center(width).rstrip())
    return "```\n" + "\n".join(lines) + "\n```"


# --- the hook ----------------------------------------------------------------------------------


def on_files(files: Any, config: Any) -> Any:
    """Add both pages to the build, generated now (mkdocs 1.6's generated files)."""
    from mkdocs.structure.files import File

    for path, text in ((CONFIG_PAGE, config_reference()), (CLI_PAGE, cli_reference())):
        files.append(File.generated(config, path, content=text))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """The architecture page's layer diagram, drawn from pyproject.toml."""
    if LAYERS_MARK in markdown:
        pyproject = Path(config["config_file_path"]).parent / "pyproject.toml"
        markdown = markdown.replace(LAYERS_MARK, layer_diagram(pyproject))
    return markdown


if __name__ == "__main__":
    print(layer_diagram(Path(__file__).parents[2] / "pyproject.toml"))
    print(config_reference())
    print(cli_reference())
