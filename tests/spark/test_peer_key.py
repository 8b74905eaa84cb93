"""Conformance of `key` with its peers: each test is a peer's own published example,
run through the options that reproduce it. Sources are cited per test; docs/coming-from.md
maps each peer's behaviour to these options."""

from __future__ import annotations

from tests.conftest import rows

T0 = 1.7e9


def table(strategy: str, schema: str) -> str:
    return f"""
- name: t
  source: {{kind: files, path: in, format: csv, schema: {{{schema}}}}}
  strategy: {strategy}
"""


def counts(result, batch_id):
    return next(b.counts for b in result.batches if b.batch_id == batch_id)


AUTO_CDC_SCHEMA = "userId: int, name: string, city: string, operation: string, sequenceNum: int"
AUTO_CDC = """\
userId,name,city,operation,sequenceNum
124,Raul,Oaxaca,INSERT,1
123,Isabel,Monterrey,INSERT,1
125,Mercedes,Tijuana,INSERT,2
126,Lily,Cancun,INSERT,2
123,,,DELETE,6
125,Mercedes,Guadalajara,UPDATE,6
125,Mercedes,Mexicali,UPDATE,5
123,Isabel,Chihuahua,UPDATE,5
"""


def test_databricks_auto_cdc_scd1_example(ws):
    """Databricks, "The AUTO CDC APIs" (docs.databricks.com/aws/en/ldp/cdc), "Examples: SCD type 1
    and SCD type 2 processing with CDF source data": keys userId, sequence_by sequenceNum,
    apply_as_deletes operation = 'DELETE', except_column_list [operation, sequenceNum], stored as
    SCD type 1. The late UPDATEs (sequence 5) lose to the rows at 6, and 123's to its DELETE."""
    ws.write("in/b1.csv", AUTO_CDC)
    strategy = (
        "{kind: key, keys: [userId], date_column: sequenceNum, drop_columns: [operation, sequenceNum],"
        " delete: {condition: \"operation = 'DELETE'\"}}"
    )
    p = ws.pipeline(table(strategy, AUTO_CDC_SCHEMA))
    assert p.run().ok
    assert rows(p.table("t"), ["userId", "name", "city"]) == [
        (124, "Raul", "Oaxaca"),
        (125, "Mercedes", "Guadalajara"),
        (126, "Lily", "Cancun"),
    ]
    assert "operation" not in p.table("t").columns and "sequenceNum" not in p.table("t").columns


SPARK_SCD1_BATCHES = [
    "id,value,seq,is_delete\n1,alice,1,false\n1,bob,3,false\n",
    "id,value,seq,is_delete\n1,carol,2,false\n",
    "id,value,seq,is_delete\n1,dave,4,false\n",
    "id,value,seq,is_delete\n1,,2,true\n",
    "id,value,seq,is_delete\n1,,5,true\n",
    "id,value,seq,is_delete\n1,ghost,4,false\n",
]


def test_spark_autocdc_tombstones_stop_a_late_older_row_from_bringing_a_key_back(ws):
    """Apache Spark's AutoCDC, Scd1ForeachBatchHandlerSuite, "reconciles out-of-order events when
    ExcludeColumns hides the sequencing column" (sql/pipelines/src/test/scala/org/apache/spark/
    sql/pipelines/autocdc/, the Databricks apply_as_deletes tombstone rule): six batches on one
    key; the last, older than the delete before it, must not bring the key back."""
    strategy = (
        "{kind: key, keys: [id], date_column: seq, drop_columns: [seq, is_delete],"
        " delete: {column: is_delete}, soft_delete_column: is_deleted}"
    )
    p = ws.pipeline(table(strategy, "id: int, value: string, seq: int, is_delete: boolean"))
    expected = [
        ({"N": 1}, (1, "bob", False)),  # the higher sequence wins inside a batch
        ({"O": 1}, (1, "bob", False)),  # older than the live row
        ({"C": 1}, (1, "dave", False)),
        ({"O": 1}, (1, "dave", False)),  # an older delete does not erase the row
        ({"D": 1}, (1, None, True)),  # the tombstone
        ({"O": 1}, (1, None, True)),  # older than the tombstone: the key stays deleted
    ]
    for i, (text, (codes, row)) in enumerate(zip(SPARK_SCD1_BATCHES, expected, strict=True)):
        ws.write(f"in/b{i}.csv", text)
        result = p.run()
        assert result.ok, result.to_dict()
        assert counts(result, f"b{i}.csv") == codes, i
        assert rows(p.table("t"), ["id", "value", "is_deleted"]) == [row], i
    ws.write("in/b6.csv", "id,value,seq,is_delete\n1,back,6,false\n")
    assert counts(p.run(), "b6.csv") == {"C": 1}  # newer than the delete: the key is back
    assert rows(p.table("t"), ["id", "value", "is_deleted"]) == [(1, "back", False)]


