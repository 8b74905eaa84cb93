"""Strategy `key`: given these batches, the target equals this table, with these status codes."""

from __future__ import annotations

from tests.conftest import rows

CUSTOMERS = """
- name: customers
  source:
    kind: files
    path: in
    format: csv
    schema: {id: int, name: string, city: string, updated_at: timestamp}
  strategy: {kind: key, keys: [id], date_column: updated_at}
"""


def counts(result, batch_id):
    return next(b.counts for b in result.batches if b.batch_id == batch_id)


def test_every_status_code_across_batches(ws):
    ws.write(
        "in/b1.csv",
        """
        id,name,city,updated_at
        1,ann,Oslo,2025-01-01 00:00:00
        2,bob,Rome,2025-01-01 00:00:00
        3,cat,Kyiv,2025-01-01 00:00:00
        4,dan,Lima,2025-01-01 00:00:00
    """,
    )
    ws.write(
        "in/b2.csv",
        """
        id,name,city,updated_at
        1,ann,Bergen,2025-01-02 00:00:00
        2,bob,Rome,2025-01-01 00:00:00
        3,cat,Kyiv,2025-01-05 00:00:00
        4,dan,Cusco,2024-12-31 00:00:00
        5,eve,Nice,2025-01-02 00:00:00
    """,
    )
    p = ws.pipeline(CUSTOMERS)
    result = p.run()
    assert result.ok, result.to_dict()
    assert counts(result, "b1.csv") == {"N": 4}
    # 1 changed, 2 unchanged, 3 same values with a newer date, 4 older than stored, 5 new
    assert counts(result, "b2.csv") == {"C": 1, "U": 1, "S": 1, "O": 1, "N": 1}
    assert rows(p.table("customers"), ["id", "name", "city", "_lf_batch_id"]) == [
        (1, "ann", "Bergen", "b2.csv"),
        (2, "bob", "Rome", "b1.csv"),
        (3, "cat", "Kyiv", "b1.csv"),  # S does not rewrite the row
        (4, "dan", "Lima", "b1.csv"),  # O never overwrites newer data
        (5, "eve", "Nice", "b2.csv"),
    ]


def test_duplicate_keys_in_a_batch_latest_date_wins_then_last_row(ws):
    ws.write(
        "in/b1.csv",
        """
        id,name,city,updated_at
        1,ann,Oslo,2025-01-03 00:00:00
        1,ann,Rome,2025-01-01 00:00:00
        2,bob,Lima,2025-01-01 00:00:00
        2,bob,Kyiv,2025-01-01 00:00:00
    """,
    )
    p = ws.pipeline(CUSTOMERS)
    result = p.run()
    assert result.batches[0].duplicates == 2
    assert counts(result, "b1.csv") == {"N": 2}
    # 1: the latest date wins; 2: equal dates, the row that comes last wins
    assert rows(p.table("customers"), ["id", "city"]) == [(1, "Oslo"), (2, "Kyiv")]


def test_null_keys_and_null_dates_go_to_quarantine(ws):
    ws.write(
        "in/b1.csv",
        """
        id,name,city,updated_at
        1,ann,Oslo,2025-01-01 00:00:00
        ,nokey,Rome,2025-01-01 00:00:00
        3,nodate,Kyiv,
    """,
    )
    p = ws.pipeline(CUSTOMERS)
    result = p.run()
    assert result.ok
    assert result.batches[0].quarantined == 2
    assert rows(p.table("customers"), ["id", "name"]) == [(1, "ann")]
    assert rows(p.quarantine("customers"), ["batch_id", "line", "reason"]) == [
        ("b1.csv", 3, "key column id is NULL"),
        ("b1.csv", 4, "date column updated_at is NULL"),
    ]


