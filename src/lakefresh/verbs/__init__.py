"""The operator's verbs, built on the batch log and the target's lineage: `plan` (what a run would
do, written nowhere), `rollback` (Iceberg's
own rollback of a tail of batches), and `reset`, `unload` and `reload` (the table rebuilt from its
retained raw batches, in one commit), `maintain` (compaction, expiry, orphan files)."""

from lakefresh.verbs.maintain import MaintainResult, TableUpkeep, maintain
from lakefresh.verbs.plan import PlanResult, TablePlan, plan
from lakefresh.verbs.rebuild import RebuildResult, rebuild
from lakefresh.verbs.rollback import RollbackResult, roll_back

__all__ = [
    "MaintainResult",
    "PlanResult",
    "RebuildResult",
    "RollbackResult",
    "TablePlan",
    "TableUpkeep",
    "maintain",
    "plan",
    "rebuild",
    "roll_back",
]
