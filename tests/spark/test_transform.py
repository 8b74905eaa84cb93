"""A table's `transform`: SQL over the batch and other tables, between read and stage."""

from __future__ import annotations

from tests.conftest import rows

PIPELINE = """
- name: regions
  source: {kind: files, path: regions, format: csv, schema: {code: string, region: string}}
  strategy: {kind: key, keys: [code]}
- name: orders
  source: {kind: files, path: orders, format: csv, schema: {order_id: int, country: string, amount: int}}
  transform:
    sql: |
      SELECT b.*, r.region, b.amount * 2 AS doubled
      FROM batch b LEFT JOIN dims r ON r.code = b.country
      WHERE b.amount > 0
    views: {dims: regions}
  strategy: {kind: key, keys: [order_id]}
"""


def test_the_sql_joins_the_batch_with_another_table_and_its_rows_are_merged(ws):
    ws.write("regions/r1.csv", "code,region\nNO,Nordic\nIT,South\n")
    ws.write("orders/o1.csv", "order_id,country,amount\n1,NO,5\n2,XX,3\n3,IT,-1\nabc,NO,1\n,NO,4\n")
    p = ws.pipeline(PIPELINE)
    result = p.run()
    assert result.ok, result.to_dict()
    assert rows(p.table("orders"), ["order_id", "country", "amount", "region", "doubled"]) == [
        (1, "NO", 5, "Nordic", 10),
        (2, "XX", 3, None, 6),
    ]
    # the unreadable row (before the SQL) and the NULL key (after it), with their lines
    reasons = sorted((r["line"], r["reason"].split(":")[0]) for r in p.quarantine("orders").collect())
    assert [line for line, _ in reasons] == [5, 6]
    assert "key column order_id is NULL" in reasons[1][1]


def test_sql_that_does_not_analyse_fails_the_batch_with_one_line_naming_the_near_miss(ws):
    """A typo in a column of another view (which `validate` cannot know) fails the batch with
    one line: the column, the near miss among the views' real columns (never lakefresh's `_lf_`
    ones), and a fix that belongs in the pipeline file, not a plain run again."""
    ws.write("regions/r1.csv", "code,region\nNO,Nordic\n")
    ws.write("orders/o1.csv", "order_id,country,amount\n1,NO,5\n")
    p = ws.pipeline(PIPELINE.replace("r.region", "r.regoin"))
    result = p.run()
    assert not result.ok
    error = result.batches[-1].error
    assert error == (
        "table 'orders': the transform SQL fails: column r.regoin does not exist; did you mean "
        "'region'? columns of batch: order_id, country, amount; dims: code, region"
    )
    assert result.tables[-1].fix_in_config and result.tables[-1].to_dict()["fix_in_pipeline_file"]
    assert not p.backend.exists(p.config.qualified(p.config.tables[1]))
