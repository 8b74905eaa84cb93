"""Checks on SQL expressions in a pipeline file, made without Spark (sqlglot parses Spark SQL).

An expression that decides which rows a batch deletes must be *row-pure*: its value for one pair
of rows depends on those rows alone. Aggregates, window functions and subqueries look at other
rows; non-deterministic functions (rand, uuid, current_timestamp...) give another answer when
Spark re-runs a task or lakefresh re-runs a batch. Both would make a batch's effect depend on
something other than the batch, so they are rejected when the file is validated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

# Functions whose value changes between evaluations (or between a task and its retry).
NON_DETERMINISTIC = {
    "rand",
    "randn",
    "random",
    "uuid",
    "shuffle",
    "monotonically_increasing_id",
    "spark_partition_id",
    "input_file_name",
    "input_file_block_start",
    "input_file_block_length",
    "now",
    "current_date",
    "current_timestamp",
    "current_timezone",
    "localtimestamp",
    "unix_timestamp",
    "curdate",
}

ROW_PURE_HINT = (
    "it must be row-pure: built from the rows' columns, literals and deterministic functions "
    "(no aggregates, window functions, subqueries or functions such as rand() or "
    "current_timestamp())"
)


@dataclass(frozen=True)
class Expression:
    """A parsed expression and the columns it names, by qualifier ('' when unqualified)."""

    text: str
    columns: dict[str, list[str]]
    # a top-level conjunct equates an expression of one qualifier with one of another (e.g.
    # this.region = input.region): a join on it can hash instead of comparing every pair
    equi_join: bool = False


def _function_name(node: object) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    if isinstance(node, exp.Func):
        return node.sql_name().lower()
    return ""


def parse_row_pure(text: str, qualifiers: tuple[str, ...], what: str) -> Expression:
    """Parse a boolean SQL expression and check it is row-pure.

    Args:
        text: the expression, in Spark SQL.
        qualifiers: the table aliases it may use; `()` means columns must be unqualified, and a
            single qualifier may also be left out.
        what: how to name the expression in errors (e.g. "strategy.delete_when").

    Returns:
        The expression with the columns it names, by qualifier.

    Raises:
        ValueError: it does not parse, is not row-pure, or names an unknown qualifier.
    """
    tree = parse_expression(text, what)
    if isinstance(tree, exp.Query):
        raise ValueError(f"{what} must be an expression, not a query: {text!r}")
    for node in tree.walk():
        name = _function_name(node)
        problem = None
        if isinstance(node, exp.Query | exp.Subquery | exp.Exists):
            problem = "a subquery"
        elif isinstance(node, exp.Window):
            problem = "a window function"
        elif isinstance(node, exp.AggFunc):
            problem = f"an aggregate ({node.sql(dialect='spark')})"
        elif isinstance(node, exp.Rand | exp.Uuid) or name in NON_DETERMINISTIC:
            problem = f"a non-deterministic function ({node.sql(dialect='spark')})"
        if problem:
            raise ValueError(f"{what} uses {problem}; {ROW_PURE_HINT}: {text!r}")
    columns: dict[str, list[str]] = {}
    for column in tree.find_all(exp.Column):
        qualifier = str(column.table or "").lower()
        if qualifier and qualifier not in qualifiers:
            allowed = ", ".join(qualifiers) if qualifiers else "none"
            raise ValueError(
                f"{what} qualifies column {column.name!r} with {qualifier!r}; "
                f"allowed qualifiers: {allowed}: {text!r}"
            )
        if not qualifier and len(qualifiers) > 1:
            raise ValueError(
                f"{what}: column {column.name!r} must be qualified with one of "
                f"{', '.join(qualifiers)}: {text!r}"
            )
        key = qualifier or (qualifiers[0] if len(qualifiers) == 1 else "")
        names = columns.setdefault(key, [])
        if column.name not in names:
            names.append(column.name)
    return Expression(text, columns, _has_equi_join(tree))


def syntax_error(exc: Exception) -> str:
    """A SQL syntax error in our words: where it is and the token there (never sqlglot's own
    wording or class names)."""
    errors = getattr(exc, "errors", None) or []
    if not isinstance(exc, sqlglot.errors.ParseError) or not errors:
        if isinstance(exc, sqlglot.errors.TokenError):
            return "syntax error: a quote (', \" or `) or a comment (/*) is not closed"
        return "syntax error: it cannot be read as Spark SQL"
    first = errors[0]
    token = str(first.get("highlight") or "")
    line, col = first.get("line"), first.get("col")
    if isinstance(col, int) and token:
        col = col - len(token) + 1  # sqlglot points at the token's end; people count from its start
    description = str(first.get("description") or "")
    detail = ""
    if description.startswith("Expecting "):
        detail = f": expected {description.removeprefix('Expecting ').strip()!r}"
    elif description.startswith("Required keyword"):
        detail = ": the expression is incomplete there"
    return f"syntax error at line {line}, column {col}, near {token!r}{detail}"


def _parse(text: str) -> list[Any]:
    try:
        return [t for t in sqlglot.parse(text, read="spark") if t is not None]
    except Exception as exc:  # a ParseError, a TokenError, or a parser bug: the same to the user
        raise ValueError(syntax_error(exc)) from None


def parse_expression(text: str, what: str) -> Any:
    """One SQL expression (a condition, a value), parsed; ValueError in plain words otherwise."""
    try:
        trees = _parse(text)
    except ValueError as exc:
        raise ValueError(f"{what} is not a valid SQL expression: {exc}") from None
    if not trees:
        raise ValueError(f"{what} is empty")
    if len(trees) > 1:
        raise ValueError(f"{what} must be one SQL expression, found {len(trees)} statements")
    return trees[0]


def check_condition(text: str, what: str) -> str:
    """A boolean SQL expression over the batch's columns: it must parse and not be a query."""
    if isinstance(parse_expression(text, what), exp.Query):
        raise ValueError(f"{what} must be a condition over the row, not a query")
    return text