def test_spark_autocdc_a_delete_of_a_key_never_seen_keeps_its_tombstone(ws):
    """Scd1ForeachBatchHandlerSuite, "records an aux tombstone for a delete on a nonexistent key":
    a delete of key 99 at sequence 1 is kept, so the key's older row, arriving later, stays out."""
    strategy = (
        "{kind: key, keys: [id], date_column: seq, delete: {column: is_delete},"
        " soft_delete_column: is_deleted}"
    )
    p = ws.pipeline(table(strategy, "id: int, value: string, seq: int, is_delete: boolean"))
    ws.write("in/b1.csv", "id,value,seq,is_delete\n99,,1,true\n")
    assert counts(p.run(), "b1.csv") == {"T": 1}
    ws.write("in/b2.csv", "id,value,seq,is_delete\n99,early,0,false\n")
    assert counts(p.run(), "b2.csv") == {"O": 1}
    assert rows(p.table("t"), ["id", "value", "is_deleted"]) == [(99, None, True)]


def test_hudi_ties_on_the_ordering_field_go_to_the_later_write(ws):
    """Hudi, TestDefaultHoodieRecordPayload.testUpdateOnSameOrderingFieldDefaultBehavior ("Default
    behavior should update on same ordering field") and website/docs/record_merger.md
    (DefaultHoodieRecordPayload honors the ordering field: stored ts 2 beats incoming ts 1)."""
    p = ws.pipeline(table("{kind: key, keys: [id], date_column: ts}", "id: int, ts: long, name: string"))
    ws.write("in/b1.csv", "id,ts,name\n1,100,name_1\n2,2,name_2\n")
    assert p.run().ok
    ws.write("in/b2.csv", "id,ts,name\n1,100,name_2\n2,1,name_1\n")
    assert counts(p.run(), "b2.csv") == {"C": 1, "O": 1}
    assert rows(p.table("t"), ["id", "ts", "name"]) == [(1, 100, "name_2"), (2, 2, "name_2")]


def test_dlt_dedup_sort_desc_keeps_the_first_of_equal_values(ws):
    """dlt, docs/website/docs/general-usage/merge-loading.md, "Control deduplication of staging
    data": dedup_sort desc on metadata_modified; on equal values the first occurrence is kept."""
    strategy = "{kind: key, keys: [id], dedupe: {by: metadata_modified, order: desc}}"
    p = ws.pipeline(table(strategy, "id: int, metadata_modified: date, value: string"))
    ws.write(
        "in/b1.csv",
        "id,metadata_modified,value\n1,2024-01-01,A\n1,2024-01-02,B\n2,2024-01-01,C\n2,2024-01-01,D\n",
    )
    result = p.run()
    assert result.batches[0].duplicates == 2
    assert rows(p.table("t"), ["id", "value"]) == [(1, "B"), (2, "C")]


def test_dlt_dedup_sort_asc_and_desc(ws):
    """dlt, tests/load/pipeline/test_merge_disposition.py::test_dedup_sort_hint: rows (1, foo, 1),
    (1, baz, 3), (1, bar, 2): sequence desc keeps baz, asc keeps foo."""
    data = "id,val,sequence\n1,foo,1\n1,baz,3\n1,bar,2\n"
    desc = "{kind: key, keys: [id], dedupe: {by: sequence, order: desc}}"
    asc = "{kind: key, keys: [id], dedupe: {by: sequence, order: asc}}"
    schema = "id: int, val: string, sequence: int"
    ws.write("in/b1.csv", data)
    p = ws.pipeline(
        table(desc, schema) + table(asc, schema).replace("name: t", "name: t_asc"),
    )
    assert p.run().ok
    assert rows(p.table("t"), ["id", "val"]) == [(1, "baz")]
    assert rows(p.table("t_asc"), ["id", "val"]) == [(1, "foo")]


