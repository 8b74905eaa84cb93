"""Fact lookups and early-arriving facts: every fact finds its surrogate key; a skeleton row is
created for a key the dimension lacks, then upgraded in place by the real record."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.conftest import rows

FACTS = """
- name: sales
  source:
    kind: files
    path: sales
    format: csv
    schema: {{sale_id: int, cust: int, amount: int, sold_at: timestamp}}
  strategy: {{kind: append}}
  lookups:
    - dimension: customers
      keys: {{cust: id}}
      {at}
      defaults: {{city: unknown}}
"""

KEY_DIM = """
- name: customers
  source: {kind: files, path: customers, format: csv, schema: {id: int, city: string}}
  strategy:
    kind: key
    keys: [id]
    surrogate_key: {column: customer_sk, generator: sequence}
"""

SCD2_DIM = """
- name: customers
  source: {kind: files, path: customers, format: csv, schema: {id: int, city: string, day: timestamp}}
  strategy:
    kind: scd2
    keys: [id]
    sequence_by: day
    surrogate_key: {column: customer_sk, generator: sequence}
"""


def dimension(p):
    return rows(p.table("customers"), ["id", "city", "customer_sk", "is_inferred"])


def test_an_early_arriving_fact_gets_a_skeleton_row_that_the_real_record_upgrades_in_place(ws):
    ws.write("customers/c1.csv", "id,city\n1,Rome\n")
    ws.write(
        "sales/s1.csv",
        "sale_id,cust,amount,sold_at\n10,1,5,2025-01-02\n11,2,7,2025-01-02\n12,2,1,2025-01-03\n",
    )
    p = ws.pipeline(KEY_DIM + FACTS.format(at=""))
    result = p.run()
    assert result.ok, result.to_dict()
    assert result.batches[1].skeletons == 1
    assert dimension(p) == [(1, "Rome", 1, False), (2, "unknown", 2, True)]
    assert rows(p.table("sales"), ["sale_id", "customer_sk"]) == [(10, 1), (11, 2), (12, 2)]

    ws.write("customers/c2.csv", "id,city\n2,Oslo\n")
    ws.write("sales/s2.csv", "sale_id,cust,amount,sold_at\n13,2,3,2025-01-04\n")
    result = p.run()
    assert result.ok, result.to_dict()
    assert result.batches[0].counts == {"C": 1}
    assert result.batches[1].skeletons == 0
    assert dimension(p) == [(1, "Rome", 1, False), (2, "Oslo", 2, False)]  # same key, not duplicated
    assert rows(p.table("sales"), ["sale_id", "customer_sk"]) == [(10, 1), (11, 2), (12, 2), (13, 2)]


def test_facts_before_their_dimension_exists_create_it_from_skeletons(ws):
    ws.folder("customers")
    ws.write("sales/s1.csv", "sale_id,cust,amount,sold_at\n10,4,5,2025-01-02\n11,,7,2025-01-02\n")
    p = ws.pipeline(KEY_DIM + FACTS.format(at=""))
    assert p.run().ok
    assert dimension(p) == [(4, "unknown", 1, True)]
    assert rows(p.table("sales"), ["sale_id", "customer_sk"]) == [(10, 1), (11, None)]  # NULL key: NULL
    ws.write("customers/c1.csv", "id,city\n4,Lima\n5,Bern\n")
    assert p.run().ok
    assert dimension(p) == [(4, "Lima", 1, False), (5, "Bern", 2, False)]


def test_scd2_lookups_pick_the_version_valid_at_the_fact_and_skeletons_hand_over_their_key(ws):
    ws.write("customers/c1.csv", "id,city,day\n1,Oslo,2025-01-01\n1,Rome,2025-01-10\n")
    ws.write(
        "sales/s1.csv",
        "sale_id,cust,amount,sold_at\n"
        "10,1,5,2024-12-01\n"  # before the key's first version: the first version
        "11,1,5,2025-01-05\n"
        "12,1,5,2025-01-12\n"
        "13,2,5,2025-01-07\n"  # early-arriving: skeleton version from 2025-01-07
        "14,2,5,2025-01-03\n",  # the skeleton starts at the earliest fact that needs it
    )
    p = ws.pipeline(SCD2_DIM + FACTS.format(at="at: sold_at"))
    assert p.run().ok
    assert rows(p.table("customers"), ["id", "city", "valid_from", "customer_sk", "is_inferred"]) == [
        (1, "Oslo", datetime(2025, 1, 1), 1, False),
        (1, "Rome", datetime(2025, 1, 10), 2, False),
        (2, "unknown", datetime(2025, 1, 3), 3, True),
    ]
    assert rows(p.table("sales"), ["sale_id", "customer_sk"]) == [(10, 1), (11, 1), (12, 2), (13, 3), (14, 3)]

    ws.write("customers/c2.csv", "id,city,day\n2,Lima,2025-01-05\n2,Bern,2025-01-09\n")
    assert p.run().ok
    assert rows(p.table("customers"), ["id", "city", "valid_from", "customer_sk", "is_inferred"]) == [
        (1, "Oslo", datetime(2025, 1, 1), 1, False),
        (1, "Rome", datetime(2025, 1, 10), 2, False),
        (2, "Bern", datetime(2025, 1, 9), 4, False),
        (2, "Lima", datetime(2025, 1, 5), 3, False),  # the first real version took the skeleton's key
    ]


def test_a_skeleton_whose_facts_have_no_time_starts_at_the_batch_time(ws):
    """Facts whose `at` is NULL still need their key. Their skeleton version started at NULL,
    which the real record's versions never replaced: two current versions of the key, or a
    dimension batch whose audit failed again and again."""
    batch_time = datetime(2025, 2, 1, tzinfo=UTC).timestamp()
    ws.folder("customers")
    ws.write("sales/s1.csv", "sale_id,cust,amount,sold_at\n20,2,5,\n", mtime=batch_time)
    p = ws.pipeline(SCD2_DIM + FACTS.format(at="at: sold_at"))
    assert p.run().ok
    versions = ["id", "city", "valid_from", "customer_sk", "is_inferred", "is_current"]
    assert rows(p.table("customers"), versions) == [(2, "unknown", datetime(2025, 2, 1), 1, True, True)]

    ws.write("customers/c1.csv", "id,city,day\n2,Lima,2025-01-05\n")
    result = p.run()
    assert result.ok, result.to_dict()
    assert rows(p.table("customers"), versions) == [(2, "Lima", datetime(2025, 1, 5), 1, False, True)]
