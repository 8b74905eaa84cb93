"""The operator's verbs, built on the batch log and the target's lineage: `adopt` (a table another
tool wrote made lakefresh's), `plan` (what a run would do, written nowhere), `status` (where each
table stands), `rollback` (Iceberg's own rollback of a tail of batches), `reset`, `unload` and
`reload` (the table rebuilt from its retained raw batches, in one commit), `replay` (corrected
quarantined rows as a new batch) and `maintain` (compaction, expiry, orphan files)."""

from lakefresh.verbs.adopt import AdoptResult, adopt
from lakefresh.verbs.maintain import MaintainResult, TableUpkeep, maintain
from lakefresh.verbs.plan import PlanResult, TablePlan, plan
from lakefresh.verbs.rebuild import RebuildResult, rebuild
from lakefresh.verbs.replay import ReplayResult, replay
from lakefresh.verbs.rollback import RollbackResult, roll_back

__all__ = [
    "AdoptResult",
    "MaintainResult",
    "PlanResult",
    "RebuildResult",
    "ReplayResult",
    "RollbackResult",
    "TablePlan",
    "TableUpkeep",
    "adopt",
    "maintain",
    "plan",
    "rebuild",
    "replay",
    "roll_back",
]
