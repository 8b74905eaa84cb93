"""Strategy `custom`: a delete predicate over target and batch, then an append."""

from __future__ import annotations

import pytest

from lakefresh.errors import ConfigError
from tests.conftest import rows

SALES = """
- name: sales
  source:
    kind: files
    path: in
    format: csv
    schema: {region: string, day: int, amount: int}
  strategy:
    kind: custom
    delete_when: %s
    append_filter: "amount > 0"
"""


def test_rows_matching_some_batch_row_are_deleted_then_the_filtered_batch_appended(ws):
    ws.write("in/b1.csv", "region,day,amount\neu,1,10\neu,2,20\neu,3,30\nus,1,5\nus,2,6\n")
    ws.write("in/b2.csv", "region,day,amount\neu,2,21\neu,4,-1\nus,9,0\n")
    p = ws.pipeline(SALES % '"this.region = input.region AND this.day >= input.day"')
    result = p.run()
    assert result.ok, result.to_dict()
    assert result.batches[1].counts == {"N": 1, "F": 2, "D": 2}
    # eu rows from day 2 on are deleted (eu,2 matches day>=2); us rows: day >= 9 -> none
    assert rows(p.table("sales"), ["region", "day", "amount", "_lf_batch_id"]) == [
        ("eu", 1, 10, "b1.csv"),
        ("eu", 2, 21, "b2.csv"),
        ("us", 1, 5, "b1.csv"),
        ("us", 2, 6, "b1.csv"),
    ]


def test_an_always_true_predicate_replaces_the_table_with_each_batch(ws):
    ws.write("in/b1.csv", "region,day,amount\neu,1,10\nus,1,5\n")
    ws.write("in/b2.csv", "region,day,amount\neu,2,20\neu,3,30\n")
    # empty: a predicate that reads no batch column still applies (as Delta's REPLACE WHERE on an
    # empty source), like a `full` table's empty batch
    ws.write("in/b3.csv", "region,day,amount\n")
    p = ws.pipeline(SALES % "'true'")
    result = p.run()
    assert result.ok, result.to_dict()
    assert [b.counts for b in result.batches] == [
        {"N": 2, "F": 0, "D": 0},
        {"N": 2, "F": 0, "D": 2},
        {"N": 0, "F": 0, "D": 2},
    ]
    assert rows(p.table("sales"), ["region", "day", "amount"]) == []
    history = {r["batch_id"]: r["effective_count"] for r in p.history("sales")}
    assert history == {"b1.csv": 0, "b2.csv": 0, "b3.csv": 0}


def test_an_always_false_predicate_only_appends(ws):
    ws.write("in/b1.csv", "region,day,amount\neu,1,10\n")
    ws.write("in/b2.csv", "region,day,amount\neu,1,10\n")
    p = ws.pipeline(SALES % "'false AND this.day = input.day'")
    result = p.run()
    assert [b.counts["D"] for b in result.batches] == [0, 0]
    assert rows(p.table("sales"), ["region", "day", "amount"]) == [("eu", 1, 10), ("eu", 1, 10)]


@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        ("this.day > (SELECT max(day) FROM x)", "a subquery"),
        ("this.day >= max(input.day)", "an aggregate"),
        ("this.amount < rand()", "a non-deterministic function"),
        ("this.day = row_number() OVER (ORDER BY input.day)", "a window function"),
    ],
)
def test_an_expression_that_is_not_row_pure_is_rejected_at_validation(ws, expression, problem):
    with pytest.raises(ConfigError) as caught:
        ws.pipeline(SALES % f'"{expression}"')
    assert f"delete_when uses {problem}" in str(caught.value)
    assert "row-pure" in str(caught.value)


def test_a_predicate_without_an_equality_between_target_and_batch(ws):
    ws.write("in/b1.csv", "region,day,amount\neu,1,10\neu,2,20\neu,3,30\n")
    ws.write("in/b2.csv", "region,day,amount\nus,3,1\nus,5,2\n")
    p = ws.pipeline(SALES % '"this.day >= input.day + 1"')  # day >= 4 or day >= 6: none
    p2 = ws.pipeline(SALES % '"this.day > input.day - 2"', name="other.yml")
    assert p.run().ok
    assert rows(p.table("sales"), ["region", "day"]) == [
        ("eu", 1),
        ("eu", 2),
        ("eu", 3),
        ("us", 3),
        ("us", 5),
    ]
    ws.write("in/b3.csv", "region,day,amount\nxx,3,1\n")  # deletes day > 1
    assert "strategy.delete_when" in (p2.run().tables[0].error or "")  # a result-shaping change stops
    result = p2.run(accept_config_change=True)
    assert result.ok, result.to_dict()
    assert result.batches[0].counts == {"N": 1, "F": 0, "D": 4}
    assert rows(p2.table("sales"), ["region", "day"]) == [("eu", 1), ("xx", 3)]


def test_a_predicate_that_turns_a_null_into_a_value_does_not_match_the_rows_to_append(ws):
    """The rows to append travel in the MERGE's source with NULL batch columns: a predicate that
    makes a value of NULL (`coalesce(input.region, 'all')`) must not match a stored row with them."""
    ws.write("in/b1.csv", "region,day,amount\nall,1,10\neu,1,20\n")
    ws.write("in/b2.csv", "region,day,amount\neu,2,21\n")
    p = ws.pipeline(SALES % "\"this.region = coalesce(input.region, 'all')\"")
    result = p.run()
    assert result.ok, result.to_dict()
    assert result.batches[1].counts == {"N": 1, "F": 0, "D": 1}
    assert rows(p.table("sales"), ["region", "day", "amount"]) == [("all", 1, 10), ("eu", 2, 21)]
