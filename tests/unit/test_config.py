"""Config: typed models, Jinja rendering, errors that name file, field, value and valid values.
No JVM here."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lakefresh.config import KeyStrategyConfig, PipelineConfig, load_config
from lakefresh.errors import ConfigError

GOOD = """
catalog: {name: cat, warehouse: ./wh}
tables:
  - name: customers
    source: {kind: files, path: data, format: csv, schema: {id: int, ts: timestamp}}
    strategy: {kind: scd1, keys: [id], date_column: ts}
  - name: sales.orders
    source: {kind: files, path: orders, format: parquet, layout: folder}
    strategy: {kind: none}
    depends_on: [customers]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pipeline.yml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def error_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text))
    return str(info.value)


def test_a_good_pipeline_becomes_typed_models(tmp_path):
    config = load_config(write(tmp_path, GOOD))
    assert isinstance(config, PipelineConfig)
    customers, orders = config.tables
    assert isinstance(customers.strategy, KeyStrategyConfig)
    assert customers.strategy.kind == "scd1" and customers.strategy.keys == ["id"]
    assert customers.source.schema_ == {"id": "int", "ts": "timestamp"}
    assert orders.strategy.kind == "none" and orders.source.completion_marker == "_SUCCESS"
    assert config.qualified(customers) == "default.customers"
    assert config.qualified(orders) == "sales.orders"


def test_jinja_renders_env_and_vars(tmp_path, monkeypatch):
    monkeypatch.setenv("LANDING", "/mnt/landing")
    path = write(tmp_path, GOOD.replace("path: data", "path: {{ env.LANDING }}/{{ var.feed }}"))
    config = load_config(path, {"feed": "crm"})
    assert config.tables[0].source.path == "/mnt/landing/crm"


def test_an_undefined_template_name_is_named(tmp_path):
    message = error_of(tmp_path, GOOD.replace("path: data", "path: {{ var.feed }}"))
    assert message.endswith(
        "pipeline.yml:5: the template uses var.feed, which is undefined; pass it with --var feed=VALUE"
    )


def test_unknown_fields_list_the_valid_ones(tmp_path):
    message = error_of(tmp_path, GOOD.replace("date_column: ts", "date_column: ts, colour: red"))
    assert "pipeline.yml: 1 error(s)" in message
    assert (
        "tables[0] (customers).strategy.colour: unknown field 'colour'; valid fields: date_column, "
        "dedupe, delete, drop_columns, event_time, event_time_column, event_time_rule, "
        "exclude_from_cdc, full_snapshots, history, keys, kind, null_event_times, offset_column, "
        "op_codes, op_column, output, snapshot_scope, soft_delete_column, surrogate_key, "
        "system_time_column, tombstone_retention, truncate, undated_deletes, when_matched, "
        "when_not_matched (got 'red')"
    ) in message


def test_an_unknown_strategy_lists_the_valid_kinds(tmp_path):
    message = error_of(tmp_path, GOOD.replace("kind: scd1", "kind: upsert"))
    assert message.splitlines()[1] == (
        "  tables[0] (customers).strategy: unknown kind 'upsert'; valid kinds: key, scd1, scd2, append, "
        "none, full, ledger, snapshot, timestamp, sequence, custom"
    )


def test_a_key_strategy_needs_keys(tmp_path):
    message = error_of(tmp_path, GOOD.replace("keys: [id], ", ""))
    assert message.splitlines()[1] == "  tables[0] (customers).strategy.keys: required, but missing"


def test_keys_must_be_declared_columns(tmp_path):
    message = error_of(tmp_path, GOOD.replace("keys: [id]", "keys: [customer_id]"))
    assert message.splitlines()[1] == (
        "  tables[0] (customers).strategy.keys[0]: column 'customer_id' is not in the source's schema; "
        "schema columns: id, ts"
    )


def test_bad_values_are_shown_with_the_valid_ones(tmp_path):
    message = error_of(tmp_path, GOOD.replace("format: csv", "format: xlsx"))
    assert message.splitlines()[1] == (
        "  tables[0] (customers).source.format: unknown value 'xlsx'; valid values: csv, parquet, json"
    )
    message = error_of(tmp_path, GOOD.replace("ts: timestamp", "ts: datetime"))
    assert "column 'ts' has unknown type 'datetime'; valid types:" in message


def test_dependencies_must_exist_and_not_cycle(tmp_path):
    message = error_of(tmp_path, GOOD.replace("depends_on: [customers]", "depends_on: [nope]"))
    assert message.splitlines()[1] == (
        "  tables[1] (sales.orders).depends_on[0]: unknown table 'nope'; tables: customers, sales.orders"
    )
    cyclic = GOOD.replace("strategy: {kind: scd1", "depends_on: [sales.orders]\n    strategy: {kind: scd1")
    assert "dependency cycle: customers -> sales.orders -> customers" in error_of(tmp_path, cyclic)


