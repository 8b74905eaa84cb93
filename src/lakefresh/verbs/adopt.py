"""`lakefresh adopt PIPELINE --table T`: a table another tool wrote (a dbt snapshot, an Open Data
Fabric log kamu wrote, a table a hand-written MERGE job keeps) becomes lakefresh's, in one
commit, and lakefresh's runs continue it from then on.

The table must be at the table's configured target name, in its configured format, and hold the
strategy's layout under the configured column names (strategies/adopt.py says which, per
strategy). Steps:

1. Refusals before anything is written: a strategy that cannot be adopted, a table that does not
   exist, a table that is lakefresh's already (its log holds batches of it, its commits carry
   batch ids, or it has `_lf_*` columns), missing columns or columns of the wrong type, and rows
   lakefresh could not continue exactly (duplicate keys, overlapping versions, offsets with
   gaps, unknown ops: every problem named, with example rows). Nothing is changed then.
2. The table takes lakefresh's creation properties (staged commits on Iceberg, the change feed
   on Delta), loses the columns the strategy does not store (`drop_columns`), and gains
   lakefresh's system columns.
3. Write-audit-publish: one commit, tagged `lakefresh:adopt:<id>`, writes its rows with their
   system columns filled (the staged commit must hold as many rows as the table had); the
   adoption is logged `staged`, then `published`: the first row of the table's `batches` log.

A run then takes every batch its source lists, after the adopted rows: batches the adopted
table already holds (files the old tool loaded) are taken out first with `run --skip-batch`.
The rebuilding verbs (`reset`, `unload`, `reload`, a full refresh) refuse an adopted table, whose
rows before lakefresh are no batch they could read again; `rollback` works as on any table.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from lakefresh.clock import utc_now
from lakefresh.config.fingerprint import fingerprint
from lakefresh.errors import AuditError, ConfigError, SchemaError, TargetError
from lakefresh.lakehouse.backend import target_layout
from lakefresh.lakehouse.commit import Transaction
from lakefresh.results import earlier_name, json_keys
from lakefresh.run.bookkeeping import Bookkeeping
from lakefresh.state.batch_row import BatchRow
from lakefresh.state.control import verb_batch_id
from lakefresh.state.published import Published
from lakefresh.strategies import make_strategy
from lakefresh.strategies.adopt import Adoption, adoption, shown
from lakefresh.strategies.materialize import materialize_sized

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from lakefresh.config.models import TableConfig
    from lakefresh.lakehouse.backend import StagedCommit
    from lakefresh.verbs.common import VerbContext


@dataclass
class AdoptResult:
    """What an adoption did: the table, its commit and log row, the columns it added and dropped."""

    table: str
    batch_id: str
    rows: int
    version: int
    added: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)

    snapshot_id = earlier_name("version")

    def to_dict(self) -> dict[str, Any]:
        return json_keys(asdict(self))


def adopt(ctx: VerbContext, table: TableConfig) -> AdoptResult:
    """Make the table at `table`'s target name lakefresh's (the module's steps)."""
    backend, control = ctx.backend, ctx.control
    name = ctx.config.qualified(table)
    how = adoption(table.strategy)  # 1.
    if not backend.exists(name):
        raise ConfigError(
            f"cannot adopt {table.name!r}: there is no {ctx.config.format_of(table)} table {name} to adopt "
            "(a run creates the table when there is none)"
        )
    control.ensure()
    _refuse_lakefresh(ctx, name, table.name)
    schema = backend.schema(name)
    layout = how.layout(schema)
    if layout:
        raise SchemaError(f"cannot adopt {table.name!r} ({name}): {'; '.join(layout)}. Nothing was changed")
    current = backend.read(name)
    problems = [text for text in (shown(p) for p in how.problems(current)) if text]
    if problems:
        listed = "\n".join(f"  - {p}" for p in problems)
        raise TargetError(
            f"cannot adopt {table.name!r} ({name}): lakefresh could not continue it exactly:\n{listed}\n"
            "Nothing was changed"
        )
    return _commit(ctx, table, name, how, current)


def _refuse_lakefresh(ctx: VerbContext, name: str, table: str) -> None:
    """A table lakefresh already writes is not adopted: its log or its commits say so."""
    logged = sorted({a.batch_id for a in ctx.control.attempts(name)})
    carried = sorted(ctx.backend.published_batches(name))
    if logged or carried:
        shown_ids = ", ".join((logged or carried)[:3])
        raise ConfigError(
            f"cannot adopt {table!r}: it is lakefresh's already (its "
            f"{'log' if logged else 'commits'} hold batch(es) {shown_ids}); nothing was changed"
        )


def _commit(
    ctx: VerbContext, table: TableConfig, name: str, how: Adoption, current: DataFrame
) -> AdoptResult:
    """2. and 3.: the table shaped for lakefresh and its rows written in one commit, logged."""
    backend, control = ctx.backend, ctx.control
    verb_id = verb_batch_id("adopt")
    schema = backend.schema(name)
    dropped = how.dropped(schema)
    rows, expected = materialize_sized(how.rows(current, verb_id))
    added = [c for c in rows.columns if c not in schema.fieldNames()]
    attempt, started = uuid.uuid4().hex[:16], utc_now()
    configuration = fingerprint(table)
    replay = {"verb": "adopt", "rows": expected, "added": added, "dropped": dropped}

    def shape() -> DataFrame:
        backend.take_over(name, target_layout(ctx.config, table))
        if dropped:
            backend.drop_columns(name, dropped)
        return backend.align(name, rows)

    def audit(staged: StagedCommit) -> None:
        if staged.live_records != expected:
            raise AuditError(
                f"the staged adoption of {name} holds {staged.live_records} rows, the table had "
                f"{expected}; nothing was published"
            )

    def record(staged: StagedCommit | None) -> None:
        row = BatchRow.of_table(
            name,
            table,
            verb_id,
            attempt,
            "staged",
            verb=True,
            replay=json.dumps(replay, sort_keys=True),
            record_count=expected,
            staged_snapshot_id=staged.version if staged else None,
            started_at=started,
            config_fingerprint=configuration[0],
            config=configuration[1],
        )
        control.record_attempt(row)

    txn = Transaction(backend, name, "the adoption", f"{name} moved while it was adopted: adopt it again")
    try:
        aligned = txn.shape(shape)
        version = txn.commit(verb_id, lambda: backend.replace(name, aligned), audit, record)
    except Exception:
        if not txn.publishing:
            txn.abort(verb_id)
            backend.drop_columns(name, [c for c in added if c in backend.schema(name).fieldNames()])
            control.mark_abandoned(name, [a for a in control.attempts(name) if a.attempt == attempt])
        raise
    books = Bookkeeping(backend, control)
    when = backend.committed_at(name, version)
    books.settle_verb(name, Published(verb_id, attempt, version, when), configuration)
    books.recount(name, make_strategy(table.strategy))
    return AdoptResult(table.name, verb_id, expected, version, added, dropped)
