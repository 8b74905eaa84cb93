"""`key` with `tombstone_retention`: a deleted key's date kept out of sight, so a row older than
the delete that arrives in a later batch never brings the key back. The strategy's statements do
not depend on the table format, and its tombstones on Delta take the contract (tests/spark/
test_delta.py, `key_tombstones`), so these tests run on Iceberg."""

from __future__ import annotations

from datetime import timedelta

from lakefresh.state import control, tombstones
from tests.conftest import rows

SCHEMA = "userId: int, name: string, city: string, operation: string, sequenceNum: int"
STRATEGY = (
    "{kind: key, keys: [userId], date_column: sequenceNum, drop_columns: [operation, sequenceNum],"
    " delete: {condition: \"operation = 'DELETE'\"}, tombstone_retention: 2d}"
)
HEADER = "userId,name,city,operation,sequenceNum\n"
# Databricks, "The AUTO CDC APIs" (docs.databricks.com/aws/en/ldp/cdc), "Examples: SCD type 1
# and SCD type 2 processing with CDF source data": its users/cdc rows, cut into three batches so
# that the DELETE of 123 (sequence 6) arrives before that key's older UPDATE (sequence 5)
AUTO_CDC_BATCHES = {
    "b1.csv": "124,Raul,Oaxaca,INSERT,1\n123,Isabel,Monterrey,INSERT,1\n"
    "125,Mercedes,Tijuana,INSERT,2\n126,Lily,Cancun,INSERT,2\n",
    "b2.csv": "123,,,DELETE,6\n125,Mercedes,Guadalajara,UPDATE,6\n",
    "b3.csv": "125,Mercedes,Mexicali,UPDATE,5\n123,Isabel,Chihuahua,UPDATE,5\n",
}
EXPECTED = [(124, "Raul", "Oaxaca"), (125, "Mercedes", "Guadalajara"), (126, "Lily", "Cancun")]


def table(strategy: str, table_format: str) -> str:
    return f"""
- name: t
  format: {table_format}
  source: {{kind: files, path: in, format: csv, schema: {{{SCHEMA}}}}}
  strategy: {strategy}
"""


def counts(result) -> dict[str, dict[str, int]]:
    return {b.batch_id: b.counts for b in result.batches}


def kept(ws, p) -> list[tuple]:
    """The tombstones that count: (key, date, commit)."""
    target = f"{ws.namespace}.t"
    found = p.backend.read(tombstones.table_of(target))
    live = tombstones.counting(p.backend, target, tombstones.commits_of(found))
    found_rows = [(r["userId"], r["_lf_updated_at"], r["_lf_batch_id"]) for r in found.collect()]
    return sorted(r for r in found_rows if r[2] in live)


def write_batches(ws, batches: dict[str, str]) -> None:
    for n, (name, text) in enumerate(batches.items()):
        ws.write(f"in/{name}", HEADER + text, mtime=1_736_000_000 + 3600 * n)


def test_databricks_auto_cdc_example_in_three_batches_keeps_a_deleted_key_out(ws):
    """The AUTO CDC example (above), its delete before the older update: 123 stays deleted, as
    Databricks' tombstones keep it; the target holds no trace of 123."""
    write_batches(ws, AUTO_CDC_BATCHES)
    p = ws.pipeline(table(STRATEGY, "iceberg"))
    result = p.run()
    assert result.ok, result.to_dict()
    assert counts(result) == {"b1.csv": {"N": 4}, "b2.csv": {"D": 1, "C": 1}, "b3.csv": {"O": 2}}
    assert rows(p.table("t"), ["userId", "name", "city"]) == EXPECTED
    assert kept(ws, p) == [(123, 6, "b2.csv")]
    # a newer row brings the key back
    ws.write("in/b4.csv", HEADER + "123,Isabel,Puebla,INSERT,7\n", mtime=1_736_100_000)
    assert counts(p.run()) == {"b4.csv": {"N": 1}}
    assert (123, "Isabel", "Puebla") in rows(p.table("t"), ["userId", "name", "city"])


