"""Surrogate keys: given these batches, every row has this key, in every run and every retry."""

from __future__ import annotations

from datetime import datetime

import pytest

from tests.conftest import rows

KEY_DIM = """
- name: customers
  source: {{kind: files, path: in, format: csv, schema: {{id: int, city: string}}}}
  strategy:
    kind: key
    keys: [id]
    surrogate_key: {{column: customer_sk, generator: {generator}}}
"""

DELETING_DIM = """
- name: customers
  format: {table_format}
  source: {{kind: files, path: in, format: csv, schema: {{id: int, city: string, gone: boolean}}}}
  strategy:
    kind: key
    keys: [id]
    delete: {{column: gone, value: true}}
    surrogate_key: {{column: customer_sk, generator: sequence}}
"""

SCD2_DIM = """
- name: customers
  source: {kind: files, path: in, format: csv, schema: {id: int, city: string, day: timestamp}}
  strategy:
    kind: scd2
    keys: [id]
    sequence_by: day
    surrogate_key: {column: customer_sk, generator: sequence}
"""


def test_sequence_keys_number_new_keys_in_key_order_and_never_change(ws):
    ws.write("in/b1.csv", "id,city\n3,Oslo\n1,Rome\n2,Kyiv\n")
    ws.write("in/b2.csv", "id,city\n5,Lima\n2,Riga\n4,Bern\n")
    p = ws.pipeline(KEY_DIM.format(generator="sequence"))
    assert p.run().ok
    # new keys in natural key order; an updated row keeps its key
    assert rows(p.table("customers"), ["id", "city", "customer_sk", "is_inferred"]) == [
        (1, "Rome", 1, False),
        (2, "Riga", 2, False),
        (3, "Oslo", 3, False),
        (4, "Bern", 4, False),
        (5, "Lima", 5, False),
    ]


def test_a_sequence_key_whose_row_was_deleted_is_never_issued_again(ws):
    """Facts keep the keys they were given: after the rows holding the largest keys are deleted,
    and after a commit of no batch (a compaction), new keys still follow the largest ever issued
    (the mark each batch's commit carries), not the largest left in the table. On Iceberg: how
    each format carries a commit's properties is tests/spark/test_backend_seam.py's."""
    ws.write("in/b1.csv", "id,city,gone\n1,Rome,false\n2,Kyiv,false\n3,Oslo,false\n", mtime=1_736_000_000)
    ws.write("in/b2.csv", "id,city,gone\n3,Oslo,true\n2,Kyiv,true\n", mtime=1_736_003_600)
    ws.write("in/b3.csv", "id,city,gone\n4,Lima,false\n", mtime=1_736_007_200)
    p = ws.pipeline(DELETING_DIM.format(table_format="iceberg"))
    assert p.run().ok
    assert rows(p.table("customers"), ["id", "customer_sk"]) == [(1, 1), (4, 4)]
    ws.write("in/b4.csv", "id,city,gone\n4,Lima,true\n", mtime=1_736_010_800)
    assert p.run().ok
    table = f"{ws.namespace}.customers"
    latest = p.backend.latest(table)
    p.backend.compact(table, 50)  # a commit of no batch on top
    assert p.backend.latest(table) != latest
    ws.write("in/b5.csv", "id,city,gone\n6,Bern,false\n5,Riga,false\n", mtime=1_736_014_400)
    assert p.run().ok
    assert rows(p.table("customers"), ["id", "customer_sk"]) == [(1, 1), (5, 5), (6, 6)]


def test_a_mark_kept_as_a_table_property_holds_back_the_keys_it_covers(ws):
    """A runtime whose commits carry no property (Iceberg before 1.12) keeps the high-water mark
    as a table property; a warehouse that moves on to a runtime whose commits carry them still
    numbers after it (here the property stands for keys 4-10, issued and deleted there). The
    mark is read through the backend's `properties`, whatever the format (tests/spark/
    test_backend_seam.py: a dotted property kept and read back on both)."""
    ws.write("in/b1.csv", "id,city,gone\n1,Rome,false\n2,Kyiv,false\n3,Oslo,false\n", mtime=1_736_000_000)
    p = ws.pipeline(DELETING_DIM.format(table_format="iceberg"))
    assert p.run().ok
    p.backend.set_properties(f"{ws.namespace}.customers", {"lakefresh.surrogate_key.high_water": "10"})
    ws.write("in/b2.csv", "id,city,gone\n4,Lima,false\n", mtime=1_736_003_600)
    assert p.run().ok
    assert rows(p.table("customers"), ["id", "customer_sk"]) == [(1, 1), (2, 2), (3, 3), (4, 11)]


