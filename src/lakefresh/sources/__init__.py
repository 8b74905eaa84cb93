"""Sources: where batches come from. One module per kind, registered by the config model it
reads (as strategies are): a source kind lives in its config model (config/sources.py: its
`kind`, options and capabilities) and its source class; this registry joins them by type."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, get_args

from lakefresh.config.sources import SourceBase, SourceConfig
from lakefresh.sources.base import (
    BatchRef,
    ReadBatch,
    ReadsMany,
    Reopening,
    Source,
    SourceContext,
    Waits,
    ready,
)
from lakefresh.sources.delta_changes import DeltaChangesSource
from lakefresh.sources.files import FilesSource
from lakefresh.sources.jdbc import JdbcSource
from lakefresh.sources.synapse_link import SynapseLinkSource
from lakefresh.sources.table_changes import TableChangesSource
from lakefresh.sources.table_snapshot import TableSnapshotSource

if TYPE_CHECKING:
    from collections.abc import Callable

# config model -> the source that reads it; every model of the union has exactly one
SOURCES: dict[type[SourceBase], Callable[[Any, SourceContext], Source]] = {
    cls.config_type: cls
    for cls in (
        FilesSource,
        TableSnapshotSource,
        TableChangesSource,
        DeltaChangesSource,
        SynapseLinkSource,
        JdbcSource,
    )
}
assert set(SOURCES) == set(get_args(SourceConfig)), "a source config without a source"


def make_source(config: SourceConfig, ctx: SourceContext) -> Source:
    """The source for a config, by the config's model."""
    return SOURCES[type(config)](config, ctx)


__all__ = [
    "SOURCES",
    "BatchRef",
    "DeltaChangesSource",
    "FilesSource",
    "JdbcSource",
    "ReadBatch",
    "ReadsMany",
    "Reopening",
    "Source",
    "SourceContext",
    "SynapseLinkSource",
    "TableChangesSource",
    "TableSnapshotSource",
    "Waits",
    "make_source",
    "ready",
]
