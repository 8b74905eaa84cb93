"""`key` with `history: true`: the current-state table, and beside it `<table>_history` with one
SCD2 version per change, from the same batches."""

from __future__ import annotations

from datetime import datetime

from tests.conftest import rows

CUSTOMERS = """
- name: customers
  source:
    kind: files
    path: in
    format: csv
    schema: {id: int, city: string, updated_at: timestamp, gone: boolean}
  strategy:
    kind: key
    keys: [id]
    date_column: updated_at
    delete: {column: gone, value: true}
    history: true
"""


def d(day: int) -> datetime:
    return datetime(2025, 1, day)


def test_history_keeps_every_change_while_the_table_keeps_the_latest(ws):
    header = "id,city,updated_at,gone\n"
    ws.write("in/b1.csv", header + "1,Oslo,2025-01-01,false\n2,Rome,2025-01-01,false\n")
    ws.write("in/b2.csv", header + "1,Kyiv,2025-01-03,false\n2,Rome,2025-01-04,true\n")
    ws.write("in/b3.csv", header + "1,Lima,2025-01-02,false\n")  # older than the stored record
    p = ws.pipeline(CUSTOMERS)
    result = p.run()
    assert result.ok, result.to_dict()
    assert [t.table for t in result.tables] == ["customers", "customers_history"]
    assert rows(p.table("customers"), ["id", "city", "updated_at"]) == [(1, "Kyiv", d(3))]
    assert rows(p.table("customers_history"), ["id", "city", "valid_from", "valid_to", "is_current"]) == [
        (1, "Kyiv", d(3), None, True),
        (1, "Lima", d(2), d(3), False),  # O for the table, slotted into history
        (1, "Oslo", d(1), d(2), False),
        (2, "Rome", d(1), d(4), False),  # closed by the delete
    ]
    assert p.run().batches == []  # exactly once, for both tables


def test_a_run_of_the_table_alone_refreshes_its_history_with_it(ws):
    ws.write("in/b1.csv", "id,city,updated_at,gone\n1,Oslo,2025-01-01,false\n")
    p = ws.pipeline(CUSTOMERS)
    result = p.run(tables=["customers"])
    assert [(t.table, [b.batch_id for b in t.batches]) for t in result.tables] == [
        ("customers", ["b1.csv"]),
        ("customers_history", ["b1.csv"]),
    ]
    assert [t.table for t in p.plan(tables=["customers"]).tables] == ["customers", "customers_history"]
