"""What every source yields: batch references in a stable order, and their rows when read."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from lakefresh.config.models import PipelineConfig, TableConfig
    from lakefresh.lakehouse.backend import TableBackend


@dataclass(frozen=True)
class BatchRef:
    """A batch before it is read: identity, order and provenance."""

    batch_id: str
    position: str
    order_key: tuple[str, ...]
    batch_time: datetime  # UTC, naive: when the batch was produced (e.g. file modification time)
    files: tuple[str, ...] = ()
    replay: dict[str, object] = field(default_factory=dict)
    waits: str | None = None  # why it is not to be taken yet (e.g. a file still being written)


def ready(listed: list[BatchRef], applied: set[str]) -> tuple[list[BatchRef], list[tuple[str, str]]]:
    """The listed batches not applied yet, up to the first that waits; and those that wait (it,
    and every one after it, so that batches stay in order), with why."""
    pending = [ref for ref in listed if ref.batch_id not in applied]
    first = next((i for i, ref in enumerate(pending) if ref.waits is not None), len(pending))
    waiting = [
        (ref.batch_id, ref.waits or f"after {pending[first].batch_id!r}, which waits (batches stay in order)")
        for ref in pending[first:]
    ]
    return pending[:first], waiting


@dataclass
class ReadBatch:
    """A batch's rows: every row, with REASON_COLUMN set on those that must be quarantined; and,
    for a source whose rows say when the batch was produced, how to tell that time from them."""

    ref: BatchRef
    rows: DataFrame
    timed: Callable[[DataFrame], datetime | None] | None = None

    def batch_time(self, good: DataFrame) -> datetime | None:
        """When the batch's rows to load (`good`: its rows, checked) say it was produced; None
        when its reference's time stands."""
        return self.timed(good) if self.timed is not None else None


@dataclass(frozen=True)
class SourceContext:
    """What a source may use besides its config."""

    spark: SparkSession
    base_dir: str  # the pipeline file's folder
    backend: TableBackend
    control_namespace: str
    target: str  # the target's namespace.table

    @classmethod
    def of(
        cls, config: PipelineConfig, backend: TableBackend, base_dir: str, table: TableConfig
    ) -> SourceContext:
        """The context of a pipeline table's source."""
        return cls(
            backend.spark, base_dir, backend, config.catalog.control_namespace, config.qualified(table)
        )

    def resolve(self, path: str) -> str:
        """A source path as Spark reads it: a URI or absolute path as it is, any other relative
        to the pipeline file's folder."""
        if "://" in path or path.startswith("/"):
            return path
        return f"{self.base_dir.rstrip('/')}/{path}"


class Source(Protocol):
    """A place batches come from. Each kind is a class of sources/ registered by its config model
    (sources/__init__.py); what it can do beyond this is declared by that model (its
    capabilities: config/sources.py) and by the optional protocols below."""

    kind: str

    def list_batches(self) -> list[BatchRef]:
        """Every batch the source holds now, in processing order.

        Returns:
            Batch references sorted by `order_key`; a batch not ready yet is not listed.
        """

    def published(self, ref: BatchRef) -> bool:
        """Told that the batch is in the target (just published, or found in its lineage).

        Returns:
            Whether the source's own state changed, so that listing again gives other batches
            (a change feed's next load); False for sources that keep no state.
        """

    def read(self, ref: BatchRef, target_schema: StructType | None) -> ReadBatch:
        """Read one batch.

        Args:
            ref: the batch, as listed.
            target_schema: the target's schema when it exists, used for the types of columns the
                source does not declare.

        Returns:
            The rows, typed, with provenance columns and a reason on rows that must be quarantined.
        """


@runtime_checkable
class Reopening(Protocol):
    """A source that keeps its own positions (a change feed's loads): batches a rollback of the
    target removed, and the operator has applied again (`--rolled-back reapply`), are listed
    again only once it reopens them."""

    def reopen(self, batch_ids: list[str]) -> None:
        """List these batches again, in order."""


@runtime_checkable
class ReadsMany(Protocol):
    """A source that reads several batches as one (a backlog group, run/backlog.py)."""

    def read_many(self, refs: list[BatchRef], target_schema: StructType | None) -> DataFrame | None:
        """Their rows, each with its batch's index in `refs` (SEQ_COLUMN); None when they
        cannot be read as one."""


@runtime_checkable
class Waits(Protocol):
    """A source that can tell what it holds that is not listed as a batch yet (`plan`)."""

    def waiting(self) -> list[tuple[str, str]]:
        """Each such thing's name, and why it waits."""


def with_provenance(df: DataFrame, origin: Column | None = None, record: Column | None = None) -> DataFrame:
    """Rows that come from no file get the provenance columns: `origin` (e.g. the snapshot) as the
    file, `record` as the record ordinal (it orders rows of one key: the last wins), no line, no
    raw text, no quarantine reason."""
    from pyspark.sql import functions as F

    from lakefresh.columns import FILE_COLUMN, LINE_COLUMN, RAW_COLUMN, REASON_COLUMN, RECORD_COLUMN

    return df.select(
        "*",
        (origin if origin is not None else F.lit(None)).cast("string").alias(FILE_COLUMN),
        (record if record is not None else F.lit(None)).cast("bigint").alias(RECORD_COLUMN),
        F.lit(None).cast("bigint").alias(LINE_COLUMN),
        F.lit(None).cast("string").alias(REASON_COLUMN),
        F.lit(None).cast("string").alias(RAW_COLUMN),
    )


def returned_order(query: str | None, dialect: str | None = "spark") -> Column | None:
    """The record ordinal of a query's rows (see `with_provenance`): the order it returns them in
    when it ends in ORDER BY (the user's order: the last row of a key wins), or when its text
    cannot be parsed (so it cannot be told); otherwise none, and the rows' contents decide between
    a key's rows (strategies/ordering.py): a table's scan, or a query's shuffle, returns rows in
    an order that another read of the same rows need not repeat."""
    from pyspark.sql import functions as F

    from lakefresh.config.expressions import ends_in_order_by

    if query is not None and ends_in_order_by(query, dialect) is not False:
        return F.monotonically_increasing_id() + 1
    return None
