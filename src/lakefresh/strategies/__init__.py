"""Refresh strategies: one module each, registered by `kind` (aliases map to the same class)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakefresh.strategies.append import AppendStrategy
from lakefresh.strategies.base import ChangeSet, StageContext, Strategy
from lakefresh.strategies.custom import CustomStrategy
from lakefresh.strategies.full import FullStrategy
from lakefresh.strategies.key import KeyStrategy
from lakefresh.strategies.ledger import LedgerStrategy
from lakefresh.strategies.rebuild import Rebuild
from lakefresh.strategies.scd2 import Scd2Strategy
from lakefresh.strategies.sequence import SequenceStrategy
from lakefresh.strategies.snapshot import SnapshotStrategy
from lakefresh.strategies.timestamp import TimestampStrategy

if TYPE_CHECKING:
    from lakefresh.config.strategies import StrategyConfig

STRATEGIES: dict[str, type] = {
    "key": KeyStrategy,
    "scd1": KeyStrategy,
    "scd2": Scd2Strategy,
    "append": AppendStrategy,
    "none": AppendStrategy,
    "full": FullStrategy,
    "ledger": LedgerStrategy,
    "snapshot": SnapshotStrategy,
    "timestamp": TimestampStrategy,
    "sequence": SequenceStrategy,
    "custom": CustomStrategy,
}


def make_strategy(config: StrategyConfig) -> Strategy:
    """The strategy for a config, by its `kind`."""
    strategy: Strategy = STRATEGIES[config.kind](config)
    return strategy


__all__ = [
    "STRATEGIES",
    "AppendStrategy",
    "ChangeSet",
    "CustomStrategy",
    "FullStrategy",
    "KeyStrategy",
    "LedgerStrategy",
    "Rebuild",
    "Scd2Strategy",
    "SequenceStrategy",
    "SnapshotStrategy",
    "StageContext",
    "Strategy",
    "TimestampStrategy",
    "make_strategy",
]
