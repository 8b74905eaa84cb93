"""A bad-row policy per table: `bad_rows: quarantine` (the default) loads the
good rows and quarantines the rest; `bad_rows: refuse` refuses the whole batch and leaves the
table unchanged, and a refused batch does not block its table for ever: fixing the file lets the
next run take it, and skipping it for good is an explicit operator action, recorded as
`skipped` (`lakefresh run --table T --skip-batch B`)."""

from __future__ import annotations

import json

import pytest

from lakefresh.errors import ConfigError
from tests.conftest import cli_in_process, rows

TABLE = """
- name: t
  source: {kind: files, path: in, format: csv, schema: {id: int, amount: int}}
  strategy: {kind: key, keys: [id]}
  bad_rows: refuse
"""


def statuses(p) -> list[tuple[str, str]]:
    return sorted((r["batch_id"], r["status"]) for r in p.history("t"))


def test_a_refused_batch_leaves_the_table_unchanged_until_the_file_is_fixed(ws):
    ws.write("in/b1.csv", "id,amount\n1,10\n")
    ws.write("in/b2.csv", "id,amount\n2,20\n3,lots\n4,x\n")
    p = ws.pipeline(TABLE)

    result = p.run()
    assert [(b.batch_id, b.status) for b in result.batches] == [
        ("b1.csv", "published"),
        ("b2.csv", "refused"),
    ]
    assert result.batches[1].error == (
        "2 bad row(s) (b2.csv line 3: amount: 'lots' is not a valid int; b2.csv line 4: amount: "
        "'x' is not a valid int) and table 't' refuses batches with bad rows (bad_rows: refuse): "
        "nothing was written. Fix the batch and run again, or skip it for good: "
        "lakefresh run PIPELINE --table t --skip-batch b2.csv"
    )
    assert rows(p.table("t"), ["id", "amount"]) == [(1, 10)]
    assert rows(p.quarantine("t")) == []
    assert not p.run().ok  # still refused: it blocks the table, visibly

    ws.write("in/b2.csv", "id,amount\n2,20\n3,30\n4,40\n")
    assert p.run().ok
    assert rows(p.table("t"), ["id", "amount"]) == [(1, 10), (2, 20), (3, 30), (4, 40)]
    assert statuses(p) == [
        ("b1.csv", "published"),
        ("b2.csv", "published"),
        ("b2.csv", "refused"),
        ("b2.csv", "refused"),
    ]


