"""What shapes a table's result, as recorded with every batch: the strategy,
the transform, the lookups and how the source parses rows; not where or when batches are
taken, nor secrets."""

from __future__ import annotations

import yaml

from lakefresh.config.fingerprint import changes, fingerprint
from lakefresh.config.models import PipelineConfig

TABLE = """
tables:
  - name: t
    source:
      kind: files
      path: in
      pattern: "*.csv"
      format: csv
      schema: {id: int, v: string}
    strategy: {kind: key, keys: [id]}
"""


def table(text: str = TABLE, **replacements: str):
    for old, new in replacements.items():
        text = text.replace(old, new)
    return PipelineConfig.model_validate(yaml.safe_load(text)).tables[0]


def test_where_and_when_batches_are_taken_is_not_part_of_it():
    moved = table(**{"path: in": "path: elsewhere", '"*.csv"': '"*.txt"'})
    assert fingerprint(moved) == fingerprint(table())


def test_a_changed_key_or_column_type_is_named():
    before, now = (
        fingerprint(table())[1],
        fingerprint(table(**{"keys: [id]": "keys: [id, v]", "v: string": "v: int"}))[1],
    )
    assert changes(before, now) == [
        "source.schema.v: 'string' -> 'int'",
        "strategy.keys: ['id'] -> ['id', 'v']",
    ]


def test_a_declared_column_added_is_schema_evolution_not_a_change():
    grown = table(**{"v: string}": "v: string, w: int}"})
    assert fingerprint(grown) != fingerprint(table())
    assert changes(fingerprint(table())[1], fingerprint(grown)[1]) == []


def test_no_secret_in_the_recorded_settings():
    jdbc = """
tables:
  - name: t
    source:
      kind: jdbc
      url: "jdbc:postgresql://db/shop?password=pw-in-url-77"
      password: pw-field-88
      query: SELECT * FROM t WHERE m > {{ watermark }}
      watermark_column: m
      initial_watermark: 0
    strategy: {kind: key, keys: [id]}
"""
    text = fingerprint(table(jdbc))[1]
    assert "pw-in-url-77" not in text and "pw-field-88" not in text
    assert "SELECT * FROM t WHERE m > {{ watermark }}" in text  # the query shapes rows


def test_a_snapshot_table_moving_from_recorded_to_derived_re_sends_keeps_its_result_but_not_back():
    # a full-snapshot scd2 table whose batches stored their re-sent rows (`record`, the default
    # before `derive`) gives the same history under `derive`, which reads them as its own; a
    # table written under `derive` holds no re-sends for `record` to re-cut history from
    snapshot = "{kind: scd2, keys: [id], full_snapshots: true, resent_rows: %s}"
    record, derive = (
        fingerprint(table(**{"{kind: key, keys: [id]}": snapshot % mode}))[1] for mode in ("record", "derive")
    )
    unset = derive.replace(',"resent_rows":"derive"', "")
    assert changes(record, derive) == []
    assert changes(unset, derive) == []
    assert changes(derive, record) == ["strategy.resent_rows: 'derive' -> 'record'"]
