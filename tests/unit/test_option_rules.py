"""Strategy and source options refuse the combinations they cannot honour, with a message that says
why (no Spark needed)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from lakefresh.config.sources import FilesSourceConfig
from lakefresh.config.strategies import (
    KeyStrategyConfig,
    LedgerStrategyConfig,
    Scd2StrategyConfig,
    SnapshotStrategyConfig,
)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"truncate": {"column": "op", "value": "T"}, "full_snapshots": True},
            "truncate: not with full_snapshots",
        ),
        ({"event_time": "at"}, "event_time names the change log's event time"),
        ({"output": "change_log", "history": True}, "history: not with output: change_log"),
        ({"output": "change_log", "event_time": "at", "drop_columns": ["at"]}, "not in drop_columns"),
        ({"output": "change_log", "keys": ["offset"]}, "clash with the log's system columns"),
        (
            {"output": "change_log", "event_time_rule": "effective"},
            "event_time_rule judges changes of event_time",
        ),
    ],
)
def test_key_refuses(options, message):
    with pytest.raises(ValidationError, match=message):
        KeyStrategyConfig(**{"kind": "key", "keys": ["id"], **options})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "give keys, or row_hash"),
        ({"keys": ["id"], "row_hash": "h", "full_snapshots": True}, "give keys, or row_hash"),
        ({"row_hash": "h"}, "set full_snapshots: true"),
        ({"row_hash": "h", "full_snapshots": True, "track": ["a"]}, "every column is the identity"),
        ({"keys": ["id"], "drop_columns": ["id"]}, "must be stored"),
    ],
)
def test_scd2_refuses(options, message):
    with pytest.raises(ValidationError, match=message):
        Scd2StrategyConfig(**{"kind": "scd2", **options})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"order_by": "version"}, "order_by: version needs version"),
        ({"order_by": "version", "version": "snapshot_[0-9]+"}, "needs a group"),
        ({"order_by": "batch_time"}, "order_by: batch_time needs batch_time"),
        ({"batch_time": {"name": "x", "metadata": "y"}}, "give one of name, metadata or column"),
        ({"batch_time": {"name": "_(?P<when>[0-9]+)"}}, "needs a group named time"),
    ],
)
def test_files_batch_time_refuses(options, message):
    with pytest.raises(ValidationError, match=message):
        FilesSourceConfig(**{"kind": "files", "path": "in", "format": "csv", **options})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"compare_columns": ["id"]}, "keys are never compared"),
        (
            {"event_time": "at", "event_time_rule": "effective", "compare_columns": ["v", "at"]},
            "nor event_time with event_time_rule: effective",
        ),
        ({"null_event_times": "drop"}, "'batch_time' or 'keep'"),
    ],
)
def test_snapshot_refuses(options, message):
    with pytest.raises(ValidationError, match=message):
        SnapshotStrategyConfig(**{"kind": "snapshot", "keys": ["id"], **options})


def test_ledger_refuses_an_order_without_a_change_log():
    with pytest.raises(ValidationError, match="log_order orders a change log's offsets"):
        LedgerStrategyConfig(kind="ledger", keys=["id"], log_order="arrival")


def test_the_change_logs_follow_open_data_fabric_by_default():
    """Open Data Fabric's rules are the defaults: its event time rule for `snapshot` and `key`'s
    upsert stream, a ledger log ordered by event time; a NULL event time takes the batch's time."""
    snapshot = SnapshotStrategyConfig(kind="snapshot", keys=["id"], event_time="at")
    assert (snapshot.event_time_rule, snapshot.null_event_times) == ("odf", "batch_time")
    assert snapshot.compares_event_time()
    assert not snapshot.model_copy(update={"compare_columns": ["v"]}).compares_event_time()
    assert not snapshot.model_copy(update={"event_time_rule": "effective"}).compares_event_time()
    key = KeyStrategyConfig(kind="key", keys=["id"], output="change_log", event_time="at")
    assert key.event_time_rule == "odf"
    assert LedgerStrategyConfig(kind="ledger", keys=["id"]).log_order == "event_time"
