"""`lakefresh replay PIPELINE --table T --batch B --file FIXED`: quarantined rows of batch B,
corrected by hand, applied as a new batch linked to B.

The corrected file (in the source's format and columns) is copied beside the source's files, into
`<source folder>/_lakefresh_replays/<table>/<B>/replay-<n>.<ext>` (a `_` folder, which the source never
lists as a batch), so it is retained like every other batch. It is applied as batch `B#replay-<n>`
through the runner's write-audit-publish, as a new batch: the strategy's rules hold (with a
`date_column`, an older corrected row still never overwrites a newer one). Once it is published,
B's quarantine rows are marked resolved by it (`resolved_by`). A replay batch is a batch like any
other: `unload`, `reload` and `reset` apply it right after B.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from lakefresh.clock import utc_now
from lakefresh.errors import ConfigError
from lakefresh.lakehouse.storage import storage_for
from lakefresh.results import BatchResult
from lakefresh.sources import BatchRef, SourceContext

if TYPE_CHECKING:
    from collections.abc import Callable

    from lakefresh.config.models import TableConfig
    from lakefresh.verbs.common import VerbContext

FOLDER = "_lakefresh_replays"
MARK = "#replay-"


@dataclass
class ReplayResult:
    table: str
    batch: str  # the batch whose bad rows were corrected
    replay: BatchResult
    resolved: int  # quarantine rows of `batch` marked resolved

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "replay": self.replay.to_dict()}


def replay(
    ctx: VerbContext,
    table: TableConfig,
    batch_id: str,
    fixed: str,
    apply: Callable[[TableConfig, BatchRef], BatchResult],
) -> ReplayResult:
    """Apply `fixed` as batch `<batch_id>#replay-<n>` with `apply` (the runner's, as a run applies
    a batch), then mark the batch's quarantine rows resolved by it."""
    config, backend, control = ctx.config, ctx.backend, ctx.control
    if not table.source.replays_files:
        raise ConfigError(
            f"table {table.name!r} reads a {table.source.kind} source: replay applies a corrected "
            "file, which needs a files source (reload a corrected batch instead)"
        )
    if not table.strategy.corrected_rows_alone():
        raise ConfigError(
            f"table {table.name!r} uses strategy {table.strategy.kind!r}, for which a batch of a "
            "few corrected rows would replace or retire the rest (a full snapshot, a range, a "
            "delete predicate): fix the batch's file and reload it instead"
        )
    name = config.qualified(table)
    control.ensure()
    attempts = control.attempts(name)
    if not any(a.batch_id == batch_id and a.status == "published" for a in attempts):
        raise ConfigError(f"batch {batch_id!r} of {table.name!r} is not a loaded batch: nothing to replay")
    storage = storage_for(backend.spark)
    if not storage.exists(fixed):
        raise ConfigError(f"the corrected file {fixed} does not exist")
    # the next number: after every replay of B the log or the lineage knows (a replay whose
    # record a crash lost is in the lineage alone), in a folder of the table's own (a table and
    # its `<t>_history` read one folder), never over an existing file
    made = {a.batch_id for a in attempts} | set(backend.published_batches(name))
    numbers = [b[len(batch_id + MARK) :] for b in made if b.startswith(batch_id + MARK)]
    n = 1 + max((int(x) for x in numbers if x.isdigit()), default=0)
    folder = SourceContext.of(config, backend, ctx.base_dir, table).resolve(table.source.location or "")
    suffix = "".join(PurePosixPath(fixed).suffixes) or ".csv"
    place = f"{folder.rstrip('/')}/{FOLDER}/{table.name}/{batch_id}/replay-"
    while storage.exists(f"{place}{n}{suffix}"):
        n += 1
    copy = f"{place}{n}{suffix}"
    storage.copy(fixed, copy)
    position = control.position(name, batch_id) or batch_id
    now = utc_now()
    ref = BatchRef(
        batch_id=f"{batch_id}{MARK}{n}",
        position=f"{position}{MARK}{n}",
        order_key=(position, MARK, f"{n:06d}"),
        batch_time=now,
        files=(copy,),
        replay={
            "kind": "files",
            "files": [copy],
            "replay_of": batch_id,
            "batch_time": now.isoformat(),
        },
    )
    result = apply(table, ref)
    resolved = control.mark_resolved(name, batch_id, ref.batch_id) if result.status == "published" else 0
    return ReplayResult(table.name, batch_id, result, resolved)


def replayed_refs(control: Any, name: str, batch_ids: set[str]) -> dict[str, list[BatchRef]]:
    """The replay batches among `batch_ids`, as references to read again, by the batch each
    replays, in the order they were made."""
    out: dict[str, list[BatchRef]] = {}
    replays = control.replays(name, sorted(batch_ids)) if batch_ids else {}
    for batch_id, text in replays.items():
        spec = json.loads(text or "{}")
        if "replay_of" in spec:
            ref = BatchRef(
                batch_id=batch_id,
                position=batch_id,
                order_key=(batch_id,),
                batch_time=datetime.fromisoformat(spec["batch_time"]),
                files=tuple(spec.get("files") or []),
                replay=spec,
            )
            out.setdefault(spec["replay_of"], []).append(ref)
    for refs in out.values():
        refs.sort(key=lambda r: int(r.batch_id.rsplit(MARK, 1)[-1]))
    return out


def with_replays(
    listed: list[BatchRef], live: set[str], replays: dict[str, list[BatchRef]]
) -> list[BatchRef]:
    """The live batches in the source's order, each followed by its live replays (and theirs)."""
    out: list[BatchRef] = []

    def add(ref: BatchRef, is_live: bool) -> None:
        if is_live:
            out.append(ref)
        for again in replays.get(ref.batch_id, []):
            add(again, again.batch_id in live)

    for ref in listed:
        add(ref, ref.batch_id in live)
    return out
