"""`lakefresh validate` catches what a run would stop at, without a JVM. Each error is one line:
the field as a path that follows the file (tables numbered and named as written), what is wrong
in plain words, the valid values and a near miss."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lakefresh.config import load_config
from lakefresh.config.loader import validate_pipeline
from lakefresh.errors import ConfigError

CUSTOMERS = """
  - name: customers
    source:
      kind: files
      path: customers
      format: csv
      schema: {customer_id: int, name: string, updated_at: timestamp}
    strategy: {kind: key, keys: [customer_id], date_column: updated_at}
"""


def write(tmp_path: Path, text: str, folders: tuple[str, ...] = ("customers", "orders")) -> Path:
    for folder in folders:
        (tmp_path / folder).mkdir(exist_ok=True)
    path = tmp_path / "pipeline.yml"
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def errors(tmp_path: Path, text: str, folders: tuple[str, ...] = ("customers", "orders")) -> list[str]:
    """The error lines `lakefresh validate` prints for the pipeline, without the header."""
    with pytest.raises(ConfigError) as caught:
        validate_pipeline(write(tmp_path, text, folders))
    header, *lines = str(caught.value).splitlines()
    assert header == f"{tmp_path / 'pipeline.yml'}: {len(lines)} error(s) in the pipeline"
    return [line.removeprefix("  ") for line in lines]


def valid(tmp_path: Path, text: str) -> None:
    validate_pipeline(write(tmp_path, text))


def tables(*entries: str, head: str = "") -> str:
    return head + "tables:" + "".join(entries)


# --- catalog type and master URL -------------------------------------------------------------------


def test_an_unknown_catalog_type_lists_the_valid_ones(tmp_path):
    assert errors(tmp_path, tables(CUSTOMERS, head="catalog: {type: hadop}\n")) == [
        "catalog.type: unknown catalog type 'hadop'; did you mean 'hadoop'? valid types: bigquery, glue, "
        "hadoop, hive, jdbc, nessie, rest"
    ]


@pytest.mark.parametrize("kind", ["hadoop", "hive", "rest", "jdbc", "glue", "nessie", "bigquery", "Hive"])
def test_every_catalog_type_iceberg_builds_is_valid(tmp_path, kind):
    valid(tmp_path, tables(CUSTOMERS, head=f"catalog: {{type: {kind}}}\n"))


MASTER_FORMS = (
    "valid forms: local, local[N], local[*], local[N,F], local-cluster[N,C,M], spark://HOST:PORT "
    "(several masters: spark://HOST1:PORT1,HOST2:PORT2), yarn, k8s://..., mesos://..."
)


@pytest.mark.parametrize(
    ("master", "message"),
    [
        ("local[two]", "not a Spark master URL: 'local[two]'; did you mean 'local[*]'? "),
        ("yarm", "not a Spark master URL: 'yarm'; did you mean 'yarn'? "),
        ("Local[2]", "not a Spark master URL: 'Local[2]'; did you mean 'local[2]'? "),
        ("local[0]", "'local[0]' runs no thread; use local[N] with N >= 1; "),
        (
            "spark://m1:7077,m2",
            "'spark://m1:7077,m2': spark:// takes HOST:PORT for each master, e.g. spark://master:7077 "
            "(got 'm2'); ",
        ),
    ],
)
def test_a_malformed_master_url_shows_the_valid_forms(tmp_path, master, message):
    text = tables(CUSTOMERS, head=f'spark: {{master: "{master}"}}\n')
    assert errors(tmp_path, text) == [f"spark.master: {message}{MASTER_FORMS}"]


@pytest.mark.parametrize(
    "master",
    [
        "local",
        "local[4]",
        "local[*]",
        "local[2,3]",
        "local[*, 4]",
        "local-cluster[2, 1, 1024]",
        "spark://master:7077",
        "spark://m1:7077,m2.example.com:7077",
        "yarn",
        "k8s://https://k8s.example.com:443",
        "mesos://zk://zk1:2181/mesos",
    ],
)
def test_every_master_url_spark_takes_is_valid(tmp_path, master):
    valid(tmp_path, tables(CUSTOMERS, head=f'spark: {{master: "{master}"}}\n'))


def test_a_malformed_master_in_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("LAKEFRESH_SPARK_MASTER", "yarn-cluster")
    assert errors(tmp_path, tables(CUSTOMERS)) == [
        "LAKEFRESH_SPARK_MASTER (overrides spark.master): 'yarn-cluster' is gone since Spark 2: use yarn "
        f"(and spark.submit.deployMode for the mode); {MASTER_FORMS}"
    ]


# --- partition transforms -----------------------------------------------------------------------

TRANSFORM_FORMS = (
    "valid: a column, years(col), months(col), days(col), hours(col), bucket(N, col), "
    "truncate(N, col) (also identity, year, month, date, hour, date_hour)"
)


def test_an_unknown_partition_transform_is_named_with_a_near_miss(tmp_path):
    text = tables(CUSTOMERS + '    partition_by: [customer_id, "day(updated_at)", "bucket(customer_id)"]\n')
    assert errors(tmp_path, text) == [
        f"tables[0] (customers).partition_by[1]: unknown partition transform 'day'; did you mean 'days'? "
        f"{TRANSFORM_FORMS}",
        "tables[0] (customers).partition_by[2]: bucket() takes a number and a column, e.g. bucket(16, id); "
        "got 'bucket(customer_id)'",
    ]


def test_a_partition_column_must_be_in_the_declared_schema(tmp_path):
    text = tables(CUSTOMERS + '    partition_by: ["days(updated)"]\n')
    assert errors(tmp_path, text) == [
        "tables[0] (customers).partition_by[0]: partition column 'updated' is not in the source's schema; "
        "did you mean 'updated_at'? schema columns: customer_id, name, updated_at"
    ]


def test_a_transform_that_yaml_split_at_its_comma_is_one_transform(tmp_path):
    # in YAML's flow style, [bucket(16, customer_id)] is two items: `bucket(16` and `customer_id)`
    path = write(tmp_path, tables(CUSTOMERS + "    partition_by: [bucket(16, customer_id), name]\n"))
    assert validate_pipeline(path).tables[0].partition_by == ["bucket(16, customer_id)", "name"]


def test_partition_transforms_iceberg_takes_are_valid(tmp_path):
    transforms = [
        "name",
        "`name`",
        "days(updated_at)",
        "DAYS(updated_at)",
        "years(updated_at)",
        "month(updated_at)",
        "date(updated_at)",
        "hours(updated_at)",
        "date_hour(updated_at)",
        "identity(name)",
        "bucket(16, customer_id)",
        "truncate(4, name)",
        "truncate(name, 4)",
        "bucket(8, customer_sk)",  # a column the strategy adds
        "_lf_batch_id",  # a column lakefresh adds
    ]
    dimension = CUSTOMERS.replace(
        "date_column: updated_at}", "date_column: updated_at, surrogate_key: {column: customer_sk}}"
    )
    valid(tmp_path, tables(dimension + f"    partition_by: {transforms}\n".replace("'", '"')))


def test_sort_terms_are_written_as_iceberg_describes_them(tmp_path):
    text = tables(
        CUSTOMERS + "    sort_by: [customer_id, updated_at desc, bucket(16, name) asc nulls last]\n"
    )
    assert validate_pipeline(write(tmp_path, text)).tables[0].sort_by == [
        "customer_id ASC NULLS FIRST",
        "updated_at DESC NULLS LAST",
        "bucket(16, name) ASC NULLS LAST",
    ]


def test_a_bad_sort_term_or_sort_column_is_named(tmp_path):
    text = tables(CUSTOMERS + '    sort_by: ["day(updated_at)", "updated desc", "name upward"]\n')
    assert errors(tmp_path, text) == [
        f"tables[0] (customers).sort_by[0]: unknown sort term 'day'; did you mean 'days'? {TRANSFORM_FORMS}",
        f"tables[0] (customers).sort_by[2]: 'name upward' is not a sort term; {TRANSFORM_FORMS}",
    ]
    text = tables(CUSTOMERS + '    sort_by: ["updated desc"]\n')
    assert errors(tmp_path, text) == [
        "tables[0] (customers).sort_by[0]: sort column 'updated' is not in the source's schema; "
        "did you mean 'updated_at'? schema columns: customer_id, name, updated_at"
    ]


# --- SQL syntax ---------------------------------------------------------------------------------

ORDERS = """
  - name: orders
    source: {kind: files, path: orders, format: csv, schema: {order_id: int, region: string, amount: int}}
