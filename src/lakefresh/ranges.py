"""Effective ranges: the part of a batch's range that no later batch has replaced. No pyspark.

A range strategy's batch replaces the closed range [min, max] of its column. A later batch whose
range overlaps takes that part over, so an earlier batch may end up owning nothing, one piece, or
two pieces (when a later range falls strictly inside it). Pieces are intervals whose ends may be
open: [1, 10] minus [4, 6] is [1, 4) and (6, 10].
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from decimal import Decimal
from typing import Any


@dataclass(frozen=True)
class Interval:
    start: str
    end: str
    start_inclusive: bool = True
    end_inclusive: bool = True

    def __str__(self) -> str:
        left = "[" if self.start_inclusive else "("
        right = "]" if self.end_inclusive else ")"
        return f"{left}{self.start}, {self.end}{right}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def sort_key(range_type: str) -> Callable[[str], Any]:
    """How bounds of a range type compare: timestamps by their fixed-width text, numbers as
    decimals."""
    if range_type == "sequence":
        return Decimal
    return str


def subtract(pieces: Sequence[Interval], low: str, high: str, key: Callable[[str], Any]) -> list[Interval]:
    """`pieces` minus the closed range [low, high]."""
    lo, hi = key(low), key(high)
    out: list[Interval] = []
    for piece in pieces:
        start, end = key(piece.start), key(piece.end)
        apart = (
            hi < start
            or (hi == start and not piece.start_inclusive)
            or lo > end
            or (lo == end and not piece.end_inclusive)
        )
        if apart:
            out.append(piece)
            continue
        if start < lo:
            out.append(Interval(piece.start, low, piece.start_inclusive, False))
        if end > hi:
            out.append(Interval(high, piece.end, False, piece.end_inclusive))
    return [p for p in out if _nonempty(p, key)]


def _nonempty(piece: Interval, key: Callable[[str], Any]) -> bool:
    start, end = key(piece.start), key(piece.end)
    if start < end:
        return True
    return start == end and piece.start_inclusive and piece.end_inclusive


def effective_ranges(
    batches: Sequence[tuple[str, str | None, str | None]], range_type: str
) -> dict[str, list[Interval]]:
    """For batches in the order they were published, as (batch id, min, max), what each still owns.

    A batch with no range (an empty batch) owns nothing.
    """
    key = sort_key(range_type)
    owned: dict[str, list[Interval]] = {}
    for batch_id, low, high in batches:
        for earlier in owned:
            if low is not None and high is not None:
                owned[earlier] = subtract(owned[earlier], low, high, key)
        owned[batch_id] = [Interval(low, high)] if low is not None and high is not None else []
    return owned
