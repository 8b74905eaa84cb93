"""Trust under a hostile world: someone rolls the target back, another writer adds rows
behind lakefresh's back, a failed batch had added a column, the target moves while a batch is
staged. Each test: given these batches and this interference, the target equals this table."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from lakefresh.state.batch_row import BatchRow
from tests.conftest import CATALOG, FORMATS, log_reads, rows, run_paused

TABLE = """
- name: t
  source:
    kind: files
    path: in
    format: csv
    schema: {id: int, v: string, ts: timestamp}
  strategy: {kind: key, keys: [id], date_column: ts}
"""


def batch(ws, name: str, *lines: str) -> None:
    ws.write(f"in/{name}", "id,v,ts\n" + "".join(f"{line}\n" for line in lines))


def target(p) -> list[tuple]:
    return rows(p.table("t"), ["id", "v", "_lf_batch_id"])


def statuses(p) -> list[tuple[str, str]]:
    return sorted((r["batch_id"], r["status"]) for r in p.history("t"))


def effective(p) -> dict[str, int]:
    return {r["batch_id"]: r["effective_count"] for r in p.history("t") if r["status"] == "published"}


def insert_by_hand(ws, p, values: str) -> None:
    """Another writer's plain SQL insert: lakefresh's system columns stay NULL."""
    p.spark.sql(f"INSERT INTO {CATALOG}.{ws.namespace}.t VALUES ({values}, NULL, NULL, NULL)")


def three_batches(ws):
    batch(ws, "b1.csv", "1,a,2025-01-01 00:00:00", "2,b,2025-01-01 00:00:00")
    batch(ws, "b2.csv", "1,A,2025-01-02 00:00:00", "3,c,2025-01-02 00:00:00")
    batch(ws, "b3.csv", "2,B,2025-01-03 00:00:00")


def roll_back_to(ws, p, batch_id: str) -> None:
    snapshot = p.backend.published_batches(f"{ws.namespace}.t")[batch_id]
    p.spark.sql(f"CALL {CATALOG}.system.rollback_to_snapshot('{ws.namespace}.t', {snapshot})")


# --- rollbacks ------------------------------------------------------------------------------------


def test_a_rolled_back_target_stops_its_table_naming_the_lost_batches(ws):
    three_batches(ws)
    p = ws.pipeline(TABLE)
    assert p.run().ok
    roll_back_to(ws, p, "b1.csv")
    batch(ws, "b4.csv", "4,d,2025-01-04 00:00:00")

    for _ in range(2):  # it stays stopped until the operator decides
        result = p.run()
        assert not result.ok and result.batches == []
        error = result.tables[0].error
        assert "no longer in its lineage: the table was rolled back (b2.csv, b3.csv)" in error
        assert "--rolled-back forget" in error and "--rolled-back reapply" in error
        assert target(p) == [(1, "a", "b1.csv"), (2, "b", "b1.csv")]
    assert statuses(p) == [
        ("b1.csv", "published"),
        ("b2.csv", "rolled_back"),
        ("b3.csv", "rolled_back"),
    ]


def test_reapplying_rolled_back_batches_applies_them_again_in_order(ws):
    three_batches(ws)
    p = ws.pipeline(TABLE)
    assert p.run().ok
    roll_back_to(ws, p, "b1.csv")
    batch(ws, "b4.csv", "4,d,2025-01-04 00:00:00")
    assert not p.run().ok

    result = p.run(rolled_back="reapply")
    assert result.ok, result.to_dict()
    assert [b.batch_id for b in result.batches] == ["b2.csv", "b3.csv", "b4.csv"]
    assert target(p) == [(1, "A", "b2.csv"), (2, "B", "b3.csv"), (3, "c", "b2.csv"), (4, "d", "b4.csv")]
    assert statuses(p) == [
        ("b1.csv", "published"),
        ("b2.csv", "published"),
        ("b2.csv", "rolled_back"),
        ("b3.csv", "published"),
        ("b3.csv", "rolled_back"),
        ("b4.csv", "published"),
    ]
    assert effective(p) == {"b1.csv": 0, "b2.csv": 2, "b3.csv": 1, "b4.csv": 1}
    again = p.run()
    assert again.ok and again.batches == []


def test_forgetting_rolled_back_batches_never_takes_them_again(ws):
    three_batches(ws)
    p = ws.pipeline(TABLE)
    assert p.run().ok
    roll_back_to(ws, p, "b1.csv")
    batch(ws, "b4.csv", "4,d,2025-01-04 00:00:00")

    result = p.run(rolled_back="forget")
    assert result.ok, result.to_dict()
    assert [b.batch_id for b in result.batches] == ["b4.csv"]
    assert target(p) == [(1, "a", "b1.csv"), (2, "b", "b1.csv"), (4, "d", "b4.csv")]
    # b1's rows were superseded by the batches now gone: its count is recounted from the target
    assert effective(p) == {"b1.csv": 2, "b4.csv": 1}
    assert ("b2.csv", "forgotten") in statuses(p)
    again = p.run()
    assert again.ok and again.batches == []


def test_expired_snapshots_and_compaction_are_not_a_rollback(ws):
    three_batches(ws)
    p = ws.pipeline(TABLE)
    assert p.run().ok
    name = f"{ws.namespace}.t"
    time.sleep(0.01)
    p.backend.compact(name, keep_versions=1)  # rewrite_data_files, then expire_snapshots
    assert p.backend.published_batches(name) == {}  # every batch's snapshot has expired
    batch(ws, "b4.csv", "4,d,2025-01-04 00:00:00")

    result = p.run()
    assert result.ok, result.to_dict()
    assert [b.batch_id for b in result.batches] == ["b4.csv"]
    assert target(p) == [(1, "A", "b2.csv"), (2, "B", "b3.csv"), (3, "c", "b2.csv"), (4, "d", "b4.csv")]
    assert "rolled_back" not in {s for _, s in statuses(p)}


# --- another writer -------------------------------------------------------------------------------


def test_rows_another_writer_inserted_are_updated_by_newer_batches(ws):
    batch(ws, "b1.csv", "1,a,2025-01-01 00:00:00")
    p = ws.pipeline(TABLE)
    assert p.run().ok
    insert_by_hand(ws, p, "7, 'by hand', TIMESTAMP '2025-01-05 00:00:00'")
    batch(ws, "b2.csv", "7,from b2,2025-01-06 00:00:00", "1,a,2025-01-01 00:00:00")

    result = p.run()
    assert result.ok, result.to_dict()
    assert result.batches[0].counts == {"C": 1, "U": 1}
    assert target(p) == [(1, "a", "b1.csv"), (7, "from b2", "b2.csv")]


def test_a_key_another_writer_stored_twice_stops_the_batch_naming_it(ws):
    batch(ws, "b1.csv", "1,a,2025-01-01 00:00:00", "2,b,2025-01-01 00:00:00")
    p = ws.pipeline(TABLE)
    assert p.run().ok
    insert_by_hand(ws, p, "1, 'again', TIMESTAMP '2025-01-01'")
    batch(ws, "b2.csv", "1,new,2025-01-02 00:00:00", "3,c,2025-01-02 00:00:00")

    result = p.run()
    assert not result.ok
    error = result.batches[0].error
    assert error.startswith(f"{ws.namespace}.t holds key(s) (1,) more than once (rows written outside")
    assert "Py4J" not in error
    assert rows(p.table("t"), ["id", "v"]) == [(1, "a"), (1, "again"), (2, "b")]


# --- a failed batch's schema changes --------------------------------------------------------------


def test_a_failed_batch_leaves_the_schema_it_found(ws, monkeypatch):
    batch(ws, "b1.csv", "1,a,2025-01-01 00:00:00")
    p = ws.pipeline(TABLE)
    assert p.run().ok
    ws.write("in/b2.csv", "id,v,ts,extra\n2,b,2025-01-02 00:00:00,x\n")
    monkeypatch.setenv("LAKEFRESH_FAULTS", "after_audit@b2.csv")
    assert not p.run().ok
    assert p.table("t").columns == ["id", "v", "ts", "_lf_hash", "_lf_updated_at", "_lf_batch_id"]

    monkeypatch.delenv("LAKEFRESH_FAULTS")
    assert p.run().ok
    assert rows(p.table("t"), ["id", "extra"]) == [(1, None), (2, "x")]


def test_a_failed_first_batch_leaves_no_table(ws, monkeypatch):
    batch(ws, "b1.csv", "1,a,2025-01-01 00:00:00")
    p = ws.pipeline(TABLE)
    monkeypatch.setenv("LAKEFRESH_FAULTS", "after_write@b1.csv")
    assert not p.run().ok
    assert not p.backend.exists(f"{ws.namespace}.t")
    monkeypatch.delenv("LAKEFRESH_FAULTS")
    assert p.run().ok
    assert target(p) == [(1, "a", "b1.csv")]


# --- the target moves while a batch is staged -----------------------------------------------------


def test_a_batch_staged_again_leaves_one_set_of_quarantine_rows_and_no_staged_attempt(
    ws, monkeypatch, tmp_path: Path
):
    batch(ws, "b1.csv", "1,a,2025-01-01 00:00:00")
    batch(ws, "b2.csv", "2,b,2025-01-02 00:00:00", "x,bad,2025-01-02 00:00:00")
    p = ws.pipeline(TABLE)
    # another writer commits to the target between staging and publishing
    result = run_paused(
        p,
        monkeypatch,
        "after_record_staged@b2.csv",
        tmp_path / "go",
        lambda: insert_by_hand(ws, p, "9, 'z', TIMESTAMP '2025-01-09'"),
    )

    assert result.ok, result.to_dict()
    assert rows(p.table("t"), ["id", "v"]) == [(1, "a"), (2, "b"), (9, "z")]
    assert rows(p.quarantine("t"), ["batch_id", "line"]) == [("b2.csv", 3)]
    assert statuses(p) == [("b1.csv", "published"), ("b2.csv", "abandoned"), ("b2.csv", "published")]


def test_a_key_another_writer_adds_while_a_batch_of_new_keys_is_staged_is_stored_once(
    ws, monkeypatch, tmp_path: Path
):
    """A batch of new keys alone is appended, not merged (strategies/base.py `appends`): the key
    another writer adds after the batch read the target makes its staged commit stale, so the
    batch is staged again, and its row replaces the other writer's instead of joining it."""
    batch(ws, "b1.csv", "1,a,2025-01-01 00:00:00")
    batch(ws, "b2.csv", "2,b,2025-01-02 00:00:00")
    p = ws.pipeline(TABLE)
    # another writer adds b2's key after b2's change set was staged
    result = run_paused(
        p,
        monkeypatch,
        "after_stage@b2.csv",
        tmp_path / "go",
        lambda: insert_by_hand(ws, p, "2, 'z', TIMESTAMP '2025-01-01'"),
    )

    assert result.ok, result.to_dict()
    assert target(p) == [(1, "a", "b1.csv"), (2, "b", "b2.csv")]
    assert statuses(p) == [("b1.csv", "published"), ("b2.csv", "published")]


