"""What the verbs tell after they ran: a batch they took out holds no rows in the log, the
newest batch stays the newest after an older one is reloaded, and a verb on a file that other
tables read too says which tables it left alone."""

from __future__ import annotations

from tests.conftest import cli_in_process

KEYED = """
- name: t
  source: {kind: files, path: in, format: csv, schema: {id: int, v: string}}
  strategy: {kind: key, keys: [id]}
"""

TWO_READERS = (
    KEYED
    + """
- name: copy
  source: {kind: files, path: in, format: csv, schema: {id: int, v: string}}
  strategy: {kind: append}
"""
)


def three_batches(ws) -> None:
    ws.write("in/b1.csv", "id,v\n1,a\n2,b\n", mtime=1_736_000_000)
    ws.write("in/b2.csv", "id,v\n3,c\n4,d\n5,e\n", mtime=1_736_003_600)
    ws.write("in/b3.csv", "id,v\n6,f\n", mtime=1_736_007_200)


def test_a_rolled_back_batch_holds_no_rows_in_the_log_and_its_file_is_shown_held_back(ws):
    """Given b1..b3 loaded and the table rolled back to b1: the history says b2 and b3 each hold
    0 rows of the table (not the 3 and 1 they held before), and plan and status say that their
    files, still in the folder, are held back."""
    three_batches(ws)
    p = ws.pipeline(KEYED)
    assert p.run().ok
    p.rollback("t", "b1.csv")
    effective = {
        r["batch_id"]: (r["status"], r["effective_count"])
        for r in p.history("t")
        if not r["batch_id"].startswith("lakefresh:")
    }
    assert effective == {"b1.csv": ("published", 2), "b2.csv": ("unloaded", 0), "b3.csv": ("unloaded", 0)}
    # their files are still in the folder: plan and status say they are held back, and why
    (planned,) = p.plan().tables
    assert [(h["name"], h["reason"].split(" (")[0]) for h in planned.held] == [
        ("b2.csv", "unloaded"),
        ("b3.csv", "unloaded"),
    ]
    assert planned.take == []
    (status,) = p.status(pending=True)
    assert (status.pending, status.held) == (0, 2)


def test_the_last_batch_stays_the_newest_after_an_older_one_is_reloaded(ws):
    three_batches(ws)
    p = ws.pipeline(KEYED)
    assert p.run().ok
    ws.write("in/b1.csv", "id,v\n1,A\n2,B\n")
    p.reload("t", ["b1.csv"])
    (status,) = p.status()
    assert (status.last_batch_id, status.batches_published) == ("b3.csv", 3)


def test_a_reload_of_a_file_another_table_reads_says_which_tables_it_left_alone(ws):
    """Two tables read the folder; reloading b1 in one changes only that one, and says so with
    the command for the other."""
    three_batches(ws)
    p = ws.pipeline(TWO_READERS)
    assert p.run().ok
    ws.write("in/b1.csv", "id,v\n1,A\n2,B\n")
    shown = cli_in_process("reload", "pipeline.yml", "--table", "t", "--batch", "b1.csv", cwd=ws.root)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert (
        "copy reads the same source and holds b1.csv too: only t changed; for copy: lakefresh "
        "reload pipeline.yml --table copy --batch b1.csv"
    ) in shown.stdout
    assert p.reload("copy", ["b1.csv"]).also_in == {"t": ["b1.csv"]}
