"""Source `jdbc` against a real PostgreSQL server (Debian's packages; started for these tests):
the watermark is the target's highest value, a look-back re-reads late commits, the end of a
batch is fixed when it is listed."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

import pytest

from lakefresh.sources import make_source
from tests.conftest import rows

TABLE = """
- name: orders
  source:
    kind: jdbc
    url: {url}
    user: lakefresh
    query: SELECT id, amount, modified_at FROM orders WHERE modified_at > {{{{ watermark }}}}
    watermark_column: modified_at
    initial_watermark: 1970-01-01 00:00:00
    look_back: 10m
  strategy: {{kind: key, keys: [id], date_column: modified_at}}
"""


@pytest.fixture
def orders(postgres, ws):
    postgres.sql(
        "DROP TABLE IF EXISTS orders; "
        "CREATE TABLE orders (id int PRIMARY KEY, amount numeric(10, 2), modified_at timestamp)"
    )
    return postgres


def at(hhmm: str) -> datetime:
    return datetime.fromisoformat(f"2025-01-01 {hhmm}")


def test_the_watermark_follows_the_target_and_the_look_back_catches_late_commits(orders, ws):
    orders.sql("INSERT INTO orders VALUES (1, 10, '2025-01-01 10:00'), (2, 20, '2025-01-01 10:05')")
    p = ws.pipeline(TABLE.format(url=orders.url))

    first = p.run()
    assert [(b.batch_id, b.counts) for b in first.batches] == [("jdbc@2025-01-01 10:05:00#2", {"N": 2})]
    assert p.run().batches == []  # nothing new

    orders.sql(
        "UPDATE orders SET amount = 25, modified_at = '2025-01-01 10:20' WHERE id = 2; "
        "INSERT INTO orders VALUES (3, 30, '2025-01-01 10:30')"
    )
    # from 09:55 (10:05 minus the look-back): 1 again (U), 2 changed, 3 new
    assert [b.counts for b in p.run().batches] == [{"U": 1, "C": 1, "N": 1}]

    orders.sql("INSERT INTO orders VALUES (4, 40, '2025-01-01 10:25')")  # committed late
    assert [b.counts for b in p.run().batches] == [{"U": 1, "N": 1}]  # after 10:20: 3 again, 4

    orders.sql("INSERT INTO orders VALUES (5, 50, '2025-01-01 09:00')")  # older than the look-back
    assert p.run().batches == []
    assert rows(p.table("orders"), ["id", "amount", "modified_at"]) == [
        (1, Decimal("10.00"), at("10:00")),
        (2, Decimal("25.00"), at("10:20")),
        (3, Decimal("30.00"), at("10:30")),
        (4, Decimal("40.00"), at("10:25")),
    ]


def test_a_batch_ends_where_it_was_listed_and_a_dead_server_is_a_clear_error(orders, ws):
    orders.sql("INSERT INTO orders VALUES (1, 10, '2025-01-01 10:00')")
    p = ws.pipeline(TABLE.format(url=orders.url))
    config = p.config.tables[0]
    source = make_source(config.source, p._source_context(config))
    [listed] = source.list_batches()
    orders.sql("INSERT INTO orders VALUES (2, 20, '2025-01-01 10:01')")  # while the batch is read
    assert rows(source.read(listed, None).rows, ["id"]) == [(1,)]

    assert [b.counts for b in p.run().batches] == [{"N": 2}]
    assert p.run().batches == []

    dead = ws.pipeline(TABLE.format(url="jdbc:postgresql://127.0.0.1:9/postgres"), name="dead.yml")
    error = dead.run().tables[0].error
    assert error.startswith("cannot query jdbc:postgresql://127.0.0.1:9/postgres: ")


def test_a_failed_batch_is_retried_later_with_the_boundaries_it_had(orders, ws, monkeypatch):
    """A batch that failed is read again with its own end and id, however late the retry: rows
    committed since wait for the next batch. A changed query starts afresh."""
    orders.sql("INSERT INTO orders VALUES (1, 10, '2025-01-01 10:00'), (2, 20, '2025-01-01 10:05')")
    p = ws.pipeline(TABLE.format(url=orders.url))
    monkeypatch.setenv("LAKEFRESH_FAULTS", "after_stage")
    failed = p.run()
    assert [(b.batch_id, b.status) for b in failed.batches] == [("jdbc@2025-01-01 10:05:00#2", "failed")]
    monkeypatch.delenv("LAKEFRESH_FAULTS")

    orders.sql("INSERT INTO orders VALUES (3, 30, '2025-01-01 10:10')")  # days later, say
    retried = p.run()
    assert [(b.batch_id, b.counts) for b in retried.batches] == [("jdbc@2025-01-01 10:05:00#2", {"N": 2})]
    later = [(b.batch_id, b.counts) for b in p.run().batches]
    assert later == [("jdbc@2025-01-01 10:10:00#2", {"U": 2, "N": 1})]  # 10:00 < t <= 10:10: two
    assert p.run().batches == []
    assert rows(p.table("orders"), ["id"]) == [(1,), (2,), (3,)]

    monkeypatch.setenv("LAKEFRESH_FAULTS", "after_stage")
    orders.sql("INSERT INTO orders VALUES (4, 40, '2025-01-01 10:20')")
    assert [b.status for b in p.run().batches] == ["failed"]
    monkeypatch.delenv("LAKEFRESH_FAULTS")
    narrower = TABLE.format(url=orders.url).replace("FROM orders WHERE", "FROM orders WHERE id <> 3 AND")
    changed = ws.pipeline(narrower)  # same pipeline file, the query changed: listed afresh
    assert "query" in (changed.run().tables[0].error or "")  # once accepted, as a new config
    assert [(b.batch_id, b.counts) for b in changed.run(accept_config_change=True).batches] == [
        ("jdbc@2025-01-01 10:20:00#1", {"U": 1, "N": 1})  # from 10:00 on, without 3: 2 again, 4
    ]


def test_a_skipped_batchs_rows_are_never_read_again_by_later_batches_or_look_back(orders, ws, monkeypatch):
    """`--skip-batch` is the operator's decision never to take a batch: the watermark moves past
    its end, though the target never stored its rows (it followed the target alone before, so the
    next batch read the skipped rows again as soon as a new row came)."""
    orders.sql("INSERT INTO orders VALUES (1, 10, '2025-01-01 10:00'), (2, 20, '2025-01-01 10:05')")
    p = ws.pipeline(TABLE.format(url=orders.url))
    monkeypatch.setenv("LAKEFRESH_FAULTS", "after_stage")
    assert [b.status for b in p.run().batches] == ["failed"]
    monkeypatch.delenv("LAKEFRESH_FAULTS")
    skipped = p.run(["orders"], skip_batches=["jdbc@2025-01-01 10:05:00#2"])
    assert [(b.batch_id, b.status) for b in skipped.batches] == [("jdbc@2025-01-01 10:05:00#2", "skipped")]

    orders.sql("INSERT INTO orders VALUES (3, 30, '2025-01-01 10:12')")
    assert [b.counts for b in p.run().batches] == [{"N": 1}]  # after 10:05: 3 alone
    orders.sql("INSERT INTO orders VALUES (4, 40, '2025-01-01 10:14')")
    assert [b.counts for b in p.run().batches] == [{"U": 1, "N": 1}]  # the look-back stops at 10:05
    assert rows(p.table("orders"), ["id"]) == [(3,), (4,)]


def test_a_thousand_rows_on_one_watermark_value_and_late_commits_land_exactly_once(orders, ws):
    """1,000 rows share the watermark value 10:00; 400 commit before a batch is listed and 600
    after it (late, with the same value), with a late row older than the highest value but inside
    the look-back. Every row lands once; runs that find nothing new add no snapshot."""
    orders.sql("INSERT INTO orders SELECT g, g, '2025-01-01 10:00' FROM generate_series(1, 400) g")
    p = ws.pipeline(TABLE.format(url=orders.url))
    assert [b.counts for b in p.run().batches] == [{"N": 400}]

    orders.sql(
        "INSERT INTO orders SELECT g, g, '2025-01-01 10:00' FROM generate_series(401, 1000) g; "
        "INSERT INTO orders VALUES (1001, 1, '2025-01-01 10:30')"
    )
    assert [b.counts for b in p.run().batches] == [{"U": 400, "N": 601}]  # from 09:50 on
    table = [f"{ws.namespace}.orders"]
    before = ws.version_counts(table)
    assert p.run().batches == []  # the window of 10:30 (10:20 .. 10:30) counts the same
    assert ws.version_counts(table) == before
    orders.sql("INSERT INTO orders VALUES (1002, 2, '2025-01-01 10:25')")  # late, inside it
    assert [b.counts for b in p.run().batches] == [{"U": 1, "N": 1}]
    before = ws.version_counts(table)
    assert p.run().batches == []
    assert ws.version_counts(table) == before
    counted = p.table("orders").selectExpr("count(*)", "count(DISTINCT id)", "sum(amount)").first()
    assert tuple(counted) == (1002, 1002, Decimal(500500 + 3))


def test_the_watermark_is_the_time_the_database_stored_whatever_the_jvms_time_zone(orders, ws, spark):
    """On a machine in New York, the driver reads the naive 10:00 as 15:00 UTC. Written back as
    '15:00', the watermark would skip a row stored at 12:00 for good; it is written in the JVM's
    zone, as the database's own 10:00."""
    from lakefresh.lakehouse.jvm import java_class

    zones = java_class(spark, "java.util.TimeZone")
    before = zones.getDefault()
    zones.setDefault(zones.getTimeZone("America/New_York"))
    try:
        orders.sql("INSERT INTO orders VALUES (1, 10, '2025-01-01 10:00')")
        p = ws.pipeline(TABLE.format(url=orders.url))
        assert [b.batch_id for b in p.run().batches] == ["jdbc@2025-01-01 10:00:00#1"]
        orders.sql("INSERT INTO orders VALUES (2, 20, '2025-01-01 12:00')")
        assert [b.counts for b in p.run().batches] == [{"U": 1, "N": 1}]  # from 09:50 on
        assert rows(p.table("orders"), ["id"]) == [(1,), (2,)]
    finally:
        zones.setDefault(before)