def test_maintain_compacts_a_tombstone_table_of_many_files_and_its_tombstones_still_count(ws, monkeypatch):
    monkeypatch.setattr(control, "COMPACT_AT_FILES", 0)  # one file is many here
    write_batches(ws, dict(list(AUTO_CDC_BATCHES.items())[:2]))
    p = ws.pipeline(table(STRATEGY, "iceberg"))
    assert p.run().ok
    (result,) = p.maintain().tables
    assert result.done.get("tombstone_files_compacted") == 1
    assert kept(ws, p) == [(123, 6, "b2.csv")]
    ws.write("in/b3.csv", HEADER + AUTO_CDC_BATCHES["b3.csv"], mtime=1_736_100_000)
    assert counts(p.run()) == {"b3.csv": {"O": 2}}


def test_without_the_option_the_late_older_update_brings_the_key_back(ws):
    write_batches(ws, AUTO_CDC_BATCHES)
    p = ws.pipeline(table(STRATEGY.replace(", tombstone_retention: 2d", ""), "iceberg"))
    result = p.run()
    assert counts(result)["b3.csv"] == {"N": 1, "O": 1}
    assert (123, "Isabel", "Chihuahua") in rows(p.table("t"), ["userId", "name", "city"])
    assert not p.backend.exists(tombstones.table_of(f"{ws.namespace}.t"))


def test_a_delete_of_a_key_never_seen_keeps_its_tombstone(ws):
    """Apache Spark's AutoCDC, Scd1ForeachBatchHandlerSuite, "records an aux tombstone for a
    delete on a nonexistent key": the key's older row, arriving later, stays out."""
    write_batches(ws, {"b1.csv": "99,,,DELETE,1\n", "b2.csv": "99,Early,Lima,INSERT,0\n"})
    p = ws.pipeline(table(STRATEGY, "iceberg"))
    assert counts(p.run()) == {"b1.csv": {"U": 1}, "b2.csv": {"O": 1}}
    assert p.table("t").count() == 0


def test_past_the_retention_a_tombstone_is_forgotten_and_maintain_deletes_it(ws, monkeypatch):
    write_batches(ws, dict(list(AUTO_CDC_BATCHES.items())[:2]))
    p = ws.pipeline(table(STRATEGY, "iceberg"))
    assert p.run().ok
    later = tombstones.utc_now() + timedelta(days=3)
    monkeypatch.setattr(tombstones, "utc_now", lambda: later)
    (result,) = p.maintain().tables
    assert result.done.get("tombstones_deleted") == 1
    assert p.backend.read(tombstones.table_of(f"{ws.namespace}.t")).count() == 0
    ws.write("in/b3.csv", HEADER + AUTO_CDC_BATCHES["b3.csv"], mtime=1_736_100_000)
    assert counts(p.run()) == {"b3.csv": {"N": 1, "O": 1}}  # 123's delete is forgotten


def test_a_reset_keeps_the_tombstones_of_the_batches_it_applies_again(ws):
    write_batches(ws, dict(list(AUTO_CDC_BATCHES.items())[:2]))
    p = ws.pipeline(table(STRATEGY, "iceberg"))
    assert p.run().ok
    p.reset("t")
    ((_, at, commit),) = kept(ws, p)
    assert at == 6 and commit.startswith("lakefresh:reset:")
    ws.write("in/b3.csv", HEADER + AUTO_CDC_BATCHES["b3.csv"], mtime=1_736_100_000)
    assert counts(p.run()) == {"b3.csv": {"O": 2}}
    assert rows(p.table("t"), ["userId", "name", "city"]) == EXPECTED


def test_an_unloaded_delete_keeps_no_tombstone(ws):
    write_batches(ws, dict(list(AUTO_CDC_BATCHES.items())[:2]))
    p = ws.pipeline(table(STRATEGY, "iceberg"))
    assert p.run().ok
    p.unload("t", ["b2.csv"])
    assert kept(ws, p) == []
    ws.write("in/b3.csv", HEADER + AUTO_CDC_BATCHES["b3.csv"], mtime=1_736_100_000)
    assert counts(p.run()) == {"b3.csv": {"C": 2}}  # 123 was never deleted: its update applies