def test_hash_keys_are_xxhash64_of_the_natural_key_and_survive_a_rebuild(ws, spark):
    ws.write("in/b1.csv", "id,city\n1,Rome\n2,Kyiv\n")
    ws.write("in/b2.csv", "id,city\n2,Riga\n")
    p = ws.pipeline(KEY_DIM.format(generator="hash"))
    assert p.run().ok
    hashed = spark.sql("SELECT id, xxhash64(CAST(id AS STRING)) FROM VALUES (1), (2) t(id)")
    first = {r["id"]: r["customer_sk"] for r in p.table("customers").collect()}
    assert first == {r[0]: r[1] for r in hashed.collect()}
    rebuild = KEY_DIM.format(generator="hash").replace("name: customers", "name: rebuilt")
    again = ws.pipeline(rebuild, name="rebuild.yml")
    assert again.run().ok
    assert {r["id"]: r["customer_sk"] for r in again.table("rebuilt").collect()} == first


def test_a_batch_retried_after_a_crash_gets_the_same_keys(ws, monkeypatch):
    ws.write("in/b1.csv", "id,city\n1,Rome\n")
    ws.write("in/b2.csv", "id,city\n7,Oslo\n3,Lima\n")
    p = ws.pipeline(KEY_DIM.format(generator="sequence"))
    monkeypatch.setenv("LAKEFRESH_FAULTS", "after_write@b2.csv")
    assert not p.run().ok  # b2 staged, not published
    monkeypatch.delenv("LAKEFRESH_FAULTS")
    assert p.run().ok
    assert rows(p.table("customers"), ["id", "customer_sk"]) == [(1, 1), (3, 2), (7, 3)]


@pytest.mark.parametrize("generator", ["hash", "sequence"])
def test_keys_do_not_depend_on_how_tasks_split_the_rows(spark, generator):
    """A re-executed Spark task recomputes its rows: the keys must not depend on partitioning or
    on the order the tasks run in (uuid() or monotonically_increasing_id() would)."""
    from pyspark.sql import functions as F

    from lakefresh.config.strategies import SurrogateKeyConfig
    from lakefresh.strategies.surrogate import with_surrogate_key

    config = SurrogateKeyConfig(column="sk", generator=generator)
    data = spark.range(0, 500).select((F.col("id") * 7919 % 500).alias("k"))

    def keys(partitions: int) -> list[tuple[int, int]]:
        df = with_surrogate_key(data.repartition(partitions), config, ["k"], F.lit(None), F.lit(True), 10)
        return sorted((r["k"], r["sk"]) for r in df.collect())

    assert keys(1) == keys(7)


def test_scd2_versions_get_their_own_keys_and_keep_them_when_history_is_re_cut(ws):
    ws.write("in/b1.csv", "id,city,day\n1,Oslo,2025-01-01\n1,Rome,2025-01-05\n")
    ws.write("in/b2.csv", "id,city,day\n1,Kyiv,2025-01-03\n2,Lima,2025-01-02\n")  # Kyiv is late
    p = ws.pipeline(SCD2_DIM)
    assert p.run().ok
    assert rows(p.table("customers"), ["id", "city", "valid_from", "customer_sk"]) == [
        (1, "Kyiv", datetime(2025, 1, 3), 3),
        (1, "Oslo", datetime(2025, 1, 1), 1),
        (1, "Rome", datetime(2025, 1, 5), 2),
        (2, "Lima", datetime(2025, 1, 2), 4),
    ]


def test_an_scd2_version_whose_start_a_late_event_moves_keeps_its_key(ws):
    ws.write("in/b1.csv", "id,city,day\n1,Oslo,2025-01-03\n")
    ws.write("in/b2.csv", "id,city,day\n1,Oslo,2025-01-01\n")  # the same values, earlier
    p = ws.pipeline(SCD2_DIM)
    assert p.run().ok
    assert rows(p.table("customers"), ["id", "city", "valid_from", "customer_sk"]) == [
        (1, "Oslo", datetime(2025, 1, 1), 1),
    ]