def test_without_a_date_column_the_batch_time_is_the_record_date(ws):
    ws.write("in/b1.csv", "id,v\n1,a\n2,b\n", mtime=1_700_000_000)
    ws.write("in/b2.csv", "id,v\n1,A\n2,b\n", mtime=1_700_000_100)
    p = ws.pipeline("""
    - name: t
      source: {kind: files, path: in, format: csv, schema: {id: int, v: string}}
      strategy: {kind: scd1, keys: [id]}
    """)
    result = p.run()
    assert counts(result, "b2.csv") == {"C": 1, "S": 1}
    assert rows(p.table("t")) == [(1, "A"), (2, "b")]
    # a batch produced before the stored records (older file time) never overwrites them
    ws.write("in/b3.csv", "id,v\n1,old\n", mtime=1_600_000_000)
    assert counts(p.run(), "b3.csv") == {"O": 1}
    assert rows(p.table("t")) == [(1, "A"), (2, "b")]


def test_excluded_columns_do_not_count_as_changes_but_are_stored_on_change(ws):
    ws.write("in/b1.csv", "id,v,loaded_by\n1,a,x\n2,b,x\n", mtime=1_700_000_000)
    ws.write("in/b2.csv", "id,v,loaded_by\n1,a,y\n2,B,y\n", mtime=1_700_000_000)
    p = ws.pipeline("""
    - name: t
      source: {kind: files, path: in, format: csv, schema: {id: int, v: string, loaded_by: string}}
      strategy: {kind: key, keys: [id], exclude_from_cdc: [loaded_by]}
    """)
    result = p.run()
    # the same batch time: 1 is unchanged (U), not "newer" (S)
    assert counts(result, "b2.csv") == {"U": 1, "C": 1}
    assert rows(p.table("t")) == [(1, "a", "x"), (2, "B", "y")]


def test_deletes_by_marker_column_respect_dates(ws):
    ws.write(
        "in/b1.csv",
        """
        id,v,deleted,ts
        1,a,false,2025-01-01 00:00:00
        2,b,false,2025-01-01 00:00:00
        3,c,false,2025-01-05 00:00:00
    """,
    )
    ws.write(
        "in/b2.csv",
        """
        id,v,deleted,ts
        1,a,true,2025-01-02 00:00:00
        3,c,true,2025-01-02 00:00:00
        9,z,true,2025-01-02 00:00:00
    """,
    )
    p = ws.pipeline("""
    - name: t
      source:
        kind: files
        path: in
        format: csv
        schema: {id: int, v: string, deleted: boolean, ts: timestamp}
      strategy: {kind: key, keys: [id], date_column: ts, delete: {column: deleted, value: true}}
    """)
    result = p.run()
    # 1 deleted; 3's delete is older than the stored record; 9 was never there
    assert counts(result, "b2.csv") == {"D": 1, "O": 1, "U": 1}
    assert rows(p.table("t"), ["id", "v"]) == [(2, "b"), (3, "c")]


def test_deletes_by_condition(ws):
    ws.write("in/b1.csv", "id,v,op\n1,a,I\n2,b,I\n3,c,I\n", mtime=1_700_000_000)
    ws.write("in/b2.csv", "id,v,op\n1,a,D\n2,B,U\n", mtime=1_700_000_100)
    p = ws.pipeline("""
    - name: t
      source: {kind: files, path: in, format: csv, schema: {id: int, v: string, op: string}}
      strategy: {kind: key, keys: [id], delete: {condition: "op = 'D'"}}
    """)
    result = p.run()
    assert counts(result, "b2.csv") == {"D": 1, "C": 1}
    assert rows(p.table("t")) == [(2, "B", "U"), (3, "c", "I")]


def test_composite_keys(ws):
    ws.write("in/b1.csv", "region,id,v\neu,1,a\nus,1,b\n")
    ws.write("in/b2.csv", "region,id,v\neu,1,A\nus,2,c\n")
    p = ws.pipeline("""
    - name: t
      source: {kind: files, path: in, format: csv, schema: {region: string, id: int, v: string}}
      strategy: {kind: key, keys: [region, id]}
    """)
    assert p.run().ok
    assert rows(p.table("t")) == [("eu", 1, "A"), ("us", 1, "b"), ("us", 2, "c")]


