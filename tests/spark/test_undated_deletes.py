"""`key`'s rules for rows without a date: a delete whose `date_column` is NULL (quarantined, or
applied whatever the stored date with `undated_deletes: apply`, Hudi's rule), and a batch that
lacks a column the strategy reads (refused, naming it)."""

from __future__ import annotations

from tests.conftest import rows

SCHEMA = "id: int, ts: long, name: string, _hoodie_is_deleted: boolean"
HEADER = "id,ts,name,_hoodie_is_deleted\n"


def table(strategy: str) -> str:
    return f"""
- name: t
  source: {{kind: files, path: in, format: csv, schema: {{{SCHEMA}}}}}
  strategy: {strategy}
"""


def hudi(undated: str) -> str:
    return (
        "{kind: key, keys: [id], date_column: ts, delete: {column: _hoodie_is_deleted},"
        f" undated_deletes: {undated}, drop_columns: [_hoodie_is_deleted]}}"
    )


def counts(result) -> dict[str, dict[str, int]]:
    return {b.batch_id: b.counts for b in result.batches}


def test_hudi_a_delete_without_an_ordering_value_applies_whatever_the_stored_one(ws):
    """Hudi, hudi-common/.../table/read/FileGroupRecordBuffer.java, doProcessNextDeletedRecord:
    a delete whose ordering value is the default ("natural order", what a SQL DELETE writes) is
    applied whatever the stored record's ordering value; one with a value loses to a higher
    stored one. A row without a date that is not a delete is still quarantined."""
    ws.write("in/b1.csv", HEADER + "1,100,a,false\n2,100,b,false\n3,100,c,false\n", mtime=1_736_000_000)
    ws.write("in/b2.csv", HEADER + "1,,,true\n2,50,,true\n3,,late,false\n", mtime=1_736_003_600)
    p = ws.pipeline(table(hudi("apply")))
    result = p.run()
    assert counts(result) == {"b1.csv": {"N": 3}, "b2.csv": {"D": 1, "O": 1}}
    assert [b.quarantined for b in result.batches] == [0, 1]
    assert rows(p.table("t"), ["id", "ts", "name"]) == [(2, 100, "b"), (3, 100, "c")]


def test_by_default_a_delete_without_a_date_is_a_bad_row(ws):
    """Quarantined, as any row without a date; a batch of such rows alone is refused."""
    ws.write("in/b1.csv", HEADER + "1,100,a,false\n2,100,b,false\n", mtime=1_736_000_000)
    ws.write("in/b2.csv", HEADER + "1,,,true\n2,101,b2,false\n", mtime=1_736_003_600)
    ws.write("in/b3.csv", HEADER + "2,,,true\n", mtime=1_736_007_200)
    p = ws.pipeline(table(hudi("quarantine")))
    result = p.run()
    assert [(b.batch_id, b.status, b.quarantined) for b in result.batches] == [
        ("b1.csv", "published", 0),
        ("b2.csv", "published", 1),
        ("b3.csv", "refused", 0),  # refused: nothing of it is kept, its bad row either
    ]
    assert "date column ts is NULL" in (result.batches[2].error or "")
    assert rows(p.table("t"), ["id", "ts", "name"]) == [(1, 100, "a"), (2, 101, "b2")]
    assert rows(p.quarantine("t"), ["batch_id", "reason"]) == [("b2.csv", "date column ts is NULL")]


def test_a_header_without_the_date_column_is_refused_naming_it(ws):
    """A column an option of the strategy names must be in every batch; a declared column that
    no option names reads as NULL when a file lacks it."""
    ws.write("in/b1.csv", HEADER + "1,100,a,false\n", mtime=1_736_000_000)
    ws.write("in/b2.csv", "id,name,_hoodie_is_deleted\n1,b,false\n", mtime=1_736_003_600)
    p = ws.pipeline(table(hudi("apply")))
    result = p.run()
    first, second = result.batches
    assert first.status == "published" and first.counts == {"N": 1}
    assert second.status != "published"
    assert "date_column ['ts'] not in the batch (a column the strategy reads must be in every batch" in (
        second.error or ""
    )
    assert rows(p.table("t"), ["id", "ts", "name"]) == [(1, 100, "a")]
