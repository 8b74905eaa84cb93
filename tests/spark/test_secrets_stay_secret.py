"""Secrets stay secret (issue 14, item 13): a pipeline that fails while it holds known passwords
(in its JDBC URL, and rendered from the environment) shows none of them in any output (the CLI's
text and `--output json`, the API's result, what the process printed, Spark's log included) nor
in any row of any control table; the error still says what went wrong.

The failure is one a user meets: a `jdbc` batch failed once, and when it is retried (with the
boundaries it had) the database table is gone, so reading it fails inside the batch, with the
URL in the message, and the batch's row in `batches` records the error."""

from __future__ import annotations

import json

from tests.conftest import CATALOG, cli_in_process

URL_PASSWORD = "url-pw-0d9e71"
ENV_PASSWORD = "env-pw-5c1a2f"

TABLE = """
- name: orders
  source:
    kind: jdbc
    url: "{url}?user=lakefresh&password=url-pw-0d9e71"
    user: lakefresh
    password: "{{{{ env.LF_TEST_PGPASSWORD }}}}"
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
    text = cli_in_process("run", "pipeline.yml", cwd=ws.root)
    as_json = cli_in_process("run", "pipeline.yml", "--output", "json", cwd=ws.root)
    status = cli_in_process("status", "pipeline.yml", cwd=ws.root)
    printed = capfd.readouterr()

    assert (result.ok, text.returncode, as_json.returncode) == (False, 1, 1)
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
    assert sum('relation \\"secret_orders\\" does not exist' in row for row in rows) == 3, rows
    outputs = {
        "api result": json.dumps(result.to_dict()),
        "cli text": text.stdout + text.stderr,
        "cli json": as_json.stdout + as_json.stderr,
        "cli status": status.stdout + status.stderr,
        "stdout": printed.out,
        "stderr (Spark's log too)": printed.err,
        "control tables": "\n".join(rows),
    }
    for secret in (URL_PASSWORD, ENV_PASSWORD):
        leaks = [where for where, output in outputs.items() if secret in output]
        assert not leaks, f"{secret} shows in {leaks}"
