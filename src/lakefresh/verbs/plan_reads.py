"""What `plan` reads, by either road: :class:`PlanReads`, the one protocol its one code
(verbs/plan.py) reads through.

- :class:`SparkPlanReads`: the format backend and the control tables, the sources as a run makes
  them; each waiting batch is read (and transformed) to name the columns it adds.
- :class:`NativePlanReads`, without a JVM (the road `plan` takes where the tables and the sources
  allow it, as `status` does): lakehouse/native.py's reader for the targets' lineage and deletes,
  state/log_rows.py for the `batches` log, sources/native_listing.py for the listings, and
  sources/batch_shapes.py for the columns of the waiting batches, told from their headers,
  footers and model.json without reading their rows. What that road cannot tell without
  reading the data through Spark (the columns a transform beyond a plain SELECT makes; whether
  batches bringing the same new columns, which Spark types from the data, read as the same
  types) it says in the table's `unknown`, and `plan --read-batches` reads them through Spark.
  What it cannot read at all (another catalog, a table or query source) raises NotNative: the
  whole plan takes the Spark road.

Both read a batch as a run reads it into the target: a column its source does not declare takes
the target's type where the target has it.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from lakefresh.columns import SYSTEM_PREFIX
from lakefresh.run.assessment import LogReader, TargetReads
from lakefresh.run.transform import transformed
from lakefresh.sources import Source, Waits
from lakefresh.sources.batch_shapes import transformed_columns
from lakefresh.sources.native_listing import NativeListing
from lakefresh.state.log_rows import RowsLog
from lakefresh.verbs.maintain import DeleteReads

if TYPE_CHECKING:
    from lakefresh.config.models import PipelineConfig, TableConfig
    from lakefresh.lakehouse.native import NativeTables
    from lakefresh.sources import BatchRef
    from lakefresh.verbs.common import VerbContext

# how a plan without a JVM says where the rest of its answer is
READ_BATCHES = "lakefresh plan --read-batches reads them through Spark"


class PlanTargets(TargetReads, DeleteReads, Protocol):
    """What a plan reads of a target: its lineage, and the deletes its readers apply."""


@dataclass
class BatchColumns:
    """The columns a table's waiting batches would bring."""

    new: list[str] = field(default_factory=list)  # the columns they add to the target, in order
    # batch id -> its columns and their types as read, compared between the batches of a group
    shapes: dict[str, Hashable] = field(default_factory=dict)
    # batches of which some columns are typed from the data: equal shapes may still differ
    inferred: set[str] = field(default_factory=set)
    unknown: str | None = None  # why `new` could not be told


class PlanReads(Protocol):
    """What `plan` reads (the module's doc)."""

    config: PipelineConfig
    targets: PlanTargets
    reports_failures: bool  # any failure of a table is reported on it; else only a LakefreshError

    def log(self) -> LogReader | None:
        """The `batches` log; None when it does not exist yet."""

    def batches(self, table: TableConfig) -> list[BatchRef]:
        """The batches the table's source holds now, in order, as a run lists them."""

    def waiting(self, table: TableConfig) -> list[tuple[str, str]]:
        """What the source holds that is not listed yet, with the reason."""

    def size(self, path: str) -> int:
        """A file's bytes."""

    def columns(self, table: TableConfig, name: str, pending: list[BatchRef]) -> BatchColumns:
        """The columns these batches of the table would bring to target `name` (it exists)."""


def added(known: Iterable[str], batches: Iterable[Iterable[str]]) -> list[str]:
    """The columns of the batches (in order) that the target lacks, lakefresh's own aside."""
    have = {c.lower() for c in known}
    seen: list[str] = []
    for columns in batches:
        for c in columns:
            if c.lower() not in have and not c.startswith(SYSTEM_PREFIX):
                seen.append(c)
                have.add(c.lower())
    return seen


class SparkPlanReads:
    """:class:`PlanReads` through Spark: each waiting batch read, and transformed."""

    reports_failures = True

    def __init__(self, ctx: VerbContext) -> None:
        self.ctx = ctx
        self.config = ctx.config
        self.targets: PlanTargets = ctx.backend
        self._sources: dict[str, Source] = {}

    def _source(self, table: TableConfig) -> Source:
        if table.name not in self._sources:
            self._sources[table.name] = self.ctx.source(table)
        return self._sources[table.name]

    def log(self) -> LogReader | None:
        return self.ctx.control if self.ctx.backend.exists(self.ctx.control.batches) else None

    def batches(self, table: TableConfig) -> list[BatchRef]:
        return self._source(table).list_batches()

    def waiting(self, table: TableConfig) -> list[tuple[str, str]]:
        source = self._source(table)
        return source.waiting() if isinstance(source, Waits) else []

    def size(self, path: str) -> int:
        from lakefresh.lakehouse.storage import storage_for

        return storage_for(self.ctx.backend.spark).size(path)

    def columns(self, table: TableConfig, name: str, pending: list[BatchRef]) -> BatchColumns:
        backend, out, read = self.ctx.backend, BatchColumns(), []
        schema = backend.schema(name)  # as the run reads them: undeclared columns typed as there
        for ref in pending:
            rows = self._source(table).read(ref, schema).rows
            out.shapes[ref.batch_id] = str(rows.schema)
            if table.transform is not None:
                rows = transformed(self.config, backend, table, rows)
            read.append(rows.columns)
        out.new = added((f.name for f in schema.fields), read)
        return out


class NativePlanReads:
    """:class:`PlanReads` without a JVM (the module's doc)."""

    reports_failures = False  # another failure sends the whole plan through Spark

    def __init__(self, config: PipelineConfig, base_dir: str, tables: NativeTables) -> None:
        self.config = config
        self.targets: PlanTargets = tables
        self.tables = tables
        self.listing = NativeListing(config, base_dir, tables)

    def log(self) -> LogReader | None:
        found = RowsLog(self.tables, self.config.catalog.control_namespace)
        return found if self.tables.exists(found.batches) else None

    def batches(self, table: TableConfig) -> list[BatchRef]:
        return self.listing.batches(table)

    def waiting(self, table: TableConfig) -> list[tuple[str, str]]:
        return self.listing.waiting(table)

    def size(self, path: str) -> int:
        return self.listing.storage.size(path)

    def columns(self, table: TableConfig, name: str, pending: list[BatchRef]) -> BatchColumns:
        out, read, target = BatchColumns(), [], self.tables.columns(name)
        for ref in pending:
            shape = self.listing.shape(table, ref).typed_by(target)
            out.shapes[ref.batch_id] = shape
            if shape.inferred:
                out.inferred.add(ref.batch_id)
            found: list[str] | None = list(shape.columns)
            if table.transform is not None:
                found = transformed_columns(table, shape.columns)
            if found is None:
                out.unknown = (
                    "the columns its batches add: its transform is more than a plain SELECT of "
                    f"batch, and only Spark names what it makes ({READ_BATCHES})"
                )
            read.append(found or [])
        out.new = [] if out.unknown else added(target, read)
        return out