@pytest.mark.parametrize("table_format", FORMATS)
def test_a_newer_row_another_writer_commits_while_a_batch_is_staged_is_not_overwritten(
    ws, monkeypatch, tmp_path: Path, table_format
):
    """The batch's change set says key 1 changes from b1's row; before its write, another writer
    (another lakefresh process, say: it keeps the record's date in `_lf_updated_at`) stores a
    newer row for key 1, by a MERGE as lakefresh writes (an UPDATE statement on a Delta table
    fails in a session with Iceberg 1.10's extensions, the 3.5 line's: apache/iceberg#15040).
    The write must not put the batch's older row over it: the batch is staged again against the
    table as it now is, and its row is older (O). Iceberg's staged commit has a parent that is
    not the head the change set read, so it is never published; Delta commits at once, so the
    head is checked before the write (the window left is the write's own start)."""
    batch(ws, "b1.csv", "1,a,2025-01-01 00:00:00")
    batch(ws, "b2.csv", "1,b,2025-01-02 00:00:00")
    p = ws.pipeline(TABLE + f"  format: {table_format}\n")
    name = p.backend.qualified(f"{ws.namespace}.t")
    at = "TIMESTAMP '2025-01-05 00:00:00'"
    newer = (
        f"MERGE INTO {name} t USING (SELECT 1 AS id) s ON t.id = s.id "
        f"WHEN MATCHED THEN UPDATE SET v = 'z', ts = {at}, _lf_updated_at = {at}"
    )
    result = run_paused(p, monkeypatch, "after_stage@b2.csv", tmp_path / "go", lambda: p.spark.sql(newer))

    assert result.ok, result.to_dict()
    assert [(b.batch_id, b.counts) for b in result.batches] == [("b1.csv", {"N": 1}), ("b2.csv", {"O": 1})]
    assert rows(p.table("t"), ["id", "v"]) == [(1, "z")]


