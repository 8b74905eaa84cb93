"""Refresh strategies: one module (or package) each, registered by the config model it reads.

A strategy kind lives in two places only: its config model (config/strategies.py: its `kind`
names and aliases, its options, its capabilities) and its strategy class (its status codes and
how a batch becomes a commit). This registry joins them by type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, get_args

from lakefresh.config.strategies import KeyStrategyConfig, StrategyBase, StrategyConfig
from lakefresh.strategies.append import AppendStrategy
from lakefresh.strategies.base import ChangeSet, Dimension, GroupStaging, StageContext, Strategy
from lakefresh.strategies.custom import CustomStrategy
from lakefresh.strategies.full import FullStrategy
from lakefresh.strategies.key import KeyLogStrategy, KeyStrategy
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
        KeyStrategy,
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

# a kind whose change log (`output: change_log`) is a strategy of its own: the config model -> that
# strategy (the other kinds that write a change log do it in their one strategy)
CHANGE_LOG_STRATEGIES: dict[type[StrategyBase], Callable[[Any], Strategy]] = {
    KeyStrategyConfig: KeyLogStrategy,  # an upsert stream's log
}
assert set(CHANGE_LOG_STRATEGIES) <= set(STRATEGIES), "a change-log strategy of no kind"


def make_strategy(config: StrategyConfig) -> Strategy:
    """The strategy for a config, by the config's model (and, for a kind with one, its change-log
    strategy when the config writes a change log)."""
    model = type(config)
    if config.writes_change_log() and model in CHANGE_LOG_STRATEGIES:
        return CHANGE_LOG_STRATEGIES[model](config)
    return STRATEGIES[model](config)


def status_codes() -> dict[str, dict[str, str]]:
    """Every kind's status codes and their meanings, by kind (aliases included)."""
    return {
        kind: cls.status_codes  # type: ignore[attr-defined]
        for model, cls in STRATEGIES.items()
        for kind in model.kinds()
    }


__all__ = [
    "CHANGE_LOG_STRATEGIES",
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
