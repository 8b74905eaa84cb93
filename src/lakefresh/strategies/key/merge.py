"""`key` into a plain table: the MERGE judges each batch row against its stored row.

`KeyStrategy.stage` gives every batch row a status against the stored row of its key (strategy.py's
table) and, on the general path, materializes that change set (the whole batch with its codes)
before the MERGE reads it. For a table with none of the options whose rows exist only in the
change set (a tombstone, a surrogate key, a skeleton row, a retired or truncated key), the MERGE
can decide the same thing in its own clauses, as a hand-written MERGE does: its source is then
the batch's winning rows (one per key) with their *intent* alone (W: write, D: delete), read from
the materialized batch, and nothing is materialized in between.

The status codes are still counted, exactly, by a pass of their own over the same join (an
observation of a pass that keeps no row: no aggregate's shuffle), and that pass comes first: the
counts, the superseded rows, the audit's row-count prediction and the check for keys stored
twice are the general path's. The MERGE's clauses are the status expression's branches for such
a table, so a row the counts call C is the row the MERGE updates:

| status | the MERGE                                                                   |
| ------ | --------------------------------------------------------------------------- |
| N      | not matched, intent W (`when_not_matched: insert`): inserted                 |
| C      | matched, not older, intent W, no stored hash or another one: updated         |
| D      | matched, not older, intent D (or W with `when_matched: delete`): deleted     |
| O,U,S  | matched, no clause holds: left as it is                                      |

A batch whose rows mostly change nothing (U, S, O, M, X outnumber the writes) takes the general
path (its MERGE would otherwise read every such row and, copy-on-write, rewrite the files that
hold them): its change set is materialized with its counts in one pass, a second pass over the
join. Only a batch whose every pass sees the same rows is judged: not after row rules or
lookups, and not with a delete `condition` (SQL that may differ between two queries). Nor is a
batch with duplicate keys: its MERGE would rank the rows again (as the counting pass did: a
key's rows are in one order whatever the pass, ordering.py), and a copy-on-write MERGE reads
its source twice; measured slower than the materialized change set (bench/bench_dups.py).
A batch of new keys alone is appended as on the general path.
`spark.lakefresh.key.fastPath=false` turns this path off (the tests compare the two; a benchmark
may measure both). It gains most for a batch into a large copy-on-write target, little into a
merge-on-read one (bench/bench_key.py measures both modes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakefresh.columns import HASH_COLUMN, STATUS_COLUMN, UPDATED_AT_COLUMN
from lakefresh.lakehouse.backend import MergeClauses
from lakefresh.lakehouse.sql import quote

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from lakefresh.config.strategies import KeyStrategyConfig
    from lakefresh.strategies.base import ChangeSet, StageContext

SETTING = "spark.lakefresh.key.fastPath"
NO_WRITE = ("U", "S", "O", "M", "X")  # codes of rows that change nothing
WRITE, DELETE = "W", "D"  # a batch row's intent, before its stored row is known


def judged_by_merge(cfg: KeyStrategyConfig, ctx: StageContext) -> bool:
    """Whether a batch of this table may be judged by its MERGE (see the module's docstring)."""
    plain = not (
        cfg.soft_delete_column
        or cfg.surrogate_key
        or cfg.truncate
        or cfg.full_snapshots
        or cfg.tombstone_retention
    )
    # the counting pass and the MERGE evaluate the batch twice: both must see the same rows and
    # the same delete flags (a delete `condition` is SQL that may differ between two queries)
    repeatable = ctx.settled and (cfg.delete is None or cfg.delete.column is not None)
    if not (plain and repeatable and ctx.target_exists):
        return False
    return str(ctx.backend.spark.conf.get(SETTING, "true")).lower() != "false"


def judgeable(counts: dict[str, int]) -> bool:
    """Whether a counted batch (`counts`, with its duplicates as `dup`) is judged by its MERGE:
    no duplicate keys (ranking them again in the MERGE costs more than materializing: see the
    module's docstring), and no more rows that change nothing than rows written."""
    writes = sum(n for code, n in counts.items() if code not in (*NO_WRITE, "dup"))
    return not counts.get("dup") and sum(counts.get(code, 0) for code in NO_WRITE) <= writes


def intents(
    rows: DataFrame, columns: list[str], counts: dict[str, int], delete: str
) -> tuple[DataFrame, bool]:
    """The MERGE's source for a judgeable batch (`counts`, without duplicates): its rows in
    `columns` (the target's), with their intent as the status column, and whether the MERGE's
    clauses must judge them (False: every row is a new key, labelled N, or none is written: the
    general path's append). `delete`: the SQL of a row's delete flag."""
    from pyspark.sql import functions as F

    new_alone = set(counts) <= {"N"}
    intent = F.lit("N") if new_alone else F.expr(f"CASE WHEN {delete} THEN '{DELETE}' ELSE '{WRITE}' END")
    source = rows.select(*[F.col(quote(c)) for c in columns], intent.alias(STATUS_COLUMN))
    if not any(n for code, n in counts.items() if code not in NO_WRITE):  # nothing to write
        return source.limit(0), False
    return source, not new_alone


def judging_clauses(
    cfg: KeyStrategyConfig, columns: list[str], source_rows: int, target_condition: str | None = None
) -> MergeClauses:
    """The MERGE's clauses that give each intent (alias `s`) against its stored row (`t`) the
    outcome of its status code (the module's table)."""
    at, hashed, intent = quote(UPDATED_AT_COLUMN), quote(HASH_COLUMN), f"s.{STATUS_COLUMN}"
    # the status expression's `at < stored_at` (O) is false, or unknown (no stored date)
    not_older = f"NOT coalesce(s.{at} < t.{at}, FALSE)"
    changed = f"(t.{hashed} IS NULL OR s.{hashed} != t.{hashed})"
    deletes = f"{intent} = '{DELETE}' AND {not_older}"
    update_when = None
    if cfg.when_matched == "delete":
        deletes = not_older
    elif cfg.when_matched == "update":
        update_when = f"{intent} = '{WRITE}' AND {not_older} AND {changed}"
    return MergeClauses(
        keys=list(cfg.keys),
        update_columns=columns if update_when else [],
        insert_columns=columns,
        update_when=update_when,
        delete_when=deletes,
        insert_when=f"{intent} = '{WRITE}'" if cfg.when_not_matched == "insert" else "FALSE",
        source_rows=source_rows,
        target_condition=target_condition,
    )


def merge_judging(ctx: StageContext, cfg: KeyStrategyConfig, change: ChangeSet) -> None:
    """MERGE a change set of intents (`intents`) into the target."""
    from lakefresh.strategies.pruning import range_condition

    columns = [c for c in change.rows.columns if c != STATUS_COLUMN]
    pruned = range_condition(change.key_range, "t") if change.key_range else None
    clauses = judging_clauses(cfg, columns, change.record_count - change.duplicates, pruned)
    ctx.backend.merge(ctx.table, change.rows, clauses)
