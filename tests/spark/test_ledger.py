"""Strategy `ledger`: append-only with a primary key; a key once recorded is never restated."""

from __future__ import annotations

import pytest

from tests.conftest import rows

LEDGER = """
- name: payments
  source:
    kind: files
    path: in
    format: csv
    schema: {payment_id: int, amount: double, paid_at: timestamp}
  strategy: {kind: ledger, keys: [payment_id], event_time: paid_at}
"""


def test_a_resent_key_with_other_values_is_not_appended_again(ws):
    ws.write(
        "in/b1.csv", "payment_id,amount,paid_at\n1,10.0,2025-01-01 10:00:00\n2,20.0,2025-01-01 11:00:00\n"
    )
    ws.write(
        "in/b2.csv", "payment_id,amount,paid_at\n2,99.0,2025-01-02 09:00:00\n3,30.0,2025-01-02 10:00:00\n"
    )
    p = ws.pipeline(LEDGER)
    result = p.run()
    assert result.ok, result.to_dict()
    assert [b.counts for b in result.batches] == [{"N": 2, "K": 0}, {"N": 1, "K": 1}]
    assert rows(p.table("payments"), ["payment_id", "amount", "_lf_batch_id"]) == [
        (1, 10.0, "b1.csv"),
        (2, 20.0, "b1.csv"),
        (3, 30.0, "b2.csv"),
    ]


def test_several_rows_with_one_key_in_a_batch_keep_the_earliest_event(ws):
    ws.write(
        "in/b1.csv",
        """
        payment_id,amount,paid_at
        7,70.0,2025-01-03 00:00:00
        7,71.0,2025-01-01 00:00:00
        7,72.0,2025-01-02 00:00:00
        8,80.0,2025-01-01 00:00:00
        8,81.0,2025-01-01 00:00:00
        """,
    )
    p = ws.pipeline(LEDGER)
    result = p.run()
    assert result.batches[0].duplicates == 3
    # 7: earliest event wins; 8: equal event times, the first record wins
    assert rows(p.table("payments")) == [(7, 71.0, _ts("2025-01-01")), (8, 80.0, _ts("2025-01-01"))]


def test_null_keys_are_quarantined(ws):
    ws.write("in/b1.csv", "payment_id,amount,paid_at\n,10.0,2025-01-01 00:00:00\n1,5.0,2025-01-01 00:00:00\n")
    p = ws.pipeline(LEDGER)
    result = p.run()
    assert result.batches[0].quarantined == 1
    assert [r.reason for r in p.quarantine("payments").collect()] == ["key column payment_id is NULL"]
    assert rows(p.table("payments"), ["payment_id"]) == [(1,)]


def _ts(text):
    from datetime import datetime

    return datetime.fromisoformat(text)


@pytest.mark.parametrize(
    "strategy",
    [
        "{kind: ledger, keys: [payment_id], event_time: paid_at, output: change_log}",
        "{kind: append, event_time: paid_at, output: change_log}",
    ],
    ids=["ledger_change_log", "append_change_log"],
)
def test_an_event_time_in_text_that_is_not_a_time_is_quarantined(ws, strategy):
    """In a change log, text that does not parse silently took the batch's time as its event's
    (a plain `ledger` sorts text as text, and keeps it)."""
    ws.write("in/b1.csv", "payment_id,amount,paid_at\n1,10.0,31/02/2025\n2,20.0,2025-01-01 10:00:00\n")
    p = ws.pipeline(
        f"""
- name: payments
  source: {{kind: files, path: in, format: csv, schema: {{payment_id: int, amount: double, paid_at: string}}}}
  strategy: {strategy}
"""
    )
    result = p.run()
    assert result.ok, result.to_dict()
    assert rows(p.table("payments"), ["payment_id"]) == [(2,)]
    assert [r.reason for r in p.quarantine("payments").collect()] == [
        "event time column paid_at is not a time"
    ]
