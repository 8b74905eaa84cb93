"""The results name a table's version `version` (`versions`, by table); their JSON, which
scripts read (`--output json`), names it `snapshot_id` (`snapshots`)."""

import pytest

from lakefresh.results import BatchResult, TableResult
from lakefresh.verbs.adopt import AdoptResult
from lakefresh.verbs.rebuild import RebuildResult
from lakefresh.verbs.replay import ReplayResult
from lakefresh.verbs.rollback import RollbackResult


def batch(version: int) -> BatchResult:
    return BatchResult("shop.t", "b1.csv", "published", version=version)


def test_a_batch_s_version_is_its_snapshot_id_in_json() -> None:
    out = batch(7).to_dict()
    assert out["snapshot_id"] == 7 and "version" not in out
    assert TableResult("t", [batch(7)]).to_dict()["batches"][0]["snapshot_id"] == 7


def test_a_verb_s_versions_are_its_snapshots_in_json() -> None:
    rebuilt = RebuildResult("unload", "t", versions={"t": 8}, reloaded=[batch(7)]).to_dict()
    assert (rebuilt["snapshots"], rebuilt["reloaded"][0]["snapshot_id"]) == ({"t": 8}, 7)
    assert RollbackResult("t", "b1.csv", versions={"t": 6}).to_dict()["snapshots"] == {"t": 6}
    assert AdoptResult("t", "lakefresh:adopt:1", 3, 9).to_dict()["snapshot_id"] == 9
    assert ReplayResult("t", "b1.csv", batch(7), 1).to_dict()["replay"]["snapshot_id"] == 7


def test_python_callers_of_the_earlier_names_get_the_version_with_a_deprecation_warning():
    batch = BatchResult(table="t", batch_id="b1", status="published", version=7)
    with pytest.warns(DeprecationWarning, match=r"\.version"):
        assert batch.snapshot_id == 7
    assert "snapshot_id" in batch.to_dict() and "version" not in batch.to_dict()
