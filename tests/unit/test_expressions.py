"""Row-purity of the `custom` strategy's expressions, checked at validation without a JVM."""

from __future__ import annotations

import pytest

from lakefresh.config.expressions import ends_in_order_by, parse_row_pure


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("this.day > (SELECT max(day) FROM t)", "a subquery"),
        ("EXISTS (SELECT 1)", "a subquery"),
        ("this.day IN (SELECT day FROM t)", "a subquery"),
        ("this.day >= max(input.day)", "an aggregate"),
        ("this.n = count(*)", "an aggregate"),
        ("this.day = row_number() OVER (ORDER BY input.day)", "a window function"),
        ("this.amount < rand()", "a non-deterministic function"),
        ("this.id = uuid()", "a non-deterministic function"),
        ("this.at < current_timestamp()", "a non-deterministic function"),
        ("this.id = monotonically_increasing_id()", "a non-deterministic function"),
    ],
)
def test_expressions_that_are_not_row_pure_are_rejected(text, problem):
    with pytest.raises(ValueError, match=f"delete_when uses {problem}"):
        parse_row_pure(text, ("this", "input"), "delete_when")


def test_columns_must_be_qualified_when_two_tables_are_in_scope():
    with pytest.raises(ValueError, match="column 'day' must be qualified with one of this, input"):
        parse_row_pure("day > 1", ("this", "input"), "delete_when")
    with pytest.raises(ValueError, match="qualifies column 'day' with 'other'"):
        parse_row_pure("other.day > 1", ("this", "input"), "delete_when")


def test_a_row_pure_expression_names_its_columns_and_whether_it_is_an_equi_join():
    parsed = parse_row_pure(
        "this.region = input.region AND this.day >= date_add(input.day, -1) AND upper(this.x) = 'A'",
        ("this", "input"),
        "delete_when",
    )
    assert parsed.columns == {"this": ["region", "day", "x"], "input": ["region", "day"]}
    assert parsed.equi_join
    assert not parse_row_pure("this.day >= input.day", ("this", "input"), "d").equi_join
    assert parse_row_pure("amount > 0", ("input",), "append_filter").columns == {"input": ["amount"]}


def test_a_malformed_expression_says_so():
    with pytest.raises(ValueError, match="delete_when is not a valid SQL expression"):
        parse_row_pure("this.day >", ("this", "input"), "delete_when")


@pytest.mark.parametrize(
    ("query", "dialect", "ordered"),
    [
        ("SELECT * FROM t", "spark", False),
        ("SELECT a FROM t ORDER BY b", "spark", True),
        ("SELECT a FROM t ORDER BY a DESC LIMIT 5", "spark", True),
        ("WITH x AS (SELECT 1 AS a) SELECT * FROM x ORDER BY a", "spark", True),
        ("SELECT a FROM t UNION ALL SELECT a FROM u ORDER BY a", "spark", True),
        ("(SELECT a FROM t ORDER BY a)", "spark", True),
        ("SELECT a FROM (SELECT a FROM t ORDER BY a) x", "spark", False),  # an inner order only
        ("SELECT TOP 5 a FROM [t] ORDER BY a", "tsql", True),
        ("SELECT `a` FROM t ORDER BY a", "mysql", True),
        ("SELECT a FROM t WHERE m > '2025-01-01'", "postgres", False),
        ("SELEC a FROM (", "spark", None),  # not parsed: the order cannot be told
    ],
)
def test_whether_a_query_ends_in_order_by(query, dialect, ordered):
    """A `table_snapshot` or `jdbc` query's rows are numbered in the order returned only when it
    ends in ORDER BY (sources/base.py, `returned_order`); else their contents break ties."""
    assert ends_in_order_by(query, dialect) is ordered
