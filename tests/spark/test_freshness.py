"""`lakefresh freshness`: how long ago each target's newest batch was loaded, against its
`freshness: {warn_after, error_after}`, with what its source holds; exit code 1 past an error
bound, for schedulers.

dbt's source freshness is the model ("warn_after", "error_after", and `dbt source freshness`
failing past an error: docs.getdbt.com, reference/resource-properties/freshness).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from tests.conftest import cli_in_process

TABLES = """
- name: orders
  source: {kind: files, path: in, format: csv}
  strategy: {kind: key, keys: [id]}
  freshness: {warn_after: 1h, error_after: 1d}
- name: clicks
  source: {kind: files, path: clicks, format: csv}
  strategy: {kind: append}
"""


def test_a_table_is_fresh_then_late_then_stale_and_the_source_says_whether_a_run_is_due(ws):
    """Given orders loaded once and a second file waiting: just after the run orders passes; two
    hours on it warns, a day and a half on it is an error; its source's newest batch and the
    one batch waiting say a run is due. clicks has no bounds (and no batch): `none`."""
    ws.write("in/b1.csv", "id,v\n1,a\n", mtime=1_736_000_000)
    ws.folder("clicks")
    p = ws.pipeline(TABLES)
    assert p.run().ok
    ws.write("in/b2.csv", "id,v\n2,b\n", mtime=1_736_003_600)

    orders, clicks = p.freshness()
    loaded = orders.loaded_at
    assert (orders.table, orders.status, orders.pending, orders.error_after) == ("orders", "pass", 1, 86400.0)
    assert orders.source_newest == datetime(1970, 1, 1) + timedelta(seconds=1_736_003_600)  # b2, UTC
    assert (clicks.table, clicks.status, clicks.loaded_at, clicks.pending) == ("clicks", "none", None, 0)

    late = p.freshness(["orders"], now=loaded + timedelta(hours=2))
    assert [(f.status, f.age) for f in late] == [("warn", 7200.0)]
    stale = p.freshness(["orders"], now=loaded + timedelta(hours=36))
    assert [f.status for f in stale] == ["error"]
    assert [s.freshness for s in p.status()] == ["pass", None]


def test_the_command_exits_1_past_an_error_bound_and_a_table_never_loaded_is_one(ws):
    """A table with an error bound that no batch ever reached is an error: exit code 1, and the
    JSON says so per table."""
    ws.folder("in")
    ws.folder("clicks")
    ws.pipeline(TABLES)
    shown = cli_in_process("freshness", "pipeline.yml", "--output", "json", cwd=ws.root)
    assert shown.returncode == 1, shown.stdout + shown.stderr
    found = {t["table"]: (t["status"], t["loaded_at"], t["pending"]) for t in json.loads(shown.stdout)}
    assert found == {"orders": ("error", None, 0), "clicks": ("none", None, 0)}

    ws.write("in/b1.csv", "id,v\n1,a\n")
    assert cli_in_process("run", "pipeline.yml", cwd=ws.root).returncode == 0
    shown = cli_in_process("freshness", "pipeline.yml", "--table", "orders", cwd=ws.root)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "orders" in shown.stdout and "pass" in shown.stdout and "clicks" not in shown.stdout
