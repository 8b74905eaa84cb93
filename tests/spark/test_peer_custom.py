"""Conformance of `custom` with its peers: Delta Lake's replaceWhere and dlt's
delete-insert by merge key, run through delete_when, outside_rows and delete_matching."""

from __future__ import annotations

from tests.conftest import rows


def table(strategy: str, name: str = "t", schema: str = "value: int, is_odd: boolean") -> str:
    return f"""
- name: {name}
  source: {{kind: files, path: in_{name}, format: csv, schema: {{{schema}}}}}
  strategy: {strategy}
"""


ODD = "{kind: custom, delete_when: 'this.is_odd = true', outside_rows: %s}"


def test_delta_replace_where_constraint_check(ws):
    """Delta Lake, spark/src/test/scala/org/apache/spark/sql/delta/DeltaSuite.scala, "invalid
    replaceWhere", "replaceWhere with constraint check disabled" and "valid replaceWhere" (with
    docs.databricks.com/aws/en/delta/selective-overwrite): over values 1-4, writing 6 where
    is_odd = true fails with the check (outside_rows: refuse), gives 2, 4, 6 without it (keep);
    writing 5 and 7 replaces the odd rows. outside_rows: drop leaves such a row out instead. The
    checked and dropping tables start from the odd rows: lakefresh judges a first batch too."""
    p = ws.pipeline(
        table(ODD % "refuse", "checked") + table(ODD % "keep", "unchecked") + table(ODD % "drop", "dropped")
    )
    ws.write("in_unchecked/b1.csv", "value,is_odd\n1,true\n2,false\n3,true\n4,false\n")
    for name in ("checked", "dropped"):
        ws.write(f"in_{name}/b1.csv", "value,is_odd\n1,true\n3,true\n")
    assert p.run().ok
    for name in ("checked", "unchecked", "dropped"):
        ws.write(f"in_{name}/b2.csv", "value,is_odd\n6,false\n")
    result = p.run()
    status = {b.table.split(".")[-1]: (b.status, b.counts) for b in result.batches if b.batch_id == "b2.csv"}
    assert status["checked"][0] == "refused"
    assert status["unchecked"] == ("published", {"N": 1, "F": 0, "D": 2})
    assert status["dropped"] == ("published", {"N": 0, "F": 0, "D": 2, "W": 1})
    assert rows(p.table("checked"), ["value"]) == [(1,), (3,)]
    assert rows(p.table("unchecked"), ["value"]) == [(2,), (4,), (6,)]
    assert rows(p.table("dropped"), ["value"]) == []
    ws.write("in_checked/b2.csv", "value,is_odd\n5,true\n7,true\n")  # the batch, fixed
    assert p.run(tables=["checked"]).ok
    assert rows(p.table("checked"), ["value"]) == [(5,), (7,)]


def test_delta_replace_where_on_an_empty_source_still_deletes(ws):
    """docs.databricks.com/aws/en/delta/selective-overwrite: "For empty source queries, REPLACE
    WHERE might delete table rows": a delete_when on the target alone applies to an empty batch."""
    p = ws.pipeline(table(ODD % "keep"))
    ws.write("in_t/b1.csv", "value,is_odd\n1,true\n2,false\n")
    assert p.run().ok
    ws.write("in_t/b2.csv", "value,is_odd\n")
    result = p.run()
    assert result.ok, result.to_dict()
    assert rows(p.table("t"), ["value"]) == [(2,)]


def test_dlt_delete_insert_by_merge_key(ws):
    """dlt, docs/website/docs/general-usage/merge-loading.md, the delete-insert strategy with a
    merge_key: the destination's rows whose merge key occurs in the load are deleted, then the
    load is inserted (delete_matching); rows with a NULL merge key are quarantined."""
    strategy = "{kind: custom, delete_matching: [region, day]}"
    p = ws.pipeline(table(strategy, schema="region: string, day: int, amount: int"))
    ws.write("in_t/b1.csv", "region,day,amount\nEU,1,10\nEU,1,11\nEU,2,12\nUS,1,13\n")
    assert p.run().ok
    ws.write("in_t/b2.csv", "region,day,amount\nEU,1,20\n,1,99\n")
    result = p.run()
    batch = next(b for b in result.batches if b.batch_id == "b2.csv")
    assert (batch.counts, batch.quarantined) == ({"N": 1, "F": 0, "D": 2}, 1)
    assert rows(p.table("t"), ["region", "day", "amount"]) == [("EU", 1, 20), ("EU", 2, 12), ("US", 1, 13)]
