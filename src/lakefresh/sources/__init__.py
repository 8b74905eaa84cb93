"""Sources: where batches come from. One module per kind, registered by name."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakefresh.sources.base import BatchRef, ReadBatch, Reopening, Source, SourceContext, ready
from lakefresh.sources.delta_changes import DeltaChangesSource
from lakefresh.sources.files import FilesSource
from lakefresh.sources.jdbc import JdbcSource
from lakefresh.sources.synapse_link import SynapseLinkSource
from lakefresh.sources.table_changes import TableChangesSource
from lakefresh.sources.table_snapshot import TableSnapshotSource

if TYPE_CHECKING:
    from lakefresh.config.sources import SourceConfig

SOURCES: dict[str, type] = {
    "files": FilesSource,
    "table_snapshot": TableSnapshotSource,
    "table_changes": TableChangesSource,
    "delta_changes": DeltaChangesSource,
    "synapse_link": SynapseLinkSource,
    "jdbc": JdbcSource,
}


def make_source(config: SourceConfig, ctx: SourceContext) -> Source:
    """The source for a config, by its `kind`."""
    source: Source = SOURCES[config.kind](config, ctx)
    return source


__all__ = [
    "SOURCES",
    "BatchRef",
    "DeltaChangesSource",
    "FilesSource",
    "JdbcSource",
    "ReadBatch",
    "Reopening",
    "Source",
    "SourceContext",
    "SynapseLinkSource",
    "TableChangesSource",
    "TableSnapshotSource",
    "make_source",
    "ready",
]
