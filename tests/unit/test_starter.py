"""`lakefresh init` writes a project that validates as it is, and `lakefresh schema` the JSON
Schema that editors check the pipeline file with: it accepts the starter and the example
pipelines, and refuses what `validate` refuses by field. No Spark needed."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from lakefresh.config.loader import parse, render, validate_pipeline
from lakefresh.errors import ConfigError
from lakefresh.starter import pipeline_schema, write_starter
from tests.conftest import cli_in_process

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "orders" / "pipeline.yml"


def test_init_writes_a_project_that_validates_and_never_writes_over_one(tmp_path: Path) -> None:
    folder = tmp_path / "My-Shop"
    written = write_starter(folder)
    assert sorted(p.relative_to(folder).as_posix() for p in written) == [
        ".gitignore",
        "data/orders/orders_001.csv",
        "pipeline.schema.json",
        "pipeline.yml",
    ]
    config = validate_pipeline(folder / "pipeline.yml")
    assert (config.catalog.name, config.defaults.namespace) == ("my_shop", "my_shop")
    assert [t.name for t in config.tables] == ["orders"]
    assert config.freshness_for(config.tables[0]).error_after == 2 * 86400
    first_line = (folder / "pipeline.yml").read_text().splitlines()[0]
    assert first_line == "# yaml-language-server: $schema=./pipeline.schema.json"
    with pytest.raises(ConfigError, match="exists already"):
        write_starter(folder)


@pytest.mark.parametrize("pipeline", ["starter", "example"])
def test_the_schema_accepts_the_starter_and_the_example(tmp_path: Path, pipeline: str) -> None:
    if pipeline == "starter":
        write_starter(tmp_path)
        text = (tmp_path / "pipeline.yml").read_text()
    else:
        text = render(EXAMPLE.read_text(), {}, str(EXAMPLE))
    jsonschema.validate(parse(text, pipeline), pipeline_schema())


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"colour": "red"}, ["tables", 0]),
        ({"freshness": {"warn_after": "soon"}}, ["tables", 0, "freshness", "warn_after"]),
        ({"strategy": {"kind": "upsert", "keys": ["order_id"]}}, ["tables", 0, "strategy"]),
    ],
)
def test_the_schema_refuses_what_validate_refuses(tmp_path: Path, change: dict, path: list) -> None:
    write_starter(tmp_path)
    data = yaml.safe_load((tmp_path / "pipeline.yml").read_text())
    data["tables"][0].update(change)
    with pytest.raises(jsonschema.ValidationError) as refused:
        jsonschema.validate(data, pipeline_schema())
    assert list(refused.value.absolute_path)[: len(path)] == path


def test_a_duration_is_seconds_or_text_in_the_schema() -> None:
    duration = pipeline_schema()["$defs"]["FreshnessConfig"]["properties"]["error_after"]  # type: ignore[index]
    for good in (3600, "90s", "2d"):
        jsonschema.validate(good, duration)


def test_the_schema_command_prints_it(tmp_path: Path) -> None:
    shown = cli_in_process("schema", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["title"] == "lakefresh pipeline"
