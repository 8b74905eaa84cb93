"""The operator's verbs, built on the batch log and the target's lineage: `rollback` today
(unload, reload, reset and plan are to come, on the same ground)."""

from lakefresh.verbs.rollback import RollbackResult, roll_back

__all__ = ["RollbackResult", "roll_back"]
