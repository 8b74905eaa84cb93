"""`lakefresh rollback PIPELINE --table T --to-batch B`: the batches published after B are undone
in one commit, and recorded as `unloaded` (never taken again).

It is the fast tail case of an unload, done with Iceberg's own rollback (`rollback_to_snapshot`),
which is exact when every commit after B is a lakefresh batch or a compaction (a `replace`,
which changes no row): the table is then exactly what it was when B was published, which is
what applying the batches up to B gives. A commit after B by another writer would be undone
too, so the rollback is refused, naming it. Steps:

1. The table is assessed and settled first, as a run does (a batch whose record a crash lost
   is recorded), and a table with rolled-back batches stops as a run would.
2. B must be in the current lineage; every table rolled back (the table, and the
   `<t>_history` that `history: true` brings, when it holds B) is checked before any changes.
   A reset, unload or reload after B is refused: it settled the log too (batches `unloaded`,
   attempts `reloaded`, configuration fingerprints), which a rollback of the table would leave
   behind, so that the table and its log would disagree.
3. Each table is rolled back to B's version; its later batches become `unloaded`; effective
   counts and ranges are recounted.

A crash between 3's rollback and its record leaves published batches outside the lineage:
the next run stops naming them as rolled back, and `run --rolled-back forget` settles them.
The rollback itself can be undone with Iceberg's `set_current_snapshot` (the later versions
stay retained until they expire); the next run then records the batches as published again.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from lakefresh.errors import ConfigError, TargetError
from lakefresh.results import TableResult, earlier_name, json_keys
from lakefresh.run.bookkeeping import Bookkeeping
from lakefresh.state.control import VERB_PREFIX, is_verb
from lakefresh.strategies import make_strategy
from lakefresh.verbs.common import VerbContext, table_and_history

if TYPE_CHECKING:
    from lakefresh.config.models import TableConfig


MAINTAIN = f"{VERB_PREFIX}maintain:"  # a compaction's commit changes no row: rolled back with the rest


@dataclass
class RollbackResult:
    """What a rollback undid, per table (the table first, then its history table)."""

    table: str
    to_batch: str
    unloaded: dict[str, list[str]] = field(default_factory=dict)  # table -> batch ids, newest first
    versions: dict[str, int] = field(default_factory=dict)  # table -> its head now

    snapshots = earlier_name("versions")

    def to_dict(self) -> dict[str, Any]:
        return json_keys(asdict(self))


def roll_back(ctx: VerbContext, table: TableConfig, to_batch: str, hint: str) -> RollbackResult:
    config, backend, control = ctx.config, ctx.backend, ctx.control
    books = Bookkeeping(backend, control)
    control.ensure()
    result = RollbackResult(table.name, to_batch)
    plans = []
    for each in table_and_history(config, backend, table, "roll back"):
        name = config.qualified(each)
        strategy = make_strategy(each.strategy)
        found = books.assess(name, each)
        books.settle(found, TableResult(each.name), strategy, hint, None)  # 1.
        published = found.lineage
        if to_batch not in published:
            if each is not table:
                continue  # the history table never took B: it is left as it is
            newest = ", ".join(list(published)[:5]) or "none"
            raise ConfigError(
                f"batch {to_batch!r} is not in the lineage of {table.name!r} (its newest "
                f"batches: {newest}); roll back to a published batch"
            )
        version = published[to_batch]
        together = [b for b, s in published.items() if s == version]  # a backlog group's commit
        if together[0] != to_batch:
            later_ones = ", ".join(reversed(together[: together.index(to_batch)]))
            raise ConfigError(
                f"batch {to_batch!r} of {each.name!r} was published in one commit with the later "
                f"batch(es) {later_ones} (a backlog group): roll back to {together[0]!r} or to the "
                f"batch before the group, or unload {later_ones}"
            )
        later = backend.commits_after(name, version)  # 2.
        foreign = [c for c in later if c.batch_id is None and c.operation != "replace"]
        if foreign:
            shown = ", ".join(f"version {c.version} ({c.operation})" for c in foreign[:3])
            raise TargetError(
                f"cannot roll {each.name!r} back to batch {to_batch!r}: commits after it that "
                f"are not lakefresh batches would be undone too ({shown}); nothing was changed"
            )
        rebuilt = [b for c in later for b in c.batches if is_verb(b) and not b.startswith(MAINTAIN)]
        if rebuilt:  # it settled the log as well (batches unloaded, reloaded, configuration)
            raise ConfigError(
                f"cannot roll {each.name!r} back to batch {to_batch!r}: the later commit "
                f"{rebuilt[0]!r} (a reset, unload or reload) settled the batch log too, which a "
                "rollback would not undo; roll back to a batch after it, or unload the batches; "
                "nothing was changed"
            )
        plans.append((name, each, strategy, version, [b for c in later for b in reversed(c.batches)]))
    for name, each, strategy, version, undone in plans:  # 3.
        if undone:
            backend.roll_back_to(name, version)
            control.mark_unloaded(name, undone)
            books.recount(name, strategy)
        result.unloaded[each.name] = undone
        result.versions[each.name] = version
    return result
