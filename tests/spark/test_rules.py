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


DBT_TESTS = """
- name: customers
  source: {kind: files, path: customers, format: csv, schema: {id: int, name: string}}
  strategy: {kind: key, keys: [id]}
- name: orders
  source: {kind: files, path: in, format: csv, schema: {order_id: int, customer_id: int, status: string}}
  strategy: {kind: append}
  rules:
    - {name: order_id_unique, unique: order_id, action: warn}
    - {name: order_id_not_null, not_null: order_id, action: warn}
    - name: status_accepted
      accepted_values: {column: status, values: [placed, shipped, completed, returned]}
      action: warn
    - name: customer_exists
      relationships: {column: customer_id, to: customers, field: id}
      action: {customer_action}
"""


def test_dbts_four_generic_tests_as_rules_with_dbts_example(ws):
    """dbt's data tests example (docs.getdbt.com/docs/build/data-tests: orders.order_id unique and
    not_null, status accepted_values placed/shipped/completed/returned, customer_id relationships
    to customers.id), each a rule in one line with dbt's meaning: NULL passes all but not_null;
    unique is over the table as the batch leaves it. Given an order id twice, one NULL, an
    unknown status and an unknown customer: each rule counts its violation; then a batch whose
    customer does not exist fails the relationship and publishes nothing."""
    ws.write("customers/c1.csv", "id,name\n1,ada\n2,grace\n")
    ws.write(
        "in/o1.csv",
        "order_id,customer_id,status\n1,1,placed\n1,2,shipped\n,2,completed\n3,9,lost\n4,,returned\n",
    )
    p = ws.pipeline(DBT_TESTS.replace("{customer_action}", "warn"))
    result = p.run()
    assert result.ok, result.to_dict()
    assert result.tables[1].batches[0].rules == {
        "order_id_unique": 1,
        "order_id_not_null": 1,
        "status_accepted": 1,
        "customer_exists": 1,
    }

    ws.write("in/o2.csv", "order_id,customer_id,status\n5,7,placed\n")
    p = ws.pipeline(DBT_TESTS.replace("{customer_action}", "fail"))
    [failed] = p.run().tables[1].batches
    assert failed.status == "audit_failed" and "rule 'customer_exists' failed" in failed.error
    assert rows(p.table("orders"), ["order_id"]) == [(1,), (1,), (3,), (4,), (None,)]
