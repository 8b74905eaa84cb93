"""Data-quality rules, with Databricks' published expectations example: the
clickstream table of "Manage data quality with pipeline expectations" (docs.databricks.com,
`expect` / `expect_or_drop` / `expect_or_fail`: valid_timestamp, valid_current_page, valid_count),
plus batch rules in the manner of dbt's generic tests (a row-count bound; uniqueness)."""

from __future__ import annotations

from tests.conftest import rows

CLICKS = """
- name: clickstream
  source:
    kind: files
    path: in
    format: csv
    schema: {current_page_id: int, current_page_title: string, click_count: int, ts: timestamp}
  strategy: {kind: append}
  rules:
    - {name: valid_timestamp, row: "ts > '2012-01-01'", action: warn}
    - name: valid_current_page
      row: current_page_id IS NOT NULL AND current_page_title IS NOT NULL
      action: drop
    - {name: valid_count, row: click_count > 0, action: fail}
    - {name: some_rows, batch: "SELECT count(*) BETWEEN 1 AND 100 FROM batch", action: fail}
    - name: unique_pages
      batch: SELECT count(*) = count(DISTINCT current_page_id) FROM staged
      action: warn
"""
HEADER = "current_page_id,current_page_title,click_count,ts\n"
NOTHING = {"valid_timestamp": 0, "valid_current_page": 0, "valid_count": 0, "some_rows": 0, "unique_pages": 0}


def test_rules_warn_drop_and_fail_as_databricks_expectations_do(ws):
    ws.write("in/b1.csv", HEADER + "1,Home,5,2013-01-01\n,Lost,2,2014-01-01\n2,About,1,2011-12-31\n")
    p = ws.pipeline(CLICKS)
    [first] = p.run().batches
    assert (first.status, first.rules) == (
        "published",
        {**NOTHING, "valid_timestamp": 1, "valid_current_page": 1},
    )
    assert rows(p.table("clickstream"), ["current_page_id", "current_page_title"]) == [
        (1, "Home"),
        (2, "About"),
    ]
    assert rows(p.quarantine("clickstream"), ["line", "reason"]) == [
        (
            3,
            "rule valid_current_page: violates "
            "current_page_id IS NOT NULL AND current_page_title IS NOT NULL",
        )
    ]

    ws.write("in/b2.csv", HEADER + "3,Docs,0,2015-01-01\n")
    [failed] = p.run().batches
    assert failed.status == "audit_failed"
    assert failed.error == (
        "rule 'valid_count' failed: 1 row(s) violate `click_count > 0` (b2.csv line 2); nothing was published"
    )
    assert p.table("clickstream").count() == 2

    ws.write("in/b2.csv", HEADER + "3,Docs,3,2015-01-01\n")  # corrected
    ws.write("in/b3.csv", HEADER + "2,About again,4,2016-01-01\n")  # a second row of page 2
    assert [(b.batch_id, b.status, b.rules) for b in p.run().batches] == [
        ("b2.csv", "published", NOTHING),
        ("b3.csv", "published", {**NOTHING, "unique_pages": 1}),  # a warning: published anyway
    ]
    logged = {
        r["batch_id"]: r["rule_results"] for r in p.history("clickstream") if r["status"] == "published"
    }
    assert logged["b3.csv"] == {**NOTHING, "unique_pages": 1}


def test_a_failing_batch_rule_publishes_nothing(ws):
    ws.write("in/b1.csv", HEADER)  # no row: some_rows does not hold
    p = ws.pipeline(CLICKS)
    [batch] = p.run().batches
    assert (batch.status, batch.error) == (
        "audit_failed",
        "rule 'some_rows' failed: `SELECT count(*) BETWEEN 1 AND 100 FROM batch` is not true for the "
        "staged batch; nothing was published",
    )
    assert not p.backend.exists(f"{ws.namespace}.clickstream")  # a failed first batch leaves no table
