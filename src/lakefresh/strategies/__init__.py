"""Refresh strategies: one module (or package) each, registered by the config model it reads.

A strategy kind lives in two places only: its config model (config/strategies.py: its `kind`
names and aliases, its options, its capabilities) and its strategy class (its status codes and
how a batch becomes a commit). This registry joins them by type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, get_args

from lakefresh.config.strategies import StrategyBase, StrategyConfig
from lakefresh.strategies.append import AppendStrategy
from lakefresh.strategies.base import ChangeSet, Dimension, GroupStaging, StageContext, Strategy
from lakefresh.strategies.custom import CustomStrategy
from lakefresh.strategies.full import FullStrategy
from lakefresh.strategies.key import KeyStrategy
from lakefresh.strategies.key_log import KeyLogStrategy
from lakefresh.strategies.ledger import LedgerStrategy
from lakefresh.strategies.rebuild import Rebuild
from lakefresh.strategies.scd2 import Scd2Strategy
from lakefresh.strategies.sequence import SequenceStrategy
from lakefresh.strategies.snapshot import SnapshotStrategy
from lakefresh.strategies.timestamp import TimestampStrategy

if TYPE_CHECKING:
    from collections.abc import Callable

# config model -> the strategy that applies it; every model of the union has exactly one
STRATEGIES: dict[type[StrategyBase], Callable[[Any], Strategy]] = {
    cls.config_type: cls
    for cls in (
        KeyStrategy,  # a table, or an upsert stream's log (KeyLogStrategy)
        Scd2Strategy,
        AppendStrategy,
        FullStrategy,
        LedgerStrategy,
        SnapshotStrategy,
        TimestampStrategy,
        SequenceStrategy,
        CustomStrategy,
    )
}
assert set(STRATEGIES) == set(get_args(StrategyConfig)), "a strategy config without a strategy"


def make_strategy(config: StrategyConfig) -> Strategy:
    """The strategy for a config, by the config's model."""
    return STRATEGIES[type(config)](config)


def status_codes() -> dict[str, dict[str, str]]:
    """Every kind's status codes and their meanings, by kind (aliases included)."""
    return {
        kind: cls.status_codes  # type: ignore[attr-defined]
        for model, cls in STRATEGIES.items()
        for kind in model.kinds()
    }


__all__ = [
    "STRATEGIES",
    "AppendStrategy",
    "ChangeSet",
    "CustomStrategy",
    "Dimension",
    "FullStrategy",
    "GroupStaging",
    "KeyLogStrategy",
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
    "status_codes",
]
