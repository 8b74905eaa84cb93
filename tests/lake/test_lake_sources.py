"""The source contract (tests/spark/test_contract_sources.py) on the lake, for the change feeds:
a Synapse Link export (`model.json`, `Changelog/changelog.info`, its timestamped folders) uploaded
to the S3 server and read from `s3a://`, and another table's changes in the REST catalog. Listing
is stable, a batch reads the same rows twice, and positions survive a crash after a publish."""

from __future__ import annotations

import pytest

from tests.spark.test_contract_sources import KINDS, check_listing, check_restart

FEEDS = [k for k in KINDS if k.name in ("synapse_link", "table_changes")]


@pytest.mark.parametrize("kind", FEEDS, ids=[k.name for k in FEEDS])
def test_a_change_feed_on_the_lake_lists_stably_and_reads_the_same_rows_twice(ws, kind, request):
    check_listing(ws, kind, request)


@pytest.mark.parametrize("kind", FEEDS, ids=[k.name for k in FEEDS])
def test_a_change_feed_on_the_lake_keeps_its_positions_across_a_restart(ws, kind, monkeypatch, request):
    check_restart(ws, kind, monkeypatch, request)
