"""The same results on every supported Spark line, whether ANSI SQL mode is on (Spark 4's default,
and lakefresh's on every line) or not: a value that does not parse is quarantined with its reason,
never an exception and never a silent NULL; arithmetic that overflows in a transform fails the
batch, never a silent NULL. `make test` runs this file on both lines."""

from __future__ import annotations

import threading
from datetime import date, datetime

import pytest

from tests.conftest import rows

TYPED = """
- name: t
  source:
    kind: files
    path: in
    format: csv
    schema: {id: int, amount: int, price: "decimal(5,2)", day: date, at: timestamp, ok: boolean}
  strategy: {kind: key, keys: [id]}
"""


@pytest.mark.parametrize("ansi", ["true", "false"])
def test_values_that_do_not_parse_are_quarantined_under_either_mode(ws, spark, ansi):
    ws.write(
        "in/b1.csv",
        "id,amount,price,day,at,ok\n"
        "1,10,1.50,2025-01-01,2025-01-01 10:00:00,true\n"
        "2,abc,1.50,2025-01-01,2025-01-01 10:00:00,true\n"  # not a number
        "3,99999999999,1.50,2025-01-01,2025-01-01 10:00:00,true\n"  # beyond int
        "4,1,12345.678,2025-01-01,2025-01-01 10:00:00,true\n"  # beyond decimal(5,2)
        "5,1,1.50,2025-13-45,2025-01-01 10:00:00,true\n"  # no such day
        "6,1,1.50,2025-01-01,yesterday,true\n"  # not a time
        "7,1,1.50,2025-01-01,2025-01-01 10:00:00,maybe\n",  # not a boolean
    )
    p = ws.pipeline(TYPED)
    before = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", ansi)
    try:
        result = p.run()
    finally:
        spark.conf.set("spark.sql.ansi.enabled", before)
    assert result.ok, result.to_dict()
    assert [(b.counts, b.quarantined) for b in result.batches] == [({"N": 1}, 6)]
    assert rows(p.table("t"), ["id", "amount", "day", "at", "ok"]) == [
        (1, 10, date(2025, 1, 1), datetime(2025, 1, 1, 10), True)
    ]
    reasons = rows(p.quarantine("t"), ["line", "reason"])
    columns = [(line, reason.split(":")[0]) for line, reason in reasons]
    assert columns == [(3, "amount"), (4, "amount"), (5, "price"), (6, "day"), (7, "at"), (8, "ok")], reasons


def test_an_overflow_in_a_transform_fails_the_batch_instead_of_a_null(ws):
    ws.write("in/b1.csv", "id,amount,price,day,at,ok\n1,10,1.50,2025-01-01,2025-01-01 10:00:00,true\n")
    ws.write(
        "in/b2.csv", "id,amount,price,day,at,ok\n2,2000000000,1.50,2025-01-01,2025-01-01 10:00:00,true\n"
    )
    table = TYPED.replace(
        "  strategy:", '  transform: {sql: "SELECT id, amount * 2 AS amount, day FROM batch"}\n  strategy:'
    )
    p = ws.pipeline(table)
    result = p.run()
    assert [b.status for b in result.batches] == ["published", "failed"]
    assert "ARITHMETIC_OVERFLOW" in result.batches[1].error, result.batches[1].error
    assert rows(p.table("t"), ["id", "amount"]) == [(1, 20)]


def test_a_run_started_from_another_thread_parses_the_same(ws):
    """Spark 3.5 keeps the active session per thread; a scheduler or a test that runs a pipeline
    from a worker thread must get the same quarantine as the main thread (it once failed every
    batch with `try_cast needs a running Spark session`)."""
    ws.write("in/b1.csv", "id,amount,price,day,at,ok\n1,x,1.50,2025-01-01,2025-01-01 10:00:00,true\n")
    p = ws.pipeline(TYPED + "  max_bad_rows: 1.0\n")  # its one row is bad: loaded as far as it can be
    outcome: list[object] = []
    worker = threading.Thread(target=lambda: outcome.append(p.run()))
    worker.start()
    worker.join(300)
    (result,) = outcome
    assert [(b.status, b.quarantined) for b in result.batches] == [("published", 1)]
