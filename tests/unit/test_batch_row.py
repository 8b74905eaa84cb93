"""A `batches` row (state/batch_row.py) has the log's columns, in the schema's order, and a row
built for a table carries its source kind and strategy (lakefresh's own for a verb's commit)."""

from __future__ import annotations

from dataclasses import fields

from lakefresh.config.models import TableConfig
from lakefresh.state.batch_row import VERB_SOURCE_KIND, BatchRow
from lakefresh.state.control import BATCHES_SCHEMA


def column_names(ddl: str) -> list[str]:
    """The top-level column names of a DDL column list (a type's own commas aside)."""
    names, depth, start = [], 0, 0
    for i, char in enumerate(ddl + ","):
        depth += {"<": 1, ">": -1}.get(char, 0)
        if char == "," and depth == 0:
            names.append(ddl[start:i].split()[0])
            start = i + 1
    return names


def test_a_batch_row_has_the_columns_of_the_batches_schema_in_its_order():
    assert [f.name for f in fields(BatchRow)] == column_names(BATCHES_SCHEMA.strip())


def table() -> TableConfig:
    return TableConfig.model_validate(
        {
            "name": "t",
            "source": {"kind": "files", "path": "in", "format": "csv"},
            "strategy": {"kind": "key", "keys": ["id"]},
        }
    )


def test_a_tables_row_names_its_source_kind_and_strategy_and_a_verbs_row_lakefresh():
    row = BatchRow.of_table("ns.t", table(), "b1.csv", "a1", "skipped", error="why")
    assert (row.table_name, row.batch_id, row.attempt, row.status) == ("ns.t", "b1.csv", "a1", "skipped")
    assert (row.source_kind, row.strategy, row.error, row.config) == ("files", "key", "why", None)
    verb = BatchRow.of_table("ns.t", table(), "lakefresh:maintain:1", "a2", "maintained", verb=True)
    assert (verb.source_kind, verb.strategy) == (VERB_SOURCE_KIND, "key")


def test_a_configured_row_carries_the_tables_configuration_fingerprint():
    row = BatchRow.of_table("ns.t", table(), "b1.csv", "a1", "staged", configured=True)
    assert row.config_fingerprint and row.config and "keys" in row.config


def test_a_row_from_a_carried_record_takes_its_columns_and_leaves_other_keys_out():
    record = {"attempt": "a1", "record_count": 3, "not_a_column": 1}
    row = BatchRow.from_record(record, table_name="ns.t", batch_id="b1.csv", status="published")
    assert (row.attempt, row.record_count, row.status) == ("a1", 3, "published")
    assert "not_a_column" not in row.columns()
