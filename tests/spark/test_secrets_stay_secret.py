"""Secrets stay secret: a pipeline that fails while it holds known passwords
(in its JDBC URL, and rendered from the environment) shows none of them in any output (the CLI's
text and `--output json`, the API's result, what the process printed, Spark's log included) nor
in any row of any control table; the error still says what went wrong.

The failure is one a user meets: a `jdbc` batch failed once, and when it is retried (with the
boundaries it had) the database table is gone, so reading it fails inside the batch, with the
URL in the message, and the batch's row in `batches` records the error.

`--debug` prints the whole trace (the exception's message, its cause chain, the JVM's stack
text): it masks the same secrets as the one-line error."""

from __future__ import annotations

import json

import pytest

from tests.conftest import CATALOG, cli_in_process, settings_kept

URL_PASSWORD = "url-pw-0d9e71"
ENV_PASSWORD = "env-pw-5c1a2f"
OPTION_PASSWORD = "opt-pw-4b7e"

TABLE = """
- name: orders
  source:
    kind: jdbc
    url: "{url}?user=lakefresh&password=url-pw-0d9e71"
    user: lakefresh
    password: "{{{{ env.LF_TEST_PGPASSWORD }}}}"
    options: {{sessionInitSql: "SET application_name = 'lakefresh'", password: opt-pw-4b7e}}
    query: SELECT id, modified_at FROM secret_orders WHERE modified_at > {{{{ watermark }}}}
    watermark_column: modified_at
    initial_watermark: 1970-01-01 00:00:00
  strategy: {{kind: key, keys: [id]}}
"""


def test_a_failing_pipeline_never_shows_its_passwords(ws, postgres, spark, monkeypatch, capfd):
    postgres.sql(
        "DROP TABLE IF EXISTS secret_orders; CREATE TABLE secret_orders (id int, modified_at timestamp); "
        "INSERT INTO secret_orders VALUES (1, '2025-01-01 10:00')"
    )
    monkeypatch.setenv("LF_TEST_PGPASSWORD", ENV_PASSWORD)
    p = ws.pipeline(TABLE.format(url=postgres.url))
    monkeypatch.setenv("LAKEFRESH_FAULTS", "after_read")
    assert not p.run().ok
    monkeypatch.delenv("LAKEFRESH_FAULTS")
    postgres.sql("DROP TABLE secret_orders")

    result = p.run()
    monkeypatch.setenv("LAKEFRESH_DEBUG", "0")  # --debug sets it for its process: put back after
    debug = cli_in_process("--debug", "run", "pipeline.yml", cwd=ws.root)
    text = cli_in_process("run", "pipeline.yml", cwd=ws.root)
    as_json = cli_in_process("run", "pipeline.yml", "--output", "json", cwd=ws.root)
    status = cli_in_process("status", "pipeline.yml", cwd=ws.root)
    printed = capfd.readouterr()

    assert (result.ok, text.returncode, as_json.returncode, debug.returncode) == (False, 1, 1, 1)
    assert "Traceback" in debug.stderr and 'relation "secret_orders" does not exist' in debug.stderr
    error = json.loads(as_json.stdout)["tables"][0]["error"]
    assert 'relation "secret_orders" does not exist' in error, error
    assert "password=***" in error, error

    controls = spark.sql(f"SHOW TABLES IN {CATALOG}.{ws.control_namespace}").collect()
    rows = [
        row[0]
        for table in controls
        for row in spark.sql(
            f"SELECT to_json(struct(*)) FROM {CATALOG}.{ws.control_namespace}.{table.tableName}"
        ).collect()
    ]
    assert sum('relation \\"secret_orders\\" does not exist' in row for row in rows) == 4, (
        rows
    )  # the API's run and three CLI runs
    outputs = {
        "api result": json.dumps(result.to_dict()),
        "cli text": text.stdout + text.stderr,
        "cli --debug": debug.stdout + debug.stderr,
        "cli json": as_json.stdout + as_json.stderr,
        "cli status": status.stdout + status.stderr,
        "stdout": printed.out,
        "stderr (Spark's log too)": printed.err,
        "control tables": "\n".join(rows),
    }
    for secret in (URL_PASSWORD, ENV_PASSWORD, OPTION_PASSWORD):
        leaks = [where for where, output in outputs.items() if secret in output]
        assert not leaks, f"{secret} shows in {leaks}"


CATALOG_PASSWORDS = ("cat-url-pw-61d3", "cat-param-pw-2a7c", "cat-jdbc-pw-9f04")


@pytest.mark.parametrize("debug", [[], ["--debug"]], ids=["plain", "debug"])
def test_an_unreachable_jdbc_catalog_never_shows_its_passwords(ws, spark, monkeypatch, debug):
    """An Iceberg JDBC catalog whose URI carries credentials in both forms (`user:pw@host` and
    `?password=pw`) and a `jdbc.password`, on a host nobody listens on: the run fails naming the
    catalog's failure, and no output (`--debug`'s trace included) shows a password."""
    url_pw, param_pw, jdbc_pw = CATALOG_PASSWORDS
    ws.write("in/b1.csv", "id,v\n1,a\n")
    (ws.root / "pipeline.yml").write_text(
        f"""
catalog:
  name: lf_unreachable
  type: jdbc
  warehouse: {ws.warehouse}
  properties:
    uri: "jdbc:postgresql://lf:{url_pw}@127.0.0.1:9/catalog?password={param_pw}"
    jdbc.user: lf
    jdbc.password: {jdbc_pw}
spark: {{master: "local[2]"}}
tables:
  - name: t
    source: {{kind: files, path: in, format: csv}}
    strategy: {{kind: append}}
""",
        encoding="utf-8",
    )
    monkeypatch.setenv("LAKEFRESH_DEBUG", "0")  # --debug sets it for its process: put back after
    from lakefresh.api import load_pipeline

    catalog = [k for k in load_pipeline(ws.root / "pipeline.yml").spark_settings() if ".lf_unreachable" in k]
    with settings_kept(spark, catalog):  # the CLI sets them on the session it joins
        outputs = {
            "text": cli_in_process(*debug, "run", "pipeline.yml", cwd=ws.root),
            "json": cli_in_process(*debug, "run", "pipeline.yml", "-o", "json", cwd=ws.root),
        }
    for how, proc in outputs.items():
        printed = proc.stdout + proc.stderr
        assert proc.returncode == 1, printed
        assert "127.0.0.1" in printed, printed  # it says which catalog failed
        assert not [pw for pw in CATALOG_PASSWORDS if pw in printed], f"{how}: {printed}"
        if debug:
            assert "Traceback" in printed