def test_duplicate_table_names(tmp_path):
    message = error_of(
        tmp_path, GOOD.replace("sales.orders", "customers").replace("depends_on: [customers]", "")
    )
    assert message.splitlines()[1] == (
        "  tables[1] (customers).name: table name 'customers' is used more than once"
    )


def test_invalid_yaml_names_the_line(tmp_path):
    message = error_of(tmp_path, "tables:\n  - name: [unclosed\n")
    assert "pipeline.yml:3: invalid YAML" in message or "pipeline.yml:2: invalid YAML" in message


def test_a_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="pipeline file not found"):
        load_config(tmp_path / "nope.yml")


def test_validate_never_imports_pyspark(tmp_path):
    path = write(tmp_path, GOOD)
    (tmp_path / "data").mkdir()
    (tmp_path / "orders").mkdir()
    code = (
        "import sys; from lakefresh.cli import app; "
        "from typer.testing import CliRunner; "
        f"r = CliRunner().invoke(app, ['validate', {str(path)!r}]); "
        "print(r.output); assert r.exit_code == 0; "
        "assert 'pyspark' not in sys.modules, 'pyspark was imported'"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "valid (2 table(s): customers, sales.orders)" in proc.stdout


@pytest.mark.parametrize(
    ("strategy", "message"),
    [
        ("{kind: ledger}", "keys"),
        ("{kind: snapshot, keys: [id], op_column: event_time}", "must differ"),
        ("{kind: snapshot, keys: [op]}", "clash with the log's system columns"),
        ("{kind: timestamp}", "column"),
        ("{kind: custom, delete_when: 'this.id = sum(input.id)'}", "delete_when uses an aggregate"),
        ("{kind: custom, delete_when: 'true', append_filter: 'this.id > 0'}", "qualifies column 'id'"),
        ("{kind: sequence, column: missing}", "strategy.column: column 'missing' is not in the source's"),
    ],
)
def test_new_strategies_are_validated_before_spark(tmp_path, strategy, message):
    text = f"""
    tables:
      - name: t
        source: {{kind: files, path: d, format: csv, schema: {{id: int, op: string}}}}
        strategy: {strategy}
    """
    assert message in error_of(tmp_path, text)


DIMENSIONAL = """
catalog: {name: cat, warehouse: ./wh}
tables:
  - name: sales
    source: {kind: files, path: sales, format: csv}
    strategy: {kind: append}
    lookups:
      - {dimension: customers, keys: {cust: id}, at: sold_at}
  - name: customers
    source: {kind: files, path: customers, format: csv, schema: {id: int, city: string, ts: timestamp}}
    strategy:
      kind: key
      keys: [id]
      date_column: ts
      history: true
      surrogate_key: {column: customer_sk}
"""


def test_key_history_brings_an_scd2_table_over_the_same_source(tmp_path):
    config = load_config(write(tmp_path, DIMENSIONAL.replace(", at: sold_at", "")))
    history = config.table("customers_history")
    assert history.strategy.kind == "scd2"
    assert history.strategy.keys == ["id"] and history.strategy.sequence_by == "ts"
    assert history.source == config.table("customers").source
    # a fact is refreshed after the dimensions it looks up, wherever it stands in the file
    from lakefresh.config.graph import dependency_order

    assert [t.name for t in dependency_order(config.tables)] == ["customers", "sales", "customers_history"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("dimension: customers,", "dimension: nope,"), "no such table in the pipeline"),
        (("{cust: id}", "{cust: city}"), "`keys` must map a fact column to each of ['id']"),
        (("      surrogate_key: {column: customer_sk}\n", ""), "the dimension has no surrogate_key"),
        ((", at: sold_at", ", at: sold_at"), "`at` is only for scd2 dimensions, not 'key'"),
    ],
)
def test_lookups_name_a_dimension_with_a_surrogate_key_and_all_its_keys(tmp_path, change, message):
    assert message in error_of(tmp_path, DIMENSIONAL.replace(*change))


def test_intervals_read_as_seconds():
    import typer

    from lakefresh.cli import parse_interval

    assert [parse_interval(t) for t in ("90", "90s", "500ms", "5m", "1h")] == [90, 90, 0.5, 300, 3600]
    with pytest.raises(typer.BadParameter, match="positive duration"):
        parse_interval("soon")


