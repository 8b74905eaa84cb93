"""`lakefresh maintain PIPELINE [--table T]`: each target's upkeep, by its policy
(`maintenance:` on the table, else `defaults.maintenance`; with `after_runs: true`, after every
run that published to it).

Per table: compaction (small data files rewritten, delete files applied: commits that change no
row, which lakefresh's lineage checks know are not a rollback), snapshot expiry, orphan file
removal, through the table backend; a `key` table's tombstones past its `tombstone_retention`
(and those that no longer count) are deleted first, and their table compacted once it holds
many files (state/tombstones.py). What must survive is kept:

- a downstream `table_changes` table of this pipeline reads the target's versions after the end
  of its last processed load: no version from that one on is expired, and nothing at all while
  such a reader has not processed its first load (it starts at the table's first version);
- the newest `keep_snapshots` versions, whatever their age;
- unload, reload and reset read the sources' files, not the target's versions, so expiry does
  not limit them; `rollback` can only go back to a batch whose version is retained, and
  exactly-once does not need expired ancestors (the batch log remembers their batches).

Each table's upkeep is logged in `batches` as a row of status `maintained` whose id starts with
`lakefresh:maintain:` and whose `replay` holds what was done.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from lakefresh.clock import utc_now
from lakefresh.config.write_mode import change_feed_readers
from lakefresh.sources import TableChangesSource
from lakefresh.state import tombstones
from lakefresh.state.batch_row import BatchRow
from lakefresh.state.control import verb_batch_id

if TYPE_CHECKING:
    from lakefresh.config.models import PipelineConfig, TableConfig
    from lakefresh.lakehouse.backend import Deletes, TableBackend
    from lakefresh.verbs.common import VerbContext


@dataclass
class TableUpkeep:
    table: str
    done: dict[str, int] = field(default_factory=dict)
    expired_before: str | None = None  # the cutoff used (UTC), None: nothing expired
    kept_for: list[str] = field(default_factory=list)  # readers whose versions were kept
    unlogged: list[str] = field(default_factory=list)  # published batches not logged yet: no expiry


@dataclass
class MaintainResult:
    tables: list[TableUpkeep] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class DeleteReads(Protocol):
    """What a compaction's due date reads of a target (`TableBackend`, or lakehouse/native.py's
    reader without a JVM)."""

    def deletes(self, table: str) -> Deletes:
        """Delete files (Iceberg; Delta's deletion vectors) and the rows they delete."""


def compaction_due(config: PipelineConfig, backend: DeleteReads, table: TableConfig) -> str | None:
    """Why the target's deletes (TableBackend.deletes) make its policy ask for a compaction
    (MaintenanceConfig.compaction_due), or None; nothing is read when the policy looks at none."""
    policy = config.maintenance_for(table)
    if not policy.checks_deletes():
        return None
    found = backend.deletes(config.qualified(table))
    return policy.compaction_due(found.files, found.rows, found.stored)


def maintain(ctx: VerbContext, tables: list[TableConfig], only_compact: bool = False) -> MaintainResult:
    """Each table's upkeep by its policy; `only_compact`: compaction alone (after a run that left
    a merge-on-read target holding many delete files)."""
    config, backend, control = ctx.config, ctx.backend, ctx.control
    control.ensure()
    result = MaintainResult()
    now = utc_now()
    for table in tables:
        name = config.qualified(table)
        if not backend.exists(name):
            continue
        policy = config.maintenance_for(table)
        upkeep = TableUpkeep(table.name)
        if not only_compact:  # compaction alone expires nothing: no walk of the lineage
            logged = {a.batch_id for a in control.attempts(name) if a.status == "published"}
            upkeep.unlogged = sorted(set(backend.published_batches(name)) - logged)
        cutoff: datetime | None = now - timedelta(seconds=policy.expire_after)
        for reader in [] if only_compact else change_feed_readers(config, table):
            source = ctx.source(reader)
            assert isinstance(source, TableChangesSource)
            start = source.needed_from()
            upkeep.kept_for.append(reader.name)
            if start is None or cutoff is None:
                cutoff = None  # its first load reads from the first version
            else:
                cutoff = min(cutoff, backend.committed_at(name, start))
        orphans = (
            None
            if policy.remove_orphans_after is None
            else now - timedelta(seconds=policy.remove_orphans_after)
        )
        if only_compact or upkeep.unlogged:  # a batch the lineage alone knows (its record lost,
            # or a run in progress): expired before the next run logs it, it would be taken again
            cutoff = orphans = None
        # before any version expires: the tombstones that no longer count go first
        kept = _tombstones_upkeep(backend, name, table, only_compact)
        done = backend.maintain(name, policy.compact or only_compact, cutoff, policy.keep_snapshots, orphans)
        upkeep.done = done | kept
        upkeep.expired_before = None if cutoff is None else cutoff.isoformat()
        control.record_attempt(
            BatchRow.of_table(
                name,
                table,
                verb_batch_id("maintain"),
                uuid.uuid4().hex[:16],
                "maintained",
                verb=True,
                replay=json.dumps(asdict(upkeep), sort_keys=True),
                started_at=now,
                published_at=utc_now(),
            )
        )
        result.tables.append(upkeep)
    return result


def _tombstones_upkeep(
    backend: TableBackend, name: str, table: TableConfig, only_compact: bool
) -> dict[str, int]:
    """A `key` table's tombstones past its `tombstone_retention`, and those that no longer count
    (a rolled-back batch's, an attempt's that never published), deleted unless `only_compact`;
    then their table compacted once it holds many files (state/tombstones.py). What was done."""
    retention = getattr(table.strategy, "tombstone_retention", None)
    done = {}
    if retention and not only_compact:
        done["tombstones_deleted"] = tombstones.clean(backend, name, retention)
    done["tombstone_files_compacted"] = tombstones.tidy(backend, name)
    return {k: v for k, v in done.items() if v}