"""


def test_a_syntax_error_in_a_transform_names_line_column_and_token(tmp_path):
    text = tables(
        ORDERS + "    strategy: {kind: append}\n    transform:\n      sql: |\n"
        "        SELECT *\n        FORM batch\n"
    )
    assert errors(tmp_path, text) == [
        "tables[0] (orders).transform.sql: syntax error at line 2, column 6, near 'batch' "
        "(got 'SELECT *\\nFORM batch\\n')"
    ]


def test_a_transform_is_one_select(tmp_path):
    text = tables(ORDERS + "    strategy: {kind: append}\n    transform: {sql: 'DROP TABLE batch'}\n")
    assert errors(tmp_path, text) == [
        "tables[0] (orders).transform.sql: the SQL must be one SELECT query over the view `batch`, not DROP "
        "(got 'DROP TABLE batch')"
    ]


def test_syntax_errors_in_custom_expressions(tmp_path):
    strategy = (
        '    strategy: {kind: custom, delete_when: "this.region = = input.region", '
        'append_filter: "amount > \'x"}\n'
    )
    assert errors(tmp_path, tables(ORDERS + strategy)) == [
        "tables[0] (orders).strategy.delete_when: delete_when is not a valid SQL expression: syntax error "
        "at line 1, column 15, near '=': the expression is incomplete there "
        "(got 'this.region = = input.region')",
        "tables[0] (orders).strategy.append_filter: append_filter is not a valid SQL expression: syntax "
        'error: a quote (\', " or `) or a comment (/*) is not closed (got "amount > \'x")',
    ]


def test_a_syntax_error_in_a_delete_condition(tmp_path):
    strategy = "    strategy: {kind: key, keys: [order_id], delete: {condition: \"region IN ('x'\"}}\n"
    assert errors(tmp_path, tables(ORDERS + strategy)) == [
        "tables[0] (orders).strategy.delete.condition: the condition is not a valid SQL expression: syntax "
        "error at line 1, column 12, near \"'x'\": expected ')' (got \"region IN ('x'\")"
    ]


# --- key and lookup columns against a declared schema ------------------------------------------


def test_key_columns_missing_from_the_schema_name_a_near_miss(tmp_path):
    text = tables(CUSTOMERS.replace("keys: [customer_id], date_column: updated_at", "keys: [customerid]"))
    assert errors(tmp_path, text) == [
        "tables[0] (customers).strategy.keys[0]: column 'customerid' is not in the source's schema; "
        "did you mean 'customer_id'? schema columns: customer_id, name, updated_at"
    ]


LOOKUP = """
    lookups:
      - {dimension: customers, keys: {cust: customer_id}, at: sold}
