"""How a target's MERGE, UPDATE and DELETE write: copy-on-write or merge-on-read, chosen from the
pipeline's own graph.

Merge-on-read makes a MERGE into a large table several times cheaper (it writes the changed rows
and position deletes instead of rewriting every file a batch touches; bench/README.md), and
readers pay for the delete files until a compaction applies them. Iceberg's changelog, which a
`table_changes` source reads, cannot read merge-on-read commits. So `write_mode: auto` (the
default) gives a new target merge-on-read unless a `table_changes` source of this pipeline reads
it, and turns a target such a source reads back to copy-on-write. An explicit `write_mode`, or
`write.*.mode` in the table's `properties`, wins. A target that a change feed of *another*
pipeline reads should say `write_mode: copy-on-write`: lakefresh does not see that reader.

Merge-on-read targets are compacted after a run once enough of their stored rows are deleted
(`maintenance.compact_at_deleted_ratio`; MaintenanceConfig.compaction_due), so readers never skip
many.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from lakefresh.config.models import PipelineConfig, TableConfig

WriteMode = Literal["auto", "copy-on-write", "merge-on-read"]
# How a table's updates and deletes write: rewrite the files they touch, or write the changed
# rows and mark the old ones deleted (Iceberg's position deletes, Delta's deletion vectors)
Mode = Literal["copy-on-write", "merge-on-read"]
# a table property that sets a write mode itself (Iceberg's names): the table's own choice wins
MODE_PROPERTIES = ("write.merge.mode", "write.update.mode", "write.delete.mode")


def explicit(config: PipelineConfig, table: TableConfig) -> bool:
    """Whether the table's properties set a write mode themselves."""
    properties = {**config.defaults.table_properties, **table.properties}
    return any(p in properties for p in MODE_PROPERTIES)


def change_feed_readers(config: PipelineConfig, table: TableConfig) -> list[TableConfig]:
    """The tables of this pipeline whose `table_changes` source reads `table`."""
    names = (config.qualified(table), table.name)
    feeds = [t for t in config.tables if t.source.change_feed]
    return [t for t in feeds if t.source.read_table in names]


def chosen(config: PipelineConfig, table: TableConfig, exists: bool) -> Mode | None:
    """The mode the target gets: at creation (`exists` False) or, for one that exists, when its
    mode must change (None: leave it as it is)."""
    if explicit(config, table):
        return None
    mode = table.write_mode or config.defaults.write_mode
    if mode == "copy-on-write" or mode == "merge-on-read":
        return mode
    if change_feed_readers(config, table):
        return "copy-on-write"
    return None if exists else "merge-on-read"
