"""Synapse Link without Spark: model.json reading and type mapping, the config, which folders
a target's lineage covers, and the generator's value text."""

from __future__ import annotations

import json
import textwrap
from datetime import datetime

import pytest

from lakefresh.config import load_config
from lakefresh.errors import ConfigError, SourceError
from lakefresh.sources import cdm
from lakefresh.sources.synapse_folders import covered_until, folder_time
from lakefresh.synapse_export import SynapseExport, entity_attributes


def test_model_json_gives_columns_in_file_order_and_spark_types(tmp_path):
    export = SynapseExport(tmp_path)
    attributes = entity_attributes(("amount", "decimal"), ("at", "dateTimeOffset"), ("slot", "time"))
    export.write_folder("2025-01-01T10.00.00Z", {"Account": attributes}, {})
    entities = cdm.read_model((tmp_path / "2025-01-01T10.00.00Z" / "model.json").read_text(), "m")
    account = entities["account"]
    assert account.columns == [
        "Id", "SinkCreatedOn", "SinkModifiedOn", "amount", "at", "slot", "versionnumber", "IsDelete"
    ]  # fmt: skip
    assert [a.spark_type for a in account.attributes] == [
        "string", "timestamp", "timestamp", "decimal(38,18)", "timestamp", "string", "bigint", "boolean"
    ]  # fmt: skip


TWICE = {"name": "x", "dataType": "string"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not a readable model.json"),
        (json.dumps({"entities": [{"name": "a"}]}), "'attributes'"),
        (
            json.dumps(
                {"entities": [{"name": "a", "attributes": [{"name": "x", "dataType": "string"}] * 2}]}
            ),
            "must name each attribute once",
        ),
    ],
)
def test_an_unreadable_model_json_is_named(text, message):
    with pytest.raises(SourceError, match=message):
        cdm.read_model(text, "export/2025-01-01T10.00.00Z/model.json")


def test_published_batches_cover_folders_and_backfills():
    assert covered_until([]) is None
    assert covered_until(["2025-01-01T10.00.00Z", "2025-01-01T09.00.00Z"]) == "2025-01-01T10.00.00Z"
    backfill = "backfill@2025-01-01T08.00.00Z..2025-01-01T12.00.00Z"
    assert covered_until(["2025-01-01T10.00.00Z", backfill, "other"]) == "2025-01-01T12.00.00Z"
    assert folder_time("2025-01-01T10.05.30Z") == datetime(2025, 1, 1, 10, 5, 30)


def pipeline(tmp_path, source: str, strategy: str = "{kind: key, keys: [Id]}"):
    path = tmp_path / "p.yml"
    text = f"""
    tables:
      - name: account
        source: {source}
        strategy: {strategy}
    """
    path.write_text(textwrap.dedent(text))
    return load_config(path)


def test_the_source_config_reads_durations_and_injects_the_delete_rule(tmp_path):
    config = pipeline(tmp_path, "{kind: synapse_link, path: x, entity: account, look_back_interval: 2h}")
    table = config.tables[0]
    assert table.source.look_back_interval == 7200
    assert table.strategy.delete.column == "IsDelete"
    with pytest.raises(ConfigError, match="positive duration"):
        pipeline(tmp_path, "{kind: synapse_link, path: x, entity: account, look_back_interval: soon}")


def test_an_overwriting_backfill_may_not_renumber_sequence_keys(tmp_path):
    keyed = "{kind: key, keys: [Id], surrogate_key: {column: sk, generator: sequence}}"
    with pytest.raises(ConfigError, match="would renumber its sequence surrogate keys"):
        pipeline(tmp_path, "{kind: synapse_link, path: x, entity: account}", keyed)
    merged = "{kind: synapse_link, path: x, entity: account, backfill_behavior: merge}"
    assert pipeline(tmp_path, merged, keyed).tables[0].source.backfill_behavior == "merge"


def test_the_generator_writes_values_as_synapse_does(tmp_path):
    export = SynapseExport(tmp_path)
    row = {
        "Id": "a",
        "SinkModifiedOn": datetime(2021, 6, 28, 16, 34, 35),
        "at": datetime(2018, 5, 25, 16, 21, 9),
        "IsDelete": False,
        "note": 'say "hi", then\nleave',
    }
    attributes = entity_attributes(("at", "dateTimeOffset"), ("note", "string"))
    export.write_folder("2025-01-01T10.00.00Z", {"t": attributes}, {"t": {"2025.csv": [row]}})
    text = (tmp_path / "2025-01-01T10.00.00Z" / "t" / "2025.csv").read_text()
    assert text == (
        '"a",,"6/28/2021 4:34:35 PM","2018-05-25T16:21:09.0000000+00:00","say ""hi"", then\nleave",,"False"\n'
    )