@pytest.mark.parametrize("table_format", FORMATS)
def test_a_row_another_writer_commits_while_an_unload_is_staged_refuses_the_unload(
    ws, monkeypatch, tmp_path: Path, table_format
):
    """An unload replaces the table with its batches rebuilt aside: a row another writer commits
    meanwhile is in none of them, and the replace would erase it. Iceberg's staged replace names
    a parent that is not the head the rebuild read, and is never published; Delta commits at
    once, so its head is checked before the replace. Either way the unload is refused and the
    row stays."""
    from types import SimpleNamespace

    from lakefresh.errors import CommitConflictError

    batch(ws, "b1.csv", "1,a,2025-01-01 00:00:00")
    batch(ws, "b2.csv", "2,b,2025-01-02 00:00:00")
    p = ws.pipeline(TABLE + f"  format: {table_format}\n")
    assert p.run().ok
    name = p.backend.qualified(f"{ws.namespace}.t")
    insert = f"INSERT INTO {name} VALUES (9, 'z', TIMESTAMP '2025-01-09 00:00:00', NULL, NULL, NULL)"

    def unload() -> Exception | None:
        try:
            p.unload("t", ["b2.csv"])
        except Exception as exc:  # the thread's outcome is the refusal
            return exc
        return None

    refusal = run_paused(
        SimpleNamespace(run=unload), monkeypatch, "after_stage", tmp_path / "go", lambda: p.spark.sql(insert)
    )

    assert isinstance(refusal, CommitConflictError), refusal
    assert "moved while the unload was built" in str(refusal)
    assert target(p) == [(1, "a", "b1.csv"), (2, "b", "b2.csv"), (9, "z", None)]
    assert statuses(p) == [("b1.csv", "published"), ("b2.csv", "published")]


