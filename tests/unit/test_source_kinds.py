"""Each source kind has one home: its config model (name, options, capabilities) and its source
class (listing and reading), joined by a typed registry, as strategies are. The rest of lakefresh
asks a source's capabilities, never its kind's name. No Spark needed."""

from __future__ import annotations

from typing import get_args

import pytest
from pydantic import TypeAdapter

from lakefresh.config.sources import SOURCE_KINDS, SourceConfig
from lakefresh.sources import (
    SOURCES,
    FilesSource,
    ReadsMany,
    Reopening,
    SynapseLinkSource,
    TableChangesSource,
    Waits,
)

MODELS = get_args(SourceConfig)

EXAMPLES = {
    "files": {"kind": "files", "path": "in", "format": "csv"},
    "table_snapshot": {"kind": "table_snapshot", "table": "raw.orders"},
    "table_changes": {"kind": "table_changes", "table": "raw.orders"},
    "delta_changes": {"kind": "delta_changes", "path": "delta/orders"},
    "synapse_link": {"kind": "synapse_link", "path": "export", "entity": "account"},
    "jdbc": {
        "kind": "jdbc",
        "url": "jdbc:postgresql://db/shop",
        "query": "SELECT * FROM t WHERE m > {{ watermark }}",
        "watermark_column": "m",
        "initial_watermark": 0,
    },
}

# kind: change feed, retains its batches, replays files, location, table it reads
CAPABILITIES = {
    "files": (False, True, True, "in", None),
    "table_snapshot": (False, True, False, None, "raw.orders"),
    "table_changes": (True, False, False, None, "raw.orders"),
    "delta_changes": (True, False, False, "delta/orders", None),
    "synapse_link": (False, True, False, "export", None),
    "jdbc": (False, False, False, None, None),
}


def test_every_kind_a_pipeline_may_name_comes_from_the_config_union() -> None:
    assert tuple(k for m in MODELS for k in m.kinds()) == SOURCE_KINDS
    assert set(SOURCE_KINDS) == set(EXAMPLES) == set(CAPABILITIES)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.kinds()[0])
def test_every_config_model_has_one_source_class(model: type) -> None:
    source = SOURCES[model]
    assert source.config_type is model  # type: ignore[attr-defined]
    assert source.kind == model.kinds()[0]  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", SOURCE_KINDS)
def test_capabilities_are_declared_by_the_config_model(kind: str) -> None:
    config = TypeAdapter(SourceConfig).validate_python(EXAMPLES[kind])
    found = (
        config.change_feed,
        config.retains_batches,
        config.replays_files,
        config.location,
        config.read_table,
    )
    assert found == CAPABILITIES[kind]


def test_a_files_batch_is_timed_by_its_rows_only_with_a_batch_time_column() -> None:
    files = {**EXAMPLES["files"], "batch_time": {"column": "taken_at"}}
    assert TypeAdapter(SourceConfig).validate_python(files).timed_by_rows
    named = {**EXAMPLES["files"], "batch_time": {"name": "_(?P<time>[0-9]+)"}}
    assert not TypeAdapter(SourceConfig).validate_python(named).timed_by_rows


def test_optional_abilities_are_typed_protocols() -> None:
    assert issubclass(FilesSource, ReadsMany) and issubclass(FilesSource, Waits)
    assert issubclass(SynapseLinkSource, Waits) and not issubclass(SynapseLinkSource, ReadsMany)
    assert issubclass(TableChangesSource, Reopening) and not issubclass(FilesSource, Reopening)
