"""Each strategy kind has one home: its config model (names, options, capabilities) and its
strategy class (status codes, the commit), joined by a typed registry. No Spark needed."""

from __future__ import annotations

from typing import get_args

import pytest

from lakefresh.config.change_log import ChangeLogColumns
from lakefresh.config.strategies import DIMENSION_KINDS, STRATEGY_KINDS, StrategyConfig
from lakefresh.strategies import STRATEGIES, status_codes

MODELS = get_args(StrategyConfig)


def test_every_kind_a_pipeline_may_name_comes_from_the_config_union() -> None:
    assert tuple(k for m in MODELS for k in m.kinds()) == STRATEGY_KINDS
    assert {"key", "scd1", "scd2", "append", "none", "full", "ledger", "snapshot"} <= set(STRATEGY_KINDS)
    assert len(set(STRATEGY_KINDS)) == len(STRATEGY_KINDS)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.kinds()[0])
def test_every_config_model_has_one_strategy_with_its_status_codes(model: type) -> None:
    strategy = STRATEGIES[model]
    assert strategy.config_type is model  # type: ignore[attr-defined]
    assert strategy.kind == model.kinds()[0]  # type: ignore[attr-defined]
    codes = strategy.status_codes  # type: ignore[attr-defined]
    assert codes and all(isinstance(v, str) and v for v in codes.values())


def test_status_codes_by_kind_include_the_aliases() -> None:
    codes = status_codes()
    assert codes["scd1"] is codes["key"]
    assert codes["none"] == {"N": "appended"}
    assert set(codes["snapshot"]) == {"+A", "-R", "-C", "+C"}


def test_capabilities_live_on_the_config_models() -> None:
    assert DIMENSION_KINDS == ("key", "scd1", "scd2")
    by_kind = {m.kinds()[0]: m for m in MODELS}
    # snapshot always writes a change log; key, ledger and append may (output: change_log)
    loggers = [k for k, m in by_kind.items() if issubclass(m, ChangeLogColumns)]
    assert loggers == ["key", "append", "ledger", "snapshot"]
    assert by_kind["snapshot"](kind="snapshot", keys=["id"]).writes_change_log()
    log = by_kind["key"](kind="key", keys=["id"], output="change_log")
    assert log.writes_change_log() and not log.corrected_rows_alone()
    assert log.one_batch_at_a_time() is not None
    assert log.added_columns() == ["offset", "op", "system_time", "event_time"]
    assert not by_kind["ledger"](kind="ledger", keys=["id"]).writes_change_log()
    key = by_kind["key"](kind="key", keys=["id"], history=True)
    assert key.key_columns() == ["id"] and key.keeps_history() and key.corrected_rows_alone()
    scd2 = by_kind["scd2"](kind="scd2", keys=["id"], full_snapshots=True)
    assert scd2.validity_columns() == ("valid_from", "valid_to")
    assert not scd2.corrected_rows_alone()  # a snapshot of a few rows would retire the rest
    assert scd2.added_columns() == ["valid_from", "valid_to", "is_current"]
    assert by_kind["append"](kind="append").key_columns() == []


@pytest.mark.parametrize(
    ("strategy", "message"),
    [
        ({"kind": "scd2", "keys": ["id"], "change_detection": "sequence"}, "needs sequence_by"),
        ({"kind": "scd2", "keys": ["id"], "deletes": "new_record"}, "give soft_delete_column"),
        ({"kind": "scd2", "keys": ["id"], "snapshot_scope": ["d"]}, "set full_snapshots"),
        ({"kind": "scd2", "keys": ["id"], "sequence_by": "d", "resent_rows": "skip"}, "no sequence_by"),
        ({"kind": "scd2", "keys": ["id"], "resent_rows": "derive"}, "derive implies .* set full_snapshots"),
        (
            {
                "kind": "scd2",
                "keys": ["id"],
                "full_snapshots": True,
                "late_rows": "ignore",
                "resent_rows": "derive",
            },
            "late_rows: apply",
        ),
        ({"kind": "key", "keys": ["id"], "snapshot_scope": ["d"]}, "set full_snapshots"),
        ({"kind": "key", "keys": ["id"], "drop_columns": ["id"]}, "must be stored"),
        ({"kind": "key", "keys": ["id"], "date_column": "d", "dedupe": {"by": "p"}}, "no ordering column"),
        (
            {"kind": "key", "keys": ["id"], "tombstone_retention": "2d", "soft_delete_column": "gone"},
            "not with soft_delete_column",
        ),
        (
            {"kind": "key", "keys": ["id"], "tombstone_retention": "2d", "output": "change_log"},
            "not with output",
        ),
        ({"kind": "key", "keys": ["id"], "tombstone_retention": "soon"}, "positive duration"),
        ({"kind": "key", "keys": ["id"], "undated_deletes": "apply"}, "needs date_column and delete"),
        ({"kind": "custom"}, "exactly one of delete_when or delete_matching"),
        ({"kind": "custom", "delete_when": "true", "delete_matching": ["a"]}, "exactly one of"),
        ({"kind": "custom", "delete_when": "this.a = input.a", "outside_rows": "drop"}, "target alone"),
    ],
)
def test_new_options_are_checked_before_spark(strategy: dict, message: str) -> None:
    from pydantic import TypeAdapter, ValidationError

    with pytest.raises(ValidationError, match=message):
        TypeAdapter(StrategyConfig).validate_python(strategy)


def test_tombstone_retention_reads_as_seconds_and_applies_one_batch_at_a_time() -> None:
    from pydantic import TypeAdapter

    cfg = TypeAdapter(StrategyConfig).validate_python(
        {"kind": "key", "keys": ["id"], "tombstone_retention": "2d"}
    )
    assert cfg.tombstone_retention == 2 * 86400  # type: ignore[union-attr]
    assert "tombstone_retention" in (cfg.one_batch_at_a_time() or "")
    plain = TypeAdapter(StrategyConfig).validate_python({"kind": "key", "keys": ["id"]})
    assert plain.tombstone_retention is None and plain.undated_deletes == "quarantine"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("options", "resent_rows"),
    [
        ({}, "record"),  # an incremental batch says nothing of the keys it lacks
        ({"full_snapshots": True}, "derive"),
        ({"full_snapshots": True, "sequence_by": "d"}, "record"),
        ({"full_snapshots": True, "late_rows": "error"}, "record"),
        ({"full_snapshots": True, "snapshot_scope": ["d"]}, "record"),
        ({"full_snapshots": True, "resent_rows": "skip"}, "skip"),
    ],
)
def test_full_snapshots_imply_their_re_sent_rows_by_default(options: dict, resent_rows: str) -> None:
    from pydantic import TypeAdapter

    cfg = TypeAdapter(StrategyConfig).validate_python({"kind": "scd2", "keys": ["id"], **options})
    assert cfg.resent_rows == resent_rows  # type: ignore[union-attr]