def test_a_batch_another_process_skips_while_a_run_records_is_not_taken_by_the_next_run(
    ws, monkeypatch, tmp_path: Path
):
    """A process keeps its read of the `batches` log for its next run, with the rows it appended
    itself (state/reads.py `appended`), only while its append is the one commit since that read.
    Here another process appends a row meanwhile (the operator skips b3, as `run --skip-batch`
    records it), so the next run reads the log again and leaves b3 alone."""
    batch(ws, "b1.csv", "1,a,2025-01-01 00:00:00")
    p = ws.pipeline(TABLE)
    assert p.run().ok
    batch(ws, "b2.csv", "2,b,2025-01-02 00:00:00")  # takes nothing from b1: no read of the log
    other = ws.pipeline(TABLE, name="other.yml")

    def skip_b3() -> None:
        batch(ws, "b3.csv", "3,c,2025-01-03 00:00:00")
        name = f"{ws.namespace}.t"
        other.control.record_attempt(BatchRow(name, "b3.csv", "skipped-1", "skipped"))

    result = run_paused(p, monkeypatch, "after_publish@b2.csv", tmp_path / "go", skip_b3)
    assert result.ok, result.to_dict()
    assert [b.batch_id for b in result.batches] == ["b2.csv"]

    again = p.run()
    assert again.ok and again.batches == []
    assert target(p) == [(1, "a", "b1.csv"), (2, "b", "b2.csv")]
    assert statuses(p) == [("b1.csv", "published"), ("b2.csv", "published"), ("b3.csv", "skipped")]


@pytest.mark.usefixtures("needs_record_in_commit")
def test_a_process_that_runs_again_reads_no_table_of_the_log_while_only_its_own_appends_came(ws):
    """The other side of the test above: while the log's only commits are this process's own
    appends, its reads of every table stay current (state/reads.py `appended`), so a pipeline run
    again and again in one process (`--continuous`) reads the log for none of its tables, whether
    one table took a batch or none did; and what it keeps equals a fresh read of the log. A new
    process reads the log once for all its tables (`read_ahead`), not once per table."""
    tables = "".join(TABLE.replace("name: t", f"name: {n}").replace("path: in", f"path: {n}") for n in "tuw")
    for n in "tuw":
        ws.write(f"{n}/b1.csv", "id,v,ts\n1,a,2025-01-01 00:00:00\n")
    p = ws.pipeline(tables)
    assert p.run().ok
    with log_reads() as reads:
        assert p.run().ok and reads == []  # the log's first commit was this process's own
        assert ws.pipeline(tables, name="new.yml").run().ok and len(reads) == 1  # a new process
        reads.clear()
        assert p.run().ok  # nothing new
        ws.write("u/b2.csv", "id,v,ts\n1,b,2025-01-02 00:00:00\n2,c,2025-01-02 00:00:00\n")
        took = p.run()
        assert took.ok and [b.batch_id for b in took.batches] == ["b2.csv"]
        assert took.batches[0].counts == {"C": 1, "N": 1}
        assert p.run().ok and reads == []

    fresh = ws.pipeline(tables, name="fresh.yml")  # the same log, read anew
    log_head = p.backend.latest(p.control.batches)
    for n in "tuw":
        name = f"{ws.namespace}.{n}"
        assert p.control._kept[name][0] == log_head  # what `p` kept, not a read of its own now
        assert sorted(p.control.log_rows(name), key=str) == sorted(fresh.control.log_rows(name), key=str)
        assert p.control.published(name) == fresh.control.published(name)
    assert {b: r.effective_count for b, r in p.control.published(f"{ws.namespace}.u").items()} == {
        "b1.csv": 0,
        "b2.csv": 2,
    }

    # another process writes a row of a table that took no batch: the next run reads the log again
    ws.write("w/b2.csv", "id,v,ts\n1,z,2025-01-05 00:00:00\n")
    fresh.control.record_attempt(BatchRow(f"{ws.namespace}.w", "b2.csv", "skip-1", "skipped"))
    with log_reads() as reads:
        result = p.run()
    assert result.ok and result.batches == [] and len(reads) == 1
    assert rows(p.table("w"), ["id", "v"]) == [(1, "a")]


@pytest.fixture(autouse=True)
def _no_faults(monkeypatch):
    monkeypatch.delenv("LAKEFRESH_FAULTS", raising=False)