def test_new_columns_are_added_and_missing_ones_are_null(ws):
    ws.write("in/b1.csv", "id,v\n1,a\n2,b\n")
    ws.write("in/b2.csv", "id,v,extra\n1,a,x\n3,c,y\n")
    ws.write("in/b3.csv", "id,extra\n2,z\n")
    p = ws.pipeline("""
    - name: t
      source: {kind: files, path: in, format: csv}
      strategy: {kind: key, keys: [id]}
    """)
    result = p.run()
    assert result.ok, result.to_dict()
    assert counts(result, "b2.csv") == {"C": 1, "N": 1}
    assert rows(p.table("t"), ["id", "v", "extra"]) == [
        (1, "a", "x"),
        (2, None, "z"),
        (3, "c", "y"),
    ]


def test_adding_an_all_null_column_keeps_existing_hashes(ws):
    ws.write("in/b1.csv", "id,v\n1,a\n", mtime=1_700_000_000)
    ws.write("in/b2.csv", "id,v,extra\n1,a,\n", mtime=1_700_000_100)
    p = ws.pipeline("""
    - name: t
      source: {kind: files, path: in, format: csv, schema: {id: int, v: string, extra: string}}
      strategy: {kind: key, keys: [id]}
    """)
    assert counts(p.run(), "b2.csv") == {"S": 1}


def test_a_record_date_that_cannot_order_rows_is_quarantined(ws):
    """A date_column text that does not parse would be a NULL date, never older than the stored
    one, so it would overwrite newer rows; a NaN sorts above every number, so it would win
    against every later row. Both go to quarantine."""
    ws.write("text/b1.csv", "id,v,ts\n1,a,2025-01-01 10:00\n2,b,01/02/2024\n")
    ws.write("number/b1.csv", "id,v,ts\n1,a,1.5\n2,b,NaN\n3,c,Infinity\n")
    p = ws.pipeline("""
    - name: by_text
      source: {kind: files, path: text, format: csv, schema: {id: int, v: string, ts: string}}
      strategy: {kind: key, keys: [id], date_column: ts}
    - name: by_number
      source: {kind: files, path: number, format: csv, schema: {id: int, v: string, ts: double}}
      strategy: {kind: key, keys: [id], date_column: ts}
    """)
    result = p.run()
    assert result.ok, result.to_dict()
    assert rows(p.table("by_text"), ["id", "v"]) == [(1, "a")]
    assert rows(p.quarantine("by_text"), ["record", "reason"]) == [(2, "date column ts is not a time")]
    assert rows(p.table("by_number"), ["id", "v"]) == [(1, "a")]
    assert rows(p.quarantine("by_number"), ["record", "reason"]) == [
        (2, "date column ts is NaN or infinite"),
        (3, "date column ts is NaN or infinite"),
    ]


def test_a_full_snapshots_quarantined_record_keeps_its_key(ws):
    """A record in quarantine (one bad cell) is still in the snapshot: its stored row stays. A
    quarantined record whose key did not parse may be any key: that snapshot retires none."""
    ws.write("in/b1.csv", "id,amount\n1,10\n2,20\n3,30\n", mtime=1_700_000_000)
    ws.write("in/b2.csv", "id,amount\n1,11\n2,lots\n,99\n", mtime=1_700_000_100)  # 3 is gone; a trailer
    ws.write("in/b3.csv", "id,amount\n1,12\nx,13\n", mtime=1_700_000_200)  # whose row is x?
    p = ws.pipeline("""
    - name: t
      source: {kind: files, path: in, format: csv, schema: {id: int, amount: int}}
      strategy: {kind: key, keys: [id], full_snapshots: true}
    """)
    result = p.run()
    assert result.ok, result.to_dict()
    assert counts(result, "b2.csv") == {"C": 1, "R": 1}
    assert counts(result, "b3.csv") == {"C": 1}
    assert rows(p.table("t"), ["id", "amount"]) == [(1, 12), (2, 20)]
    # the trailer's key is NULL in the file: it names no stored key, and retires no fewer
    assert rows(p.quarantine("t"), ["batch_id", "record"]) == [("b2.csv", 2), ("b2.csv", 3), ("b3.csv", 2)]
