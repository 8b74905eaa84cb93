"""Sources: where batches come from. One module per kind, registered by name."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakefresh.sources.base import BatchRef, ReadBatch, Source
from lakefresh.sources.files import FilesSource

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakefresh.config.sources import SourceConfig

SOURCES: dict[str, type] = {"files": FilesSource}


def make_source(config: SourceConfig, spark: SparkSession, base_dir: str) -> Source:
    """The source for a config, by its `kind`."""
    cls = SOURCES[config.kind]
    source: Source = cls(config, spark, base_dir)
    return source


__all__ = ["SOURCES", "BatchRef", "FilesSource", "ReadBatch", "Source", "make_source"]