def test_skipping_a_refused_batch_is_an_operator_action_and_it_is_never_taken(ws):
    ws.write("in/b1.csv", "id,amount\n1,10\n")
    ws.write("in/b2.csv", "id,amount\n2,oops\n")
    ws.write("in/b3.csv", "id,amount\n3,30\n")
    p = ws.pipeline(TABLE)
    assert not p.run().ok

    with pytest.raises(ConfigError, match="needs exactly one table"):
        p.run(skip_batches=["b2.csv"])
    published = p.run(["t"], skip_batches=["b1.csv"])
    assert published.tables[0].error == (
        "cannot skip b1.csv: not a batch waiting in table 't' (waiting: b2.csv, b3.csv); "
        "a published batch is not skipped"
    )

    done = cli_in_process("run", "pipeline.yml", "--table", "t", "--skip-batch", "b2.csv", cwd=ws.root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert rows(p.table("t"), ["id", "amount"]) == [(1, 10), (3, 30)]
    assert [(b.batch_id, b.status) for b in p.run().batches] == []  # b2 is never taken again
    assert statuses(p) == [
        ("b1.csv", "published"),
        ("b2.csv", "refused"),
        ("b2.csv", "skipped"),
        ("b3.csv", "published"),
    ]


def test_the_quarantine_command_lists_bad_rows_for_people_and_as_json(ws):
    """`lakefresh quarantine PIPELINE [--table T] [--batch B]`."""
    ws.write("in/b1.csv", "id,amount\n1,10\n2,x\n")
    ws.write("in/b2.csv", "id,amount\n3,30\n4,many\n")
    p = ws.pipeline(TABLE.replace("  bad_rows: refuse\n", ""))
    assert p.run().ok

    listed = cli_in_process("quarantine", "pipeline.yml", "--table", "t", "-o", "json", cwd=ws.root)
    assert listed.returncode == 0, listed.stderr
    assert [
        (r["batch_id"], r["source_file"].rsplit("/", 1)[-1], r["line"], r["reason"], r["raw"])
        for r in json.loads(listed.stdout)
    ] == [
        ("b1.csv", "b1.csv", 3, "amount: 'x' is not a valid int", '{"id":"2","amount":"x"}'),
        ("b2.csv", "b2.csv", 3, "amount: 'many' is not a valid int", '{"id":"4","amount":"many"}'),
    ]
    one = cli_in_process("quarantine", "pipeline.yml", "-t", "t", "-b", "b2.csv", cwd=ws.root)
    assert one.returncode == 0 and "many" in one.stdout and "'x'" not in one.stdout, one.stdout
    nothing = cli_in_process("quarantine", "pipeline.yml", "-t", "t", "-b", "b9.csv", cwd=ws.root)
    assert "no quarantined rows" in nothing.stdout


AMOUNTS = """
- name: t
  format: {table_format}
  source: {{kind: files, path: in, format: csv, schema: {{id: int, amount: {amount_type}}}}}
  strategy: {{kind: key, keys: [id]}}
{limit}"""


def test_a_batch_whose_every_row_is_bad_is_refused_and_waits_for_the_fixed_type(ws):
    """A wrong declared type (`amount: int` for `10.50`) sends every row to quarantine: by
    default such a batch is refused, not counted as done, so fixing the declared type is all it
    takes: the next run loads it. (A refusal is decided before anything is written: on Iceberg,
    as for every format.)"""
    ws.write("in/b1.csv", "id,amount\n1,10.50\n2,3.25\n")
    p = ws.pipeline(AMOUNTS.format(table_format="iceberg", amount_type="int", limit=""))
    result = p.run()
    assert [(b.batch_id, b.status) for b in result.batches] == [("b1.csv", "refused")]
    assert "every row of the batch is bad" in result.batches[0].error
    assert "Fix the batch or the table's declared types and run again" in result.batches[0].error
    text = cli_in_process("run", "pipeline.yml", cwd=ws.root)
    assert text.returncode == 1, text.stdout + text.stderr

    p = ws.pipeline(AMOUNTS.format(table_format="iceberg", amount_type="'decimal(10,2)'", limit=""))
    assert p.run().ok
    assert [(r[0], str(r[1])) for r in rows(p.table("t"), ["id", "amount"])] == [(1, "10.50"), (2, "3.25")]


@pytest.mark.parametrize(
    ("limit", "loaded"),
    [
        ("max_bad_rows: 1", True),
        ("max_bad_rows: 0", False),
        ("max_bad_rows: 0.25", False),
        ("max_bad_rows: 0.5", True),
    ],
)
def test_max_bad_rows_is_a_count_or_a_fraction_of_the_batch(ws, limit, loaded):
    """Given a batch of three rows, one bad: a limit of one row or of half the rows loads the
    two good ones and quarantines the bad one (the run's summary and `status` say so); a limit
    of no row or a quarter refuses it."""
    ws.write("in/b1.csv", "id,amount\n1,10\n2,x\n3,30\n")
    p = ws.pipeline(AMOUNTS.format(table_format="iceberg", amount_type="int", limit=f"  {limit}\n"))
    text = cli_in_process("run", "pipeline.yml", cwd=ws.root)
    as_json = json.loads(cli_in_process("status", "pipeline.yml", "-o", "json", cwd=ws.root).stdout)
    if loaded:
        assert text.returncode == 0, text.stdout + text.stderr
        assert "t: 1 batch(es) applied, 1 row(s) quarantined, ok" in text.stdout
        assert rows(p.table("t"), ["id", "amount"]) == [(1, 10), (3, 30)]
        assert as_json[0]["quarantined"] == 1
    else:
        assert text.returncode == 1
        assert "1 of its 3 rows are bad, more than max_bad_rows" in text.stdout
        assert not p.backend.exists(f"{ws.namespace}.t")
        assert as_json[0]["quarantined"] == 0