"""
DIMENSION = CUSTOMERS.replace("kind: key,", "kind: scd2,").replace(
    "date_column: updated_at}", "sequence_by: updated_at, surrogate_key: {column: customer_sk}}"
)
SALES = """
  - name: sales
    source: {kind: files, path: orders, format: csv, schema: {sale_id: int, customer: int, sold_at: date}}
    strategy: {kind: append}
"""


def test_lookup_columns_missing_from_the_schema_name_a_near_miss(tmp_path):
    assert errors(tmp_path, tables(DIMENSION, SALES + LOOKUP)) == [
        "tables[1] (sales).lookups[0].keys.cust: column 'cust' is not in the source's schema; "
        "did you mean 'customer'? schema columns: sale_id, customer, sold_at",
        "tables[1] (sales).lookups[0].at: column 'sold' is not in the source's schema; "
        "did you mean 'sold_at'? schema columns: sale_id, customer, sold_at",
    ]
    fixed = LOOKUP.replace("cust:", "customer:").replace("sold}", "sold_at}")
    valid(tmp_path, tables(DIMENSION, SALES + fixed))


def test_columns_are_not_checked_where_they_are_not_known_before_a_read(tmp_path):
    # a transform makes its own columns; a source without a schema, or a change feed, tells
    # them only when read; `_lf_` columns are lakefresh's own
    transformed = ORDERS + "    transform: {sql: 'SELECT *, 1 AS made FROM batch'}\n"
    valid(tmp_path, tables(transformed + "    strategy: {kind: key, keys: [made]}\n"))
    files = "{kind: files, path: orders, format: csv}"
    valid(tmp_path, tables(f"\n  - {{name: o, source: {files}, strategy: {{kind: key, keys: [x]}}}}"))
    feed = "{kind: table_changes, table: crm.accounts}"  # its deletes: `_lf_change_type = 'DELETE'`
    valid(tmp_path, tables(f"\n  - {{name: c, source: {feed}, strategy: {{kind: key, keys: [id]}}}}"))
    synapse = "{kind: synapse_link, path: orders, entity: account}"  # its deletes: IsDelete
    valid(tmp_path, tables(f"\n  - {{name: a, source: {synapse}, strategy: {{kind: scd2, keys: [Id]}}}}"))
    lakefresh_own = "    strategy: {kind: key, keys: [order_id], delete: {column: _lf_gone}}\n"
    valid(tmp_path, tables(ORDERS + lakefresh_own))


def test_a_transform_is_checked_against_the_declared_schema_and_the_keys_against_its_columns(tmp_path):
    """A typo in a transform over the declared schema is named with its near miss (lakefresh's
    `_lf_` columns never offered); the keys are checked against what the SQL makes."""
    typo = ORDERS + "    transform: {sql: 'SELECT b.order_id, b.ammount FROM batch b'}\n"
    assert errors(tmp_path, tables(typo + "    strategy: {kind: append}\n")) == [
        "tables[0] (orders).transform.sql: the SQL names column 'ammount', which the view batch does "
        "not have; did you mean 'amount'? batch's columns (the source's schema): order_id, region, amount"
    ]
    renamed = ORDERS + "    transform: {sql: 'SELECT order_id AS id, amount FROM batch'}\n"
    assert errors(tmp_path, tables(renamed + "    strategy: {kind: key, keys: [order_id]}\n")) == [
        "tables[0] (orders).strategy.keys[0]: column 'order_id' is not in the transform's columns; "
        "transform columns: id, amount"
    ]


def test_validate_warns_of_the_columns_it_cannot_know(tmp_path):
    """A source without a schema, or a transform that reads another view, is checked when a
    batch is read: `validate` says so instead of passing it in silence."""
    files = "{kind: files, path: orders, format: csv}"
    joined = (
        ORDERS
        + "    transform: {sql: 'SELECT b.* FROM batch b JOIN customers c ON b.order_id = c.customer_id',"
        + " views: {customers: customers}}\n    strategy: {kind: append}\n"
    )
    path = write(
        tmp_path, tables(CUSTOMERS, joined, f"\n  - {{name: o, source: {files}, strategy: {{kind: append}}}}")
    )
    shown = subprocess.run(
        [sys.executable, "-m", "lakefresh", "validate", str(path), "--output", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(shown.stdout)["warnings"] == [
        "tables[1] (orders).transform.sql: reads views or tables whose columns are known only when it "
        "runs: its columns are checked then",
        "tables[2] (o): its source declares no schema: its columns (keys, transform) are known, and "
        "checked, only when a batch is read",
    ]


# --- source folders -----------------------------------------------------------------------------


def test_a_source_folder_that_does_not_exist(tmp_path):
    text = tables(CUSTOMERS, ORDERS + "    strategy: {kind: append}\n")
    assert errors(tmp_path, text, folders=("orders",)) == [
        f"tables[0] (customers).source.path: source folder {tmp_path.resolve()}/customers does not exist"
    ]
    # a run reports it when it reads the table (with the same words); loading is not stopped
    assert [t.name for t in load_config(tmp_path / "pipeline.yml").tables] == ["customers", "orders"]


def test_a_synapse_link_export_that_does_not_exist(tmp_path):
    synapse = "{kind: synapse_link, path: /nonexistent/export, entity: account}"
    text = tables(f"\n  - {{name: accounts, source: {synapse}, strategy: {{kind: key, keys: [Id]}}}}")
    assert errors(tmp_path, text) == [
        "tables[0] (accounts).source.path: Synapse Link export /nonexistent/export does not exist"
    ]


def test_folders_behind_a_uri_are_not_checked_here(tmp_path):
    valid(tmp_path, tables(CUSTOMERS.replace("path: customers", "path: s3a://lake/landing/customers")))


# --- positions as written, history tables, run --table ------------------------------------------

HISTORY = CUSTOMERS.replace("date_column: updated_at}", "date_column: updated_at, history: true}")


def test_positions_follow_the_file_as_written_not_the_history_tables_it_brings(tmp_path):
    orders = ORDERS + "    strategy: {kind: append, colour: red}\n    depends_on: [custmers]\n"
    assert errors(tmp_path, tables(HISTORY, orders)) == [
        "tables[1] (orders).strategy.colour: unknown field 'colour'; valid fields: event_time, "
        "event_time_column, kind, null_event_times, offset_column, op_codes, op_column, output, "
        "system_time_column "
        "(got 'red')"
    ]
    orders = ORDERS + "    strategy: {kind: append}\n    depends_on: [custmers]\n"
    assert errors(tmp_path, tables(HISTORY, orders)) == [
        "tables[1] (orders).depends_on[0]: unknown table 'custmers'; did you mean 'customers'? "
        "tables: customers, customers_history, orders"
    ]


def test_a_history_tables_problem_is_shown_once_at_the_table_that_brings_it(tmp_path):
    text = tables(HISTORY.replace("keys: [customer_id]", "keys: [customerid]"))
    assert errors(tmp_path, text) == [
        "tables[0] (customers).strategy.keys[0]: column 'customerid' is not in the source's schema; "
        "did you mean 'customer_id'? schema columns: customer_id, name, updated_at"
    ]
    taken = ORDERS.replace("name: orders", "name: customers_history") + "    strategy: {kind: append}\n"
    assert errors(tmp_path, tables(taken, HISTORY)) == [
        "tables[1] (customers, its history table customers_history).name: table name 'customers_history' "
        "is used more than once"
    ]


def lakefresh(*args: str, cwd: Path, first: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI in a process of its own; `first`: a folder its imports look in before any other."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(first), *sys.path])} if first else None
    return subprocess.run(
        [sys.executable, "-m", "lakefresh.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_run_of_an_unknown_table_stops_before_spark_starts(tmp_path):
    write(tmp_path, tables(HISTORY))
    # a pyspark that cannot be imported: the run must say what is wrong without it
    shim = tmp_path / "no_spark" / "pyspark"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text('raise ImportError("pyspark was imported")\n', encoding="utf-8")
    proc = lakefresh("run", "pipeline.yml", "--table", "customers_histroy", cwd=tmp_path, first=shim.parent)
    assert proc.returncode == 1
    assert proc.stderr == (
        "Error: unknown table 'customers_histroy'; did you mean 'customers_history'? "
        "tables: customers, customers_history\n"
    )
    # the same in one process: pyspark is never even imported
    code = (
        "import sys; from typer.testing import CliRunner; from lakefresh.cli import app; "
        "r = CliRunner().invoke(app, ['run', 'pipeline.yml', '--table', 'nosuch']); "
        "assert r.exit_code == 1, r.output; print(r.output.strip()); "
        "assert 'pyspark' not in sys.modules, 'pyspark was imported'"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "Error: unknown table 'nosuch'; tables: customers, customers_history"


def test_validate_prints_every_table(tmp_path):
    write(tmp_path, tables(HISTORY))
    proc = lakefresh("validate", "pipeline.yml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "pipeline.yml: valid (2 table(s): customers, customers_history)\n"


# --- no library internals in messages -----------------------------------------------------------

LEAKS = (
    "Input should",
    "Value error",
    "Field required",
    "errors.pydantic.dev",
    "pydantic",
    "sqlglot",
    "ParseError",
    "TokenError",
    "Invalid expression",
    "Required keyword",
    "<class",
    "jinja",
    "Jinja",
    "UndefinedError",
    "TemplateSyntaxError",
    "dict object",
)


@pytest.mark.parametrize(
    "text",
    [
        tables(CUSTOMERS, head="spark: {jars: 5, master: 3}\n"),
        tables(CUSTOMERS.replace("format: csv", "format: cvs")),
        tables(CUSTOMERS.replace("kind: key", "kind: upsert")),
        tables(CUSTOMERS.replace("kind: files", "path2: x")),
        tables(CUSTOMERS.replace("keys: [customer_id], ", "")),
        tables(CUSTOMERS.replace("name: customers", "name: 'a b'")),
        tables(ORDERS + "    strategy: {kind: custom, delete_when: 'this.a = sum(input.a'}\n"),
        tables(ORDERS + "    strategy: {kind: append}\n    transform: {sql: 'SELECT FROM WHERE'}\n"),
        "tables: []\n",
        "tables:\n  - 3\n",
        tables(CUSTOMERS.replace("path: customers", "path: {{ var.landing }}")),
        tables(CUSTOMERS.replace("path: customers", "path: {{ env.LAKEFRESH_TEST_NOPE }}")),
        tables(CUSTOMERS.replace("path: customers", "path: {{ landing }}")),
        tables(CUSTOMERS.replace("path: customers", "path: {{ var.landing")),
        tables(CUSTOMERS.replace("path: customers", "path: {{ 1 / 0 }}")),
    ],
)
def test_no_library_internals_reach_the_message(tmp_path, text):
    with pytest.raises(ConfigError) as caught:
        validate_pipeline(write(tmp_path, text))
    message = str(caught.value)
    assert not [leak for leak in LEAKS if leak in message], message


def test_template_names_that_are_not_set(tmp_path):
    def message(text: str) -> str:
        with pytest.raises(ConfigError) as caught:
            load_config(write(tmp_path, text))
        return str(caught.value).removeprefix(f"{tmp_path / 'pipeline.yml'}")

    path = "path: {{ env.LAKEFRESH_TEST_NOPE }}"
    assert message(tables(CUSTOMERS.replace("path: customers", path))) == (
        ":5: the template uses env.LAKEFRESH_TEST_NOPE, which is undefined; set the environment variable "
        "LAKEFRESH_TEST_NOPE, or give a default: env.get('LAKEFRESH_TEST_NOPE', 'default')"
    )
    assert message(tables(CUSTOMERS.replace("path: customers", "path: {{ landing }}"))) == (
        ":5: the template uses 'landing', which is undefined; the template knows env.NAME, var.NAME and "
        "watermark"
    )
    assert message(tables(CUSTOMERS.replace("path: customers", "path: {{ var.landing"))) == (
        ":6: template syntax error: expected token 'end of print statement', got 'format'"
    )


def test_errors_are_json_with_output_json(tmp_path):
    """Scripts read `--output json`: a failure is a JSON object too, not a red line."""
    write(tmp_path, tables(HISTORY))
    proc = lakefresh("run", "pipeline.yml", "--table", "nosuch", "--output", "json", cwd=tmp_path)
    assert proc.returncode == 1
    assert json.loads(proc.stdout) == {
        "ok": False,
        "error": "unknown table 'nosuch'; tables: customers, customers_history",
        "error_type": "ConfigError",
    }


def test_a_delta_change_feed_path_may_not_exist_yet(tmp_path):
    """The Delta table a `delta_changes` source reads may be a target this pipeline creates."""
    feed = "{kind: delta_changes, path: warehouse/shop/stock_levels, keys: [sku]}"
    valid(tmp_path, tables(f"\n  - {{name: changes, source: {feed}, strategy: {{kind: key, keys: [sku]}}}}"))


@pytest.mark.parametrize("kind", ["table_changes", "delta_changes"])
def test_a_change_feed_into_an_append_target_keeps_its_change_type_or_is_refused(tmp_path, kind):
    """Its deletes would otherwise be appended as rows like its inserts: the change type is a
    `_lf_` column, which is not stored."""
    feed = (
        "{kind: table_changes, table: shop.customers, keys: [id]}"
        if kind == "table_changes"
        else "{kind: delta_changes, path: warehouse/shop/stock_levels, keys: [id]}"
    )
    plain = f"\n  - {{name: changes, source: {feed}, strategy: {{kind: append}}}}"
    (problem,) = errors(tmp_path, tables(plain))
    assert "an append target of a change feed would store its deletes as rows" in problem
    keep = "{sql: 'SELECT *, _lf_change_type AS op FROM batch'}"
    valid(
        tmp_path,
        tables(f"\n  - {{name: changes, source: {feed}, transform: {keep}, strategy: {{kind: append}}}}"),
    )


def test_dbt_tests_as_rules_are_one_test_each_and_name_their_table(tmp_path):
    rule = "      - {name: r, unique: order_id, not_null: order_id}\n"
    both = ORDERS + "    strategy: {kind: append}\n    rules:\n" + rule
    assert "needs exactly one of" in errors(tmp_path, tables(both))[0]
    linked = ORDERS + (
        "    strategy: {kind: append}\n    rules:\n"
        "      - {name: r, relationships: {column: order_id, to: custmers, field: id}}\n"
    )
    assert errors(tmp_path, tables(CUSTOMERS, linked)) == [
        "tables[1] (orders).rules[0].relationships.to: unknown table 'custmers' (or give namespace.table); "
        "did you mean 'customers'? tables: customers, orders"
    ]


@pytest.mark.parametrize(
    ("catalog", "run", "target_format", "warned"),
    [
        ("{name: c}", "{lease: false}", "iceberg", True),
        ("{name: c}", "{lease: true}", "iceberg", False),
        (
            "{name: c, type: rest, properties: {uri: 'http://127.0.0.1:8181'}}",
            "{lease: false}",
            "iceberg",
            False,
        ),
        ("{name: c, control_format: delta}", "{lease: false}", "delta", False),  # Delta's own commits
    ],
)
def test_validate_warns_of_runs_without_a_lease_on_the_hadoop_catalog(catalog, run, target_format, warned):
    """Two processes' commits to one `hadoop` catalog can both land on one head (a check, then a
    rename that replaces): without the lease, nothing keeps two runs of a table apart there."""
    from lakefresh.config.checks import unleased_on_a_file_catalog
    from lakefresh.config.loader import parse, validate

    text = f"""
catalog: {catalog}
run: {run}
tables:
  - name: t
    format: {target_format}
    source: {{kind: files, path: in, format: csv, schema: {{id: int}}}}
    strategy: {{kind: append}}
"""
    found = unleased_on_a_file_catalog(validate(parse(text, "p.yml"), "p.yml"))
    assert bool(found) == warned
    assert all("keep the lease, or share a catalog with atomic commits" in line for line in found)