def test_kamu_upsert_the_later_row_of_a_batch_wins_and_first_is_an_option(ws):
    """kamu-cli, src/infra/ingest-datafusion/tests/tests/test_merge_strategy_upsert_stream.rs,
    test_upsert_merge_update_in_same_batch: (2020, vancouver, 2) then (2020, vancouver, 3) in one
    batch leave population 3 (lakefresh's default, dedupe: last); dedupe: first keeps 2."""
    schema = "year: int, city: string, population: int"
    last = "{kind: key, keys: [year, city]}"
    first = "{kind: key, keys: [year, city], dedupe: first}"
    ws.write("in/b1.csv", "year,city,population\n2020,vancouver,2\n2020,vancouver,3\n")
    p = ws.pipeline(table(last, schema) + table(first, schema).replace("name: t", "name: t_first"))
    assert p.run().ok
    assert rows(p.table("t"), ["city", "population"]) == [("vancouver", 3)]
    assert rows(p.table("t_first"), ["city", "population"]) == [("vancouver", 2)]


def test_databricks_auto_cdc_from_snapshot_scd1(ws):
    """Databricks, "AUTO CDC FROM SNAPSHOT", "Process snapshots using pipeline ingestion time"
    (docs.databricks.com/aws/en/ldp/cdc): with SCD type 1 the target equals the latest snapshot;
    key 1, absent from it, is deleted."""
    p = ws.pipeline(table("{kind: key, keys: [userId], full_snapshots: true}", "userId: int, city: string"))
    ws.write("in/s1.csv", "userId,city\n1,Oaxaca\n2,Monterrey\n3,Tijuana\n", mtime=1_700_000_000)
    assert p.run().ok
    ws.write(
        "in/s2.csv",
        "userId,city\n2,Carmel\n3,Los Angeles\n4,Death Valley\n6,Kings Canyon\n",
        mtime=1_700_086_400,
    )
    result = p.run()
    assert counts(result, "s2.csv") == {"C": 2, "N": 2, "R": 1}
    assert rows(p.table("t"), ["userId", "city"]) == [
        (2, "Carmel"),
        (3, "Los Angeles"),
        (4, "Death Valley"),
        (6, "Kings Canyon"),
    ]


def test_match_rules_insert_only_delete_on_match_and_update_only(ws):
    """Delta Lake, docs/source/delta-update.md, "Operation semantics" and "Data deduplication when
    writing into Delta tables" (WHEN NOT MATCHED THEN INSERT * only: a stored key is never
    updated); a WHEN MATCHED THEN DELETE table; and an update-only one (no WHEN NOT MATCHED)."""
    schema = "id: int, v: string"
    tables = (
        table("{kind: key, keys: [id], when_matched: ignore}", schema).replace("name: t", "name: insert_only")
        + table("{kind: key, keys: [id], when_matched: delete}", schema).replace(
            "name: t", "name: delete_on_match"
        )
        + table("{kind: key, keys: [id], when_not_matched: ignore}", schema).replace(
            "name: t", "name: update_only"
        )
    )
    ws.write("in/b1.csv", "id,v\n1,a\n2,b\n", mtime=1_700_000_000)
    p = ws.pipeline(tables)
    assert p.run().ok
    ws.write("in/b2.csv", "id,v\n1,a2\n2,b\n3,c\n", mtime=1_700_000_100)
    result = p.run()
    assert result.ok, result.to_dict()
    by_table = {b.table.split(".")[-1]: b.counts for b in result.batches if b.batch_id == "b2.csv"}
    assert by_table == {  # (S: the same values, in a newer batch)
        "insert_only": {"M": 1, "S": 1, "N": 1},
        "delete_on_match": {"D": 2, "N": 1},
        "update_only": {"X": 3},
    }
    assert rows(p.table("insert_only"), ["id", "v"]) == [(1, "a"), (2, "b"), (3, "c")]
    assert rows(p.table("delete_on_match"), ["id", "v"]) == [(3, "c")]
    # an update-only table inserts nothing, its first batch neither: it only updates what
    # another writer stored
    assert rows(p.table("update_only"), ["id", "v"]) == []


