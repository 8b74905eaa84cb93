"""The tables of a pipeline as a graph: their order by dependency, and the `<name>_history`
tables that `history: true` brings. No pyspark here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lakefresh.config.models import TableConfig


def dependency_order(tables: list[TableConfig]) -> list[TableConfig]:
    """Tables sorted so that each comes after what it depends on; file order otherwise."""
    by_name = {t.name: t for t in tables}
    done: list[TableConfig] = []
    visiting: set[str] = set()

    def visit(table: TableConfig, path: tuple[str, ...]) -> None:
        if table in done:
            return
        if table.name in visiting:
            raise ValueError(f"dependency cycle: {' -> '.join((*path, table.name))}")
        visiting.add(table.name)
        for dep in table.upstream(list(by_name)):
            visit(by_name[dep], (*path, table.name))
        visiting.discard(table.name)
        done.append(table)

    for table in tables:
        visit(table, ())
    return done


def with_history_tables(tables: list[Any]) -> list[tuple[int, Any, str | None]]:
    """The tables (raw config) as they are validated: each with its position in the file as
    written, followed by the `<name>_history` table its `history: true` brings (with the name of
    the table that brought it)."""
    out: list[tuple[int, Any, str | None]] = []
    for position, table in enumerate(tables):
        out.append((position, table, None))
        strategy = table.get("strategy") if isinstance(table, dict) else None
        if isinstance(strategy, dict) and strategy.get("history") is True:
            out.append((position, history_table(table, strategy), str(table.get("name"))))
    return out


def history_table(table: dict[str, Any], strategy: dict[str, Any]) -> dict[str, Any]:
    """The `<name>_history` table of a `key` table with `history: true` (raw config)."""
    scd2: dict[str, Any] = {"kind": "scd2", "keys": strategy.get("keys")}
    if strategy.get("date_column"):
        scd2["sequence_by"] = strategy["date_column"]
    if strategy.get("exclude_from_cdc"):
        scd2["track_except"] = strategy["exclude_from_cdc"]
    if strategy.get("delete"):
        scd2["delete"] = strategy["delete"]
    copied = (
        "source",
        "transform",
        "depends_on",
        "audit",
        "properties",
        "lookups",
        "bad_rows",
        "max_bad_rows",
        "rules",
        "format",
    )
    return {
        **{k: table[k] for k in copied if k in table},
        "name": f"{table.get('name')}_history",
        "strategy": scd2,
    }
