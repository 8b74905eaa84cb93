"""Checkpointed rows released when the work that made them ends.

A `localCheckpoint`'s blocks stay in the driver's block manager until something releases them:
Spark drops them only once the driver's garbage collector finds the RDD unreachable. So a
batch's rows (a 5 M-row initial load and its change set: 2.6 GB) would be held while the next
batches run, pressing on the memory every later step works in, and a long-running pipeline
would hold them for as long as its JVM is not collected. The work that uses them (one batch's
attempt, one backlog group, one verb) runs inside `released_after()`, which releases every
checkpoint made within it (`held`) when it ends.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from lakefresh.lakehouse.connect import is_connect

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

P = ParamSpec("P")
R = TypeVar("R")

# the checkpoints made inside the innermost `released_after()` (None: outside of one, kept)
_HELD: ContextVar[list[Any] | None] = ContextVar("lakefresh_checkpoints", default=None)


@contextmanager
def released_after() -> Iterator[None]:
    """Release the checkpoints made inside (their blocks dropped from memory and disk) when the
    block ends, however it ends. A DataFrame read from a released checkpoint fails (it is never
    silently computed again), so nothing made inside may be used after the block."""
    held_here: list[Any] = []
    token = _HELD.set(held_here)
    try:
        yield
    finally:
        _HELD.reset(token)
        for rdd in held_here:
            with suppress(Exception):  # a session stopped meanwhile holds nothing
                rdd.unpersist(False)  # not blocking: the blocks go while the next work starts


def releasing(work: Callable[P, R]) -> Callable[P, R]:
    """`work` inside `released_after()`: what it materializes is released when it returns."""

    @functools.wraps(work)
    def released(*args: P.args, **kwargs: P.kwargs) -> R:
        with released_after():
            return work(*args, **kwargs)

    return released


def held(df: DataFrame) -> DataFrame:
    """A DataFrame just checkpointed (`localCheckpoint`), released at the end of the enclosing
    `released_after()` (outside of one, kept as Spark keeps it)."""
    scope = _HELD.get()
    if scope is not None and not is_connect(df.sparkSession):
        scope.append(df._jdf.queryExecution().analyzed().rdd())  # the checkpoint's RDD
    # (a Spark Connect server releases a checkpoint when the client's DataFrame is collected)
    return df
