"""The operator's verbs, built on the batch log and the target's lineage: `rollback` (Iceberg's
own rollback of a tail of batches), and `reset`, `unload` and `reload` (the table rebuilt from its
retained raw batches, in one commit)."""

from lakefresh.verbs.rebuild import RebuildResult, rebuild
from lakefresh.verbs.rollback import RollbackResult, roll_back

__all__ = ["RebuildResult", "RollbackResult", "rebuild", "roll_back"]
