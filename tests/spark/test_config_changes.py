"""Reprocessing after a configuration change: every batch records what shaped
its result; a run that finds the table's settings changed since its last published batch, in a
way that changes results, stops that table naming the change; a change that does not (a path,
a property, a declared column added) passes; `--accept-config-change` applies the new settings
to the new batches."""

from __future__ import annotations

from tests.conftest import rows

TABLE = """
- name: t
  source: {kind: files, path: in, format: csv, schema: {id: int, v: string}}
  strategy: {kind: key, keys: [id]}
  properties: {comment: first}
"""


def test_a_changed_key_stops_the_table_until_the_change_is_accepted(ws):
    ws.write("in/b1.csv", "id,v\n1,a\n")
    assert ws.pipeline(TABLE).run().ok
    ws.write("in/b2.csv", "id,v\n1,b\n")

    changed = ws.pipeline(TABLE.replace("keys: [id]", "keys: [id, v]"))
    result = changed.run()
    assert result.tables[0].error == (
        "the configuration of table 't' changed since batch b1.csv was published, in ways that "
        "change results: strategy.keys: ['id'] -> ['id', 'v']. New batches under it would mix "
        "with the earlier ones in one table: revert the change, take it for the new batches "
        "only (lakefresh run PIPELINE --table t --accept-config-change), or rebuild the table "
        "under it (lakefresh reset PIPELINE --table t); lakefresh plan shows what a run would take"
    )
    assert result.batches == []  # nothing taken

    accepted = changed.run(accept_config_change=True)
    assert [b.batch_id for b in accepted.batches] == ["b2.csv"]
    assert rows(changed.table("t"), ["id", "v"]) == [(1, "a"), (1, "b")]  # (1, b) is a new key now
    ws.write("in/b3.csv", "id,v\n2,c\n")
    assert changed.run().ok  # the new settings are the recorded ones from then on


def test_changes_that_do_not_change_results_pass(ws):
    ws.write("in/b1.csv", "id,v\n1,a\n")
    assert ws.pipeline(TABLE).run().ok
    ws.folder("landing")
    ws.write("landing/b2.csv", "id,v,w\n2,b,7\n")
    moved = TABLE.replace("path: in", "path: landing").replace("comment: first", "comment: second")
    grown = moved.replace("v: string}", "v: string, w: int}")
    result = ws.pipeline(grown).run()
    assert result.ok, result.to_dict()
    assert [b.batch_id for b in result.batches] == ["b2.csv"]
