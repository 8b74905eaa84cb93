"""`lakefresh plan`: what the next run would take and do, written nowhere, as
SQLMesh's `plan` shows its changes before applying them."""

from __future__ import annotations

import json

from tests.conftest import cli_in_process

TABLES = """
- name: customers
  source: {kind: files, path: in, format: csv}
  strategy: {kind: key, keys: [id]}
- name: orders
  source: {kind: files, path: orders, format: csv, layout: folder, completion_marker: _SUCCESS}
  strategy: {kind: append}
"""


def test_a_plan_lists_what_a_run_would_take_and_why_not_the_rest_and_writes_nothing(ws):
    ws.write("in/b1.csv", "id,name\n1,a\n")
    ws.write("orders/d1/part.csv", "order_id,amount\n10,5\n")
    ws.write("orders/d1/_SUCCESS", "")
    fresh = ws.pipeline(TABLES)
    first = fresh.plan()
    assert [(t.table, t.exists, [b.batch_id for b in t.take]) for t in first.tables] == [
        ("customers", False, ["b1.csv"]),
        ("orders", False, ["d1"]),
    ]
    assert not fresh.backend.exists(fresh.control.batches)  # not even the control tables
    assert fresh.run().ok

    b2 = ws.write("in/b2.csv", "id,name,email\n1,a,a@x\n2,b,b@x\n")  # a new column
    b3 = ws.write("in/b3.csv", "id,name\n3,c\n")
    ws.write("orders/d2/part.csv", "order_id,amount\n11,6\n")  # no _SUCCESS yet
    tables = [f"{ws.namespace}.customers", f"{ws.namespace}.orders", f"{ws.control_namespace}.batches"]
    before = ws.version_counts(tables)
    customers, orders = ws.pipeline(TABLES).plan().tables
    assert [(b.batch_id, b.position, b.files, b.bytes) for b in customers.take] == [
        ("b2.csv", "b2.csv", 1, b2.stat().st_size),
        ("b3.csv", "b3.csv", 1, b3.stat().st_size),
    ]
    assert customers.new_columns == ["email"]
    assert customers.commits == 2  # b2 adds a column b3 lacks: they are not one group
    assert customers.maintenance == []
    assert (customers.stops, customers.config_changes, customers.error) == (None, [], None)
    assert orders.take == []
    assert orders.waiting == [
        {"name": "d2", "reason": "no completion marker '_SUCCESS' yet: still being written"}
    ]
    assert ws.version_counts(tables) == before


def test_a_plan_names_a_configuration_change_as_the_reason_a_run_would_stop(ws):
    ws.write("in/b1.csv", "id,name\n1,a\n")
    ws.folder("orders")
    assert ws.pipeline(TABLES).run().tables[0].ok
    ws.write("in/b2.csv", "id,name\n2,b\n")
    changed = ws.pipeline(TABLES.replace("keys: [id]", "keys: [id, name]"))
    path = ws.root / "pipeline.yml"
    shown = cli_in_process("plan", str(path), "--table", "customers", "--output", "json", cwd=ws.root)
    assert shown.returncode == 0, shown.stdout
    [customers] = json.loads(shown.stdout)["tables"]
    assert customers["config_changes"] == ["strategy.keys: ['id'] -> ['id', 'name']"]
    assert customers["stops"].startswith("the configuration changed since batch b1.csv")
    assert [b["batch_id"] for b in customers["take"]] == ["b2.csv"]
    assert changed.run().tables[0].error.startswith("the configuration of table 'customers' changed")

    text = cli_in_process("plan", str(path), "--table", "customers", cwd=ws.root).stdout
    assert text.splitlines()[:3] == [
        f"customers: 1 batch(es) to take in 1 commit(s), {(ws.root / 'in' / 'b2.csv').stat().st_size} bytes",
        "  stops before taking a batch: the configuration changed since batch b1.csv in ways that "
        "change results: run with --accept-config-change, or rebuild with lakefresh reset",
        "  config change: strategy.keys: ['id'] -> ['id', 'name']",
    ]


def test_a_plan_counts_the_commits_of_a_backlog_and_names_the_upkeep_due(ws):
    """Three waiting batches of one shape take one commit (run/backlog.py); a merge-on-read target
    holding as many delete files as its policy allows is due a compaction."""
    table = """
- name: t
  source: {kind: files, path: in, format: csv, schema: {id: int, v: string}}
  strategy: {kind: key, keys: [id]}
  write_mode: merge-on-read
  maintenance: {compact_at_delete_files: LIMIT}
"""
    ws.write("in/b1.csv", "id,v\n1,a\n2,b\n")
    ws.write("in/b2.csv", "id,v\n1,A\n")  # an update: a position delete file
    assert ws.pipeline(table.replace("LIMIT", "100")).run().ok
    for n in (3, 4, 5):
        ws.write(f"in/b{n}.csv", f"id,v\n{n},x\n")
    (t,) = ws.pipeline(table.replace("LIMIT", "1")).plan().tables
    assert ([b.batch_id for b in t.take], t.commits) == (["b3.csv", "b4.csv", "b5.csv"], 1)
    assert t.maintenance == [
        "compaction: 1 delete files (compact_at_delete_files 1): after the next run that takes a "
        "batch, or lakefresh maintain"
    ]


def test_what_a_plan_without_a_jvm_cannot_tell_it_says_and_reading_the_batches_tells_it(ws):
    """Without a JVM a plan reads the batches' headers, not their rows: it says what only Spark
    can tell (the types it infers for new columns, the name of a column a transform makes
    unnamed), and `read_batches` (`plan --read-batches`) reads the batches through Spark to tell
    it."""
    tables = """
- name: k
  source: {kind: files, path: in, format: csv}
  strategy: {kind: key, keys: [id]}
- name: shout
  source: {kind: files, path: in, format: csv}
  transform: {sql: "SELECT *, upper(v) FROM batch"}
  strategy: {kind: append}
"""
    ws.write("in/b1.csv", "id,v\n1,a\n")
    p = ws.pipeline(tables)
    assert p.run().ok
    ws.write("in/b2.csv", "id,v,w\n2,x,1\n")
    ws.write("in/b3.csv", "id,v,w\n3,y,z\n")  # w: a number, then text
    read = "(lakefresh plan --read-batches reads them through Spark)"
    k, shout = p.plan().tables
    assert (k.new_columns, k.commits, k.unknown) == (
        ["w"],
        1,
        [f"the commits: 1 to 2, as Spark types the new columns the batches bring from their data {read}"],
    )
    assert (shout.new_columns, shout.unknown) == (
        [],
        [
            "the columns its batches add: its transform is more than a plain SELECT of batch, and "
            f"only Spark names what it makes {read}"
        ],
    )
    k, shout = p.plan(read_batches=True).tables
    assert (k.new_columns, k.commits, k.unknown) == (["w"], 2, [])
    assert (shout.new_columns, shout.unknown) == (["w"], [])
