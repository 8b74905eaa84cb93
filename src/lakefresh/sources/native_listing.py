"""Sources listed without a JVM, for the verbs that list what waits (`freshness`, `status
--pending`, `report`, `plan`, which also asks for the columns of its waiting batches:
sources/batch_shapes.py), and the rules of which can be. A source that cannot raises
:class:`~lakefresh.lakehouse.native.NotNative`, and the verb takes the Spark road whole:

- `files` and `synapse_link` sources in a local folder (a path, or a `file:` URI) are listed
  through Arrow's local file system (lakehouse/storage.py `ArrowStorage`, which names the files
  and times them as Hadoop's does), by the same listing code as a run's (sources/file_listing.py,
  sources/synapse_folders.py), so the batches, their order, times and files are the same;
- a `synapse_link` source in streaming mode also reads its target's lineage, as the tables are
  read (lakehouse/native.py: an Iceberg table of a hadoop catalog, a Delta table, in a local
  warehouse folder);
- a change feed (`table_changes`, `delta_changes`) whose source table the reader reads (an
  Iceberg table of the hadoop catalog, a Delta table in a local folder) is listed from that
  table's lineage and the `loads` log by the same listing code as a run's
  (sources/feed_listing.py); a missing `loads` table reads as no loads (the Spark road creates
  it, empty);
- a folder in an object store, and every other kind (a table's snapshots, a JDBC query),
  through Spark: its settings, or its reading, are Spark's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakefresh.config.sources import (
    ChangeFeedBase,
    DeltaChangesSourceConfig,
    FilesSourceConfig,
    SynapseLinkSourceConfig,
    TableChangesSourceConfig,
)
from lakefresh.lakehouse.native import NotNative
from lakefresh.lakehouse.storage import ArrowStorage
from lakefresh.sources.batch_shapes import Shape, batch_shape
from lakefresh.sources.feed_listing import FeedListing
from lakefresh.sources.file_listing import Listing
from lakefresh.sources.synapse_folders import SynapseFolders
from lakefresh.state.control import LOADS_TABLE
from lakefresh.state.loads import loads_in

if TYPE_CHECKING:
    from collections.abc import Callable

    from lakefresh.config.models import PipelineConfig, TableConfig
    from lakefresh.lakehouse.native import NativeTables
    from lakefresh.sources.base import BatchRef


class NativeListing:
    """Lists a pipeline's sources without a JVM (the module's doc says which)."""

    def __init__(self, config: PipelineConfig, base_dir: str, tables: NativeTables) -> None:
        self.config = config
        self.base_dir = base_dir
        self.tables = tables
        self.storage = ArrowStorage()

    def batches(self, table: TableConfig) -> list[BatchRef]:
        """The batches the table's source holds now, in order, as a run lists them."""
        source = table.source
        if isinstance(source, FilesSourceConfig):
            return Listing(source, self.storage, self._local(source.path, source.kind)).batches()
        if isinstance(source, SynapseLinkSourceConfig):
            return self._folders(table, source).batches()
        if isinstance(source, TableChangesSourceConfig | DeltaChangesSourceConfig):
            return self._feed(table, source)
        raise NotNative(f"a {source.kind} source is listed through Spark")

    def waiting(self, table: TableConfig) -> list[tuple[str, str]]:
        """What the source holds that is not listed as a batch yet, with the reason (`plan`);
        a change feed lists its next load alone."""
        source = table.source
        if isinstance(source, FilesSourceConfig):
            return Listing(source, self.storage, self._local(source.path, source.kind)).waiting()
        if isinstance(source, SynapseLinkSourceConfig):
            return self._folders(table, source).waiting()
        return []

    def shape(self, table: TableConfig, ref: BatchRef) -> Shape:
        """The columns a batch of the source would bring (sources/batch_shapes.py)."""
        source = table.source
        if not isinstance(source, FilesSourceConfig | SynapseLinkSourceConfig):
            raise NotNative(f"the columns of a {source.kind} source are read through Spark")
        return batch_shape(table, self._local(source.path, source.kind), self.storage, ref)

    def _folders(self, table: TableConfig, source: SynapseLinkSourceConfig) -> SynapseFolders:
        """A Synapse Link export's folders, beside the target's lineage."""
        root = self._local(source.path, source.kind).rstrip("/")
        target = self.config.qualified(table)

        def published() -> dict[str, int]:
            return self.tables.published_batches(target) if self.tables.exists(target) else {}

        return SynapseFolders(source, self.storage, root, published)

    def _feed(self, table: TableConfig, source: ChangeFeedBase) -> list[BatchRef]:
        """A change feed's next load (sources/feed_listing.py)."""
        from lakefresh.sources.delta_changes import first_start_in

        tables, target = self.tables, self.config.qualified(table)
        first: Callable[[], int | None] = lambda: None  # noqa: E731
        if isinstance(source, DeltaChangesSourceConfig):
            name = self._local(source.path, source.kind)
            first = lambda: first_start_in(tables.delta_lineage(name))  # noqa: E731
        else:
            assert isinstance(source, TableChangesSourceConfig)
            name = source.table
        load_id = source.load_id or target
        log = f"{self.config.catalog.control_namespace}.{LOADS_TABLE}"
        loads = loads_in(tables.rows(log, ("load_id", load_id)) if tables.exists(log) else [], load_id)

        def published() -> dict[str, int]:
            return tables.published_batches(target) if tables.exists(target) else {}

        return FeedListing(tables, name, load_id, first, published).batches(loads)

    def _local(self, path: str, kind: str) -> str:
        """The source's folder as a run resolves it (sources/base.py `SourceContext.resolve`);
        NotNative when it is not on this machine's file system."""
        if "://" in path and not path.startswith("file://"):
            raise NotNative(f"a {kind} source in {path.split('://')[0]}:// is listed through Spark")
        if "://" in path or path.startswith("/"):
            return path
        return f"{self.base_dir.rstrip('/')}/{path}"
