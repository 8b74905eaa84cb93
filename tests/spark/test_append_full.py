"""Strategies `append` and `full`."""

from __future__ import annotations

from tests.conftest import rows

ORDERS = """
- name: orders
  source: {kind: files, path: in, format: csv, schema: {order_id: int, amount: double}}
  strategy: {kind: %s}
"""


def test_append_keeps_every_row_stamped_with_its_batch(ws):
    ws.write("in/2025-01-01.csv", "order_id,amount\n1,10.0\n2,20.0\n")
    ws.write("in/2025-01-02.csv", "order_id,amount\n2,20.0\n3,30.5\n")
    p = ws.pipeline(ORDERS % "append")
    result = p.run()
    assert [b.counts for b in result.batches] == [{"N": 2}, {"N": 2}]
    assert rows(p.table("orders"), ["order_id", "amount", "_lf_batch_id"]) == [
        (1, 10.0, "2025-01-01.csv"),
        (2, 20.0, "2025-01-01.csv"),
        (2, 20.0, "2025-01-02.csv"),
        (3, 30.5, "2025-01-02.csv"),
    ]


def test_none_is_an_alias_of_append(ws):
    ws.write("in/a.csv", "order_id,amount\n1,1.0\n")
    p = ws.pipeline(ORDERS % "none")
    assert p.run().ok
    assert rows(p.table("orders")) == [(1, 1.0)]


def test_full_replaces_the_table_and_keeps_each_batch_readable(ws):
    ws.write("in/b1.csv", "order_id,amount\n1,10.0\n2,20.0\n")
    ws.write("in/b2.csv", "order_id,amount\n3,30.0\n")
    p = ws.pipeline(ORDERS % "full")
    assert p.run().ok
    assert rows(p.table("orders")) == [(3, 30.0)]
    assert rows(p.read_batch("orders", "b1.csv")) == [(1, 10.0), (2, 20.0)]
    assert rows(p.read_batch("orders", "b2.csv")) == [(3, 30.0)]


def test_full_with_an_empty_batch_empties_the_table(ws):
    ws.write("in/b1.csv", "order_id,amount\n1,10.0\n")
    ws.write("in/b2.csv", "order_id,amount\n")
    p = ws.pipeline(ORDERS % "full")
    result = p.run()
    assert result.ok, result.to_dict()
    assert rows(p.table("orders")) == []


def test_full_refuses_a_batch_whose_every_record_is_quarantined(ws):
    """A file none of whose records loads is broken: replacing the table with none of its rows
    emptied the table. An empty file still empties it (above). The strategy's own refusal, which
    a table that lets any batch load what it can (`max_bad_rows: 1.0`) still meets."""
    ws.write("in/b1.csv", "order_id,amount\n1,10.0\n")
    ws.write("in/b2.csv", "order_id,amount\nx,20.0\ny,30.0\n")
    p = ws.pipeline(ORDERS % "full" + "  max_bad_rows: 1.0\n")
    result = p.run()
    assert not result.ok
    refused = next(b for b in result.batches if b.batch_id == "b2.csv")
    assert refused.status == "refused" and "every record of this full snapshot" in (refused.error or "")
    assert rows(p.table("orders")) == [(1, 10.0)]