def test_a_maintenance_policy_reads_durations_and_refuses_orphan_removal_under_a_day(tmp_path):
    policy = "defaults: {maintenance: {expire_after: 2d, keep_snapshots: 5}}\n"
    config = load_config(write(tmp_path, GOOD + policy))
    chosen = config.maintenance_for(config.tables[0])
    assert (chosen.expire_after, chosen.keep_snapshots, chosen.remove_orphans_after) == (172800, 5, 259200)
    message = error_of(
        tmp_path,
        GOOD.replace(
            "strategy: {kind: none}", "strategy: {kind: none}\n    maintenance: {remove_orphans_after: 1h}"
        ),
    )
    assert "tables[1] (sales.orders).maintenance.remove_orphans_after: must be at least 1d" in message


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        (
            "[{name: r, action: warn}]",
            "rule 'r' needs exactly one of `row` (a condition), `batch` (a query), or one test",
        ),
        (
            "[{name: r, batch: SELECT true, action: drop}]",
            "a batch rule can warn or fail; only a row rule can drop",
        ),
        ("[{name: r, row: 'amount >'}]", "row is not a valid SQL expression"),
        ("[{name: r, row: x > 0}, {name: r, row: x < 9}]", "rule names must be distinct; used twice: ['r']"),
        ("[{name: r, row: x > 0, action: stop}]", "valid values: warn, drop, fail"),
    ],
)
def test_rules_are_validated_before_spark(tmp_path, rules, message):
    text = GOOD.replace("strategy: {kind: none}", f"strategy: {{kind: none}}\n    rules: {rules}")
    assert message in error_of(tmp_path, text)


def test_the_table_format_comes_from_the_table_else_the_catalog_and_the_history_table_follows(tmp_path):
    text = GOOD.replace(
        "strategy: {kind: scd1, keys: [id], date_column: ts}",
        "strategy: {kind: scd1, keys: [id], date_column: ts, history: true}\n    format: delta",
    )
    config = load_config(write(tmp_path, text))
    assert config.delta_tables() == {"default.customers", "default.customers_history"}
    everything = load_config(
        write(tmp_path, text.replace("warehouse: ./wh}", "warehouse: ./wh, format: delta}"))
    )
    assert everything.format_of(everything.table("sales.orders")) == "delta"


@pytest.mark.parametrize(
    ("layout", "message"),
    [
        ("partition_by: [days(ts)]", "a Delta table partitions by plain columns, not 'days(ts)'"),
        ("sort_by: [id]", "sort_by is Iceberg's write order; a Delta table has none"),
    ],
)
def test_a_delta_table_refuses_iceberg_only_layouts(tmp_path, layout, message):
    text = GOOD.replace(
        "    depends_on: [customers]", f"    depends_on: [customers]\n    format: delta\n    {layout}"
    )
    assert message in error_of(tmp_path, text)


def test_nested_types_are_checked_member_by_member(tmp_path):
    from lakefresh.config.types import type_problem

    good = [
        "struct<city: string, zip: int>",
        "array<struct<`my col`: decimal(10, 2)>>",
        "map<string, array<int>>",
    ]
    assert [type_problem(t) for t in good] == [None, None, None]
    assert type_problem("array<foo>") == "unknown type 'foo'"
    assert type_problem("struct<a: int, A: int>") == "field 'a' is named twice"
    assert type_problem("map<string>") == "map<...> takes a key type and a value type"
    assert type_problem("array<int") == "unknown type 'array<int'"
    message = error_of(tmp_path, GOOD.replace("ts: timestamp", "ts: 'struct<a: int, b>'"))
    assert "column 'ts' has type 'struct<a: int, b>': 'b' is not `name: type`; valid types:" in message


@pytest.mark.parametrize(
    ("limit", "bad", "rows", "refused"),
    [
        (None, 3, 3, True),  # every row bad: refused by default
        (None, 2, 3, False),
        (None, 0, 0, False),
        (0, 1, 100, True),
        (5, 5, 6, False),
        (5, 6, 6, True),
        (0.5, 2, 4, False),
        (0.5, 3, 4, True),
        (1.0, 4, 4, False),  # loads what it can, whatever the number
    ],
)
def test_max_bad_rows_is_a_count_or_a_fraction(limit, bad, rows, refused):
    from lakefresh.config.models import TableConfig

    table = TableConfig.model_validate(
        {
            "name": "t",
            "source": {"kind": "files", "path": "in", "format": "csv"},
            "strategy": {"kind": "append"},
            "max_bad_rows": limit,
        }
    )
    assert (table.too_many_bad_rows(bad, rows) is not None) == refused


@pytest.mark.parametrize("limit", [-1, 1.5, True, "lots"])
def test_max_bad_rows_refuses_what_is_neither_a_count_nor_a_fraction(limit):
    from pydantic import ValidationError

    from lakefresh.config.models import TableConfig

    with pytest.raises(ValidationError, match="max_bad_rows"):
        TableConfig.model_validate(
            {
                "name": "t",
                "source": {"kind": "files", "path": "in", "format": "csv"},
                "strategy": {"kind": "append"},
                "max_bad_rows": limit,
            }
        )
