"""The source contract (tests/spark/test_contract_sources.py) through Spark Connect, for the change
feeds: a Synapse Link export read by the server, and another table's changes read through the
SQL road's snapshot log (lakehouse/iceberg/sql.py). Positions survive a crash after a publish."""

from __future__ import annotations

import pytest

from tests.spark.test_contract_sources import KINDS, check_restart

FEEDS = [k for k in KINDS if k.name in ("synapse_link", "table_changes")]


@pytest.mark.parametrize("kind", FEEDS, ids=[k.name for k in FEEDS])
def test_a_change_feed_through_spark_connect_keeps_its_positions_across_a_restart(
    ws, kind, monkeypatch, request
):
    check_restart(ws, kind, monkeypatch, request)
