"""What every source yields: batch references in a stable order, and their rows when read."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType


@dataclass(frozen=True)
class BatchRef:
    """A batch before it is read: identity, order and provenance."""

    batch_id: str
    position: str
    order_key: tuple[str, ...]
    batch_time: datetime  # UTC, naive: when the batch was produced (e.g. file modification time)
    files: tuple[str, ...] = ()
    replay: dict[str, object] = field(default_factory=dict)


@dataclass
class ReadBatch:
    """A batch's rows: every row, with REASON_COLUMN set on those that must be quarantined."""

    ref: BatchRef
    rows: DataFrame


class Source(Protocol):
    """A place batches come from."""

    kind: str

    def list_batches(self) -> list[BatchRef]:
        """Every batch the source holds now, in processing order.

        Returns:
            Batch references sorted by `order_key`; a batch not ready yet is not listed.
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
