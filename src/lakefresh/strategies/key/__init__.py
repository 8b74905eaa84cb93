"""Strategy `key` (alias `scd1`): upsert by natural key, with record status codes.

The package: `strategy.py` (the strategy: each batch row's status against the stored record of
its key, the change set, a backlog group's fold), `merge.py` (a plain table's MERGE that judges
the batch rows itself), `deletes.py` (deletes, tombstones, a full snapshot's retired keys and a
truncate marker's) and `log.py` (`output: change_log`: the same judgement written as an upsert
stream's events; the registry, strategies/__init__.py, chooses it for a config that writes a
change log).
"""

from lakefresh.strategies.key.log import KeyLogStrategy
from lakefresh.strategies.key.strategy import KeyStrategy

__all__ = ["KeyLogStrategy", "KeyStrategy"]