def test_dlt_merge_key_scopes_a_full_snapshot_to_its_partitions(ws):
    """dlt, docs/website/docs/general-usage/merge-loading.md, `merge_key` (the "partition"
    example, here for a current-state table): a load of 2024-01-02 deletes nothing of
    2024-01-01; a later load of 2024-01-01 deletes b, which it lacks."""
    p = ws.pipeline(
        table(
            "{kind: key, keys: [date, name], full_snapshots: true, snapshot_scope: [date]}",
            "date: date, name: string",
        )
    )
    loads = ["date,name\n2024-01-01,a\n2024-01-01,b\n", "date,name\n2024-01-02,c\n2024-01-02,d\n"]
    loads.append("date,name\n2024-01-01,a\n2024-01-01,bb\n")
    codes = []
    for i, text in enumerate(loads):
        ws.write(f"in/l{i}.csv", text, mtime=1_704_000_000 + 3600 * i)
        codes.append(counts(p.run(), f"l{i}.csv"))
    assert codes[1] == {"N": 2} and codes[2] == {"S": 1, "N": 1, "R": 1}
    assert [r[0] for r in rows(p.table("t"), ["name"])] == ["a", "bb", "c", "d"]


def test_databricks_auto_cdc_scd1_with_truncate(ws):
    """Databricks, "The AUTO CDC APIs" (docs.databricks.com/aws/en/ldp/cdc), the SCD type 1
    example with apply_as_truncates = operation = 'TRUNCATE': the example's rows plus a TRUNCATE
    at sequenceNum 3 (keys NULL). Rows sequenced before it (124 and 126 at 1 and 2, the INSERTs
    of 123 and 125) are truncated away; 125's UPDATE at 6 stays; 123's DELETE at 6 leaves
    nothing."""
    ws.write("in/b1.csv", AUTO_CDC + ",,,TRUNCATE,3\n")
    strategy = (
        "{kind: key, keys: [userId], date_column: sequenceNum, drop_columns: [operation, sequenceNum],"
        " delete: {condition: \"operation = 'DELETE'\"}, truncate: {condition: \"operation = 'TRUNCATE'\"}}"
    )
    p = ws.pipeline(table(strategy, AUTO_CDC_SCHEMA))
    result = p.run()
    assert result.ok, result.to_dict()
    assert rows(p.table("t"), ["userId", "name", "city"]) == [(125, "Mercedes", "Guadalajara")]
    # 4 rows before the marker (O), the marker (Z), 123's delete of a key not stored (U), 125 (N);
    # 123's and 125's late UPDATEs at 5 lose to their rows at 6 (duplicates)
    assert result.batches[0].counts == {"O": 4, "Z": 1, "U": 1, "N": 1}
    assert result.batches[0].duplicates == 2


def test_a_truncate_marker_deletes_the_stored_keys_not_newer_than_it(ws):
    """Databricks' rule across batches ("the later write wins"): the marker at 5 deletes the
    stored keys at 1 and 5 (E) but not the one at 9, which is newer than the truncate; the
    batch's rows after the marker are applied."""
    ws.write("in/b1.csv", "id,v,seq,op\n1,a,1,I\n2,b,5,I\n3,c,9,I\n", mtime=T0)
    ws.write("in/b2.csv", "id,v,seq,op\n4,d,4,I\n,,5,T\n5,e,6,I\n", mtime=T0 + 86400)
    strategy = (
        "{kind: key, keys: [id], date_column: seq, drop_columns: [op], truncate: {column: op, value: T}}"
    )
    p = ws.pipeline(table(strategy, "id: int, v: string, seq: int, op: string"))
    result = p.run()
    assert result.ok, result.to_dict()
    assert [b.counts for b in result.batches] == [{"N": 3}, {"O": 1, "Z": 1, "N": 1, "E": 2}]
    assert rows(p.table("t"), ["id", "v"]) == [(3, "c"), (5, "e")]