def check_query(text: str) -> str:
    """A transform's SQL: one SELECT (a query: WITH, UNION... too), checked for syntax only."""
    trees = _parse(text)
    if not trees:
        raise ValueError("the SQL is empty; write a SELECT over the view `batch`")
    if len(trees) > 1:
        raise ValueError(f"the SQL must be one SELECT statement, found {len(trees)} statements")
    if not isinstance(trees[0], exp.Query):
        keyword = re.sub(r"/\*.*?\*/|--[^\n]*", " ", text, flags=re.S).split()[0].upper()
        raise ValueError(f"the SQL must be one SELECT query over the view `batch`, not {keyword}")
    return text


def _qualifiers(node: Any) -> set[str]:
    return {str(c.table or "").lower() for c in node.find_all(exp.Column)}


def _has_equi_join(tree: Any) -> bool:
    conjuncts = list(tree.flatten()) if isinstance(tree, exp.And) else [tree]
    for conjunct in conjuncts:
        while isinstance(conjunct, exp.Paren):
            conjunct = conjunct.this
        if isinstance(conjunct, exp.And):
            if _has_equi_join(conjunct):
                return True
            continue
        if isinstance(conjunct, exp.EQ):
            left, right = _qualifiers(conjunct.left), _qualifiers(conjunct.right)
            if len(left) == 1 and len(right) == 1 and left != right and "" not in left | right:
                return True
    return False


def ends_in_order_by(query: str, dialect: str | None = "spark") -> bool | None:
    """Whether a query's result is ordered by its own outermost ORDER BY (of a SELECT or of a
    set operation); None when sqlglot cannot parse it in `dialect` (None: sqlglot's own)."""
    try:
        tree = sqlglot.parse_one(query, read=dialect)
    except sqlglot.errors.SqlglotError:
        return None
    while isinstance(tree, exp.Subquery) and not tree.alias:  # (SELECT ... ORDER BY ...)
        tree = tree.this
    return isinstance(tree, exp.Query) and tree.args.get("order") is not None


@dataclass(frozen=True)
class QueryColumns:
    """What a transform's SQL reads and makes, as far as its text tells: the column it names
    that no view has (with the view's columns, for a near miss), and the columns it makes."""

    unknown: str | None  # a column no view has, as written
    output: list[str] | None  # the SELECT's columns; None when they cannot be told (SELECT *)


def query_columns(text: str, views: dict[str, list[str]]) -> QueryColumns | None:
    """Resolve the columns of a transform's SQL against `views` (name -> columns); None when
    the SQL reads a table or view whose columns are not given (they are known only once read).
    Names compare without case, as Spark's do."""
    from sqlglot.errors import OptimizeError
    from sqlglot.optimizer.qualify import qualify

    tree = _parse(text)[0]
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    read = {t.name.lower() for t in tree.find_all(exp.Table)} - ctes
    known = {name.lower(): columns for name, columns in views.items()}
    if not read <= set(known):
        return None
    schema: dict[str, object] = {n: {c: "string" for c in cols} for n, cols in known.items() if n in read}
    try:
        qualified = qualify(tree, schema=schema, dialect="spark", validate_qualify_columns=True)
    except OptimizeError as exc:
        found = re.search(r"(?:Unknown column: |Column ')([^' ]+)", str(exc))
        return QueryColumns(found.group(1) if found else str(exc), None)
    selects = getattr(qualified, "named_selects", None)
    return QueryColumns(None, list(selects) if selects and "*" not in selects else None)
