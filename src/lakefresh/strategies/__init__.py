"""Refresh strategies: one module each, registered by `kind` (aliases map to the same class)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakefresh.strategies.append import AppendStrategy
from lakefresh.strategies.base import ChangeSet, StageContext, Strategy
from lakefresh.strategies.full import FullStrategy
from lakefresh.strategies.key import KeyStrategy

if TYPE_CHECKING:
    from lakefresh.config.strategies import StrategyConfig

STRATEGIES: dict[str, type] = {
    "key": KeyStrategy,
    "scd1": KeyStrategy,
    "append": AppendStrategy,
    "none": AppendStrategy,
    "full": FullStrategy,
}


def make_strategy(config: StrategyConfig) -> Strategy:
    """The strategy for a config, by its `kind`."""
    strategy: Strategy = STRATEGIES[config.kind](config)
    return strategy


__all__ = [
    "STRATEGIES",
    "AppendStrategy",
    "ChangeSet",
    "FullStrategy",
    "KeyStrategy",
    "StageContext",
    "Strategy",
    "make_strategy",
]
