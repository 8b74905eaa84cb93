"""When a merge-on-read target is due a compaction (config/maintenance.py): by the share of its
stored rows that are deleted but still in its data files, once there are enough of them, or by
its delete files when `compact_at_delete_files` is set."""

from __future__ import annotations

import pytest

from lakefresh.config.maintenance import MaintenanceConfig
from lakefresh.lakehouse.backend import Deletes


@pytest.mark.parametrize(
    ("policy", "deletes", "due"),
    [
        ({}, Deletes(files=500, rows=90_000, stored=1_000_000), None),  # 9 %: not yet, however many files
        (
            {},
            Deletes(files=5, rows=100_000, stored=1_000_000),
            "100000 of 1000000 stored rows deleted (10%; compact_at_deleted_ratio 0.1)",
        ),
        ({}, Deletes(files=1, rows=5_000, stored=6_000), None),  # most rows, but a small table
        (
            {"compact_min_deleted_rows": 1},
            Deletes(files=1, rows=1, stored=4),
            "1 of 4 stored rows deleted (25%; compact_at_deleted_ratio 0.1)",
        ),
        ({"compact_at_deleted_ratio": None}, Deletes(files=9, rows=10**6, stored=10**6), None),
        (
            {"compact_at_delete_files": 20},
            Deletes(files=20, rows=20, stored=10**6),
            "20 delete files (compact_at_delete_files 20)",
        ),
        ({}, Deletes(), None),  # an empty table
    ],
)
def test_a_compaction_is_due_by_deleted_rows_or_delete_files(policy, deletes, due):
    assert MaintenanceConfig(**policy).compaction_due(deletes.files, deletes.rows, deletes.stored) == due


def test_the_ratio_is_a_share():
    with pytest.raises(ValueError, match="less than or equal to 1"):
        MaintenanceConfig(compact_at_deleted_ratio=10)


def test_compact_at_delete_files_null_alone_still_means_never_after_a_run():
    """What the docs advised for the largest tables before the ratio existed."""
    assert MaintenanceConfig(compact_at_delete_files=None).compact_at_deleted_ratio is None
    both = MaintenanceConfig(compact_at_delete_files=None, compact_at_deleted_ratio=0.2)
    assert both.compact_at_deleted_ratio == 0.2
    assert MaintenanceConfig().compact_at_deleted_ratio == 0.1
