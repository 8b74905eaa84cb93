"""SQL text built from names and values, in one place: identifiers, qualified names, literals.

Every statement lakefresh writes puts names and values into SQL through these functions, so a
column or a value holding a quote can never end one token and start another. They are pure
Python (no JVM): the config layer and the tests can use them as they are.
"""

from __future__ import annotations


def quote(name: str) -> str:
    """A name (column, table, namespace, catalog) as a Spark SQL identifier: in backticks, a
    backtick inside doubled."""
    return "`" + name.replace("`", "``") + "`"


def qualified_name(*parts: str) -> str:
    """A dotted name (catalog.namespace.table), each part quoted."""
    return ".".join(quote(p) for p in parts)


def sql_literal(value: object) -> str:
    """A Python value as a Spark SQL literal: NULL, TRUE/FALSE, a number as Python writes it, or
    a string in single quotes (backslashes and single quotes escaped with a backslash, as Spark
    SQL reads them)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        return repr(value)
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def properties_sql(values: dict[str, str]) -> str:
    """Table properties as `TBLPROPERTIES (...)` lists them: 'key'='value', ..."""
    return ", ".join(f"{sql_literal(k)}={sql_literal(v)}" for k, v in values.items())


def standard_sql_literal(text: str) -> str:
    """A string literal in standard SQL (single quotes doubled, backslashes as they are), for a
    query another database runs (a JDBC source): Spark SQL's backslash escapes would change the
    value there."""
    return "'" + text.replace("'", "''") + "'"
