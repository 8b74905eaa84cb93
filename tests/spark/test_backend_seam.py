"""The table-format seam's behaviour suite: every method of `TableBackend` (lakehouse/backend.py),
one behaviour at a time, on Iceberg and on Delta, through the backends themselves (in the manner
of pyiceberg's catalog tests: one module, every implementation). tests/unit/test_backend_seam.py
checks the members' signatures; this one checks what they do. Where the formats differ by design
(Iceberg stages a commit, Delta commits at once and undoes by restoring), the test asks the
backend which it is, and checks that behaviour.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from lakefresh.columns import CHANGE_TYPE_COLUMN
from lakefresh.errors import CommitConflictError, TakenError
from lakefresh.lakehouse.backend import Layout, MergeClauses
from lakefresh.lakehouse.delta import DeltaBackend
from lakefresh.lakehouse.iceberg import IcebergBackend
from tests.conftest import CATALOG, rows

SCHEMA = "id int, v string"


@pytest.fixture(params=["iceberg", "delta"])
def seam(request, ws):
    """A backend of the format, and the name of a table it does not have yet."""
    if request.param == "iceberg":
        backend = IcebergBackend(ws.spark, CATALOG)
    else:
        backend = DeltaBackend(ws.spark, str(ws.warehouse / "delta"))
    return backend, f"{ws.namespace}.t"


def frame(ws, *data):
    return ws.spark.createDataFrame(list(data), SCHEMA)


def made(ws, backend, name, layout: Layout | None = None) -> None:
    backend.create(name, frame(ws).schema, layout or Layout(write_mode="copy-on-write"))


def load(backend, name, batch_id, df, properties=None) -> int:
    """One batch appended, staged and published; its commit's id."""
    return backend.publish(backend.stage(name, batch_id, lambda: backend.append(name, df), properties))


def test_a_table_is_made_with_its_layout_evolved_and_dropped(ws, seam):
    backend, name = seam
    assert not backend.exists(name)
    made(ws, backend, name, Layout(write_mode="copy-on-write", properties={"lakefresh.owner": "x"}))
    assert backend.exists(name) and name.split(".")[1] in backend.qualified(name)
    assert [f.name for f in backend.schema(name).fields] == ["id", "v"]
    assert backend.properties(name)["lakefresh.owner"] == "x"
    backend.set_properties(name, {"lakefresh.owner": "y"})
    assert backend.properties(name)["lakefresh.owner"] == "y"

    assert backend.lay_out(name, Layout(write_mode="copy-on-write")) == []  # as it is
    assert backend.lay_out(name, Layout(write_mode="merge-on-read")) == ["write_mode"]
    assert backend.lay_out(name, Layout(write_mode="merge-on-read")) == []
    assert backend.lay_out(name, Layout()) == []  # no mode: the table keeps its own

    wider = ws.spark.createDataFrame([("a", 1, 2.5)], "v string, id int, extra double")
    aligned = backend.align(name, wider)
    assert aligned.columns == ["id", "v", "extra"]  # the table's order, the new column added
    assert [f.name for f in backend.schema(name).fields] == ["id", "v", "extra"]
    narrower = backend.align(name, ws.spark.createDataFrame([(2,)], "id int"))
    assert rows(narrower, ["id", "v", "extra"]) == [(2, None, None)]

    backend.drop(name)
    assert not backend.exists(name)


def test_a_table_another_writer_made_is_taken_over_and_takes_staged_batches(ws, seam):
    backend, name = seam
    if isinstance(backend, IcebergBackend):  # made as another tool makes it: plain DDL
        ws.spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{ws.namespace}")
        ws.spark.sql(f"CREATE TABLE {backend.qualified(name)} (id int, v string) USING iceberg")
    else:
        frame(ws).write.format("delta").save(backend.location(name))
    backend.take_over(name, Layout(write_mode="merge-on-read", properties={"lakefresh.owner": "x"}))
    assert backend.properties(name)["lakefresh.owner"] == "x"
    assert backend.lay_out(name, Layout(write_mode="merge-on-read")) == []  # as taken over
    staged = backend.stage(name, "b1", lambda: backend.append(name, frame(ws, (1, "a"))))
    first = backend.publish(staged)
    assert backend.published_batches(name) == {"b1": first}
    assert rows(backend.read(name)) == [(1, "a")]


def test_a_staged_batch_is_seen_once_published_and_the_lineage_says_which_batches_it_holds(ws, seam):
    backend, name = seam
    made(ws, backend, name)
    assert backend.head(name) is None  # no row yet (Delta's creation is a commit: `latest` moves)
    assert backend.published_batches(name) == {}
    staged = backend.stage(name, "b1", lambda: backend.append(name, frame(ws, (1, "a"), (2, "b"))))
    assert (staged.table, staged.batch_id, staged.carried()) == (name, "b1", ("b1",))
    assert staged.live_records == 2 and staged.files_written >= 1 and staged.bytes_written > 0
    if not backend.commits_at_once(name):
        assert backend.read(name).count() == 0  # staged: no reader sees it yet
    first = backend.publish(staged)
    assert backend.head(name) == backend.latest(name) == first
    assert backend.published_batches(name) == {"b1": first}
    assert backend.live_records(name, first) == 2
    assert backend.version_state(name, first) == "current-lineage"
    assert isinstance(backend.committed_at(name, first), datetime)

    second = load(backend, name, "b2", frame(ws, (3, "c")))
    assert list(backend.published_batches(name).items()) == [("b2", second), ("b1", first)]  # newest first
    assert backend.published_batches(name, since=first) == {"b2": second}
    assert [(c.version, c.batch_id) for c in backend.commits_after(name, first)] == [(second, "b2")]
    assert [c.batch_id for c in backend.commits_after(name, None, limit=1)] == ["b2"]
    assert backend.follows(name, first) == second  # the one commit since `first`
    assert {first, second} <= backend.lineage(name).ancestors
    assert rows(backend.read(name, first)) == [(1, "a"), (2, "b")]  # as of a version
    assert rows(backend.read(name)) == [(1, "a"), (2, "b"), (3, "c")]


def test_a_publish_is_refused_when_another_run_published_its_batch_or_the_table_moved(ws, seam):
    backend, name = seam
    made(ws, backend, name)
    load(backend, name, "b1", frame(ws, (1, "a")))
    mine = backend.stage(name, "b2", lambda: backend.append(name, frame(ws, (2, "b"))))
    load(backend, name, "b2", frame(ws, (2, "b")))  # an overlapping run publishes b2 first
    with pytest.raises(TakenError):
        backend.publish(mine)
    if backend.commits_at_once(name):
        return  # Delta: a write is its commit; the publish's compare-and-swap is Iceberg's
    late = backend.stage(name, "b3", lambda: backend.append(name, frame(ws, (3, "c"))))
    load(backend, name, "b4", frame(ws, (4, "d")))  # another writer's commit lands first
    with pytest.raises(CommitConflictError):
        backend.publish(late)
    assert sorted(backend.published_batches(name)) == ["b1", "b2", "b4"]


def test_an_attempt_that_failed_is_undone_and_a_rollback_takes_batches_out(ws, seam):
    backend, name = seam
    made(ws, backend, name)
    first = load(backend, name, "b1", frame(ws, (1, "a")))
    head = backend.head(name)
    backend.stage(name, "b2", lambda: backend.append(name, frame(ws, (2, "b"))))  # never published
    backend.undo_since(name, head, "b2")
    assert rows(backend.read(name)) == [(1, "a")]
    assert backend.published_batches(name) == {"b1": first}

    second = load(backend, name, "b3", frame(ws, (3, "c")))
    backend.roll_back_to(name, first)
    assert rows(backend.read(name)) == [(1, "a")]
    assert backend.published_batches(name) == {"b1": first}
    assert second not in backend.lineage(name).ancestors


def test_commit_properties_travel_with_a_batch_and_with_a_commit_of_no_batch(ws, seam):
    backend, name = seam
    made(ws, backend, name)
    first = load(backend, name, "b1", frame(ws, (1, "a")), {"lakefresh.note": "first"})
    if backend.carries_commit_properties(name):
        assert backend.commit_properties(name, first)["lakefresh.note"] == "first"
    backend.with_properties(
        name, {"lakefresh.verb": "repair"}, lambda: backend.append(name, frame(ws, (2, "b")))
    )
    [commit] = backend.commits_after(name, first)
    assert commit.batch_id is None
    assert backend.commit_properties(name, commit.version)["lakefresh.verb"] == "repair"


def test_rows_are_merged_updated_replaced_and_deleted_then_appended_in_one_commit(ws, seam):
    backend, name = seam
    made(ws, backend, name)
    backend.append(name, frame(ws, (1, "a"), (2, "b")))
    change = ws.spark.createDataFrame([(2, "B", "U"), (3, "c", "I")], "id int, v string, _lf_status string")
    clauses = MergeClauses(
        keys=["id"], update_columns=["v"], insert_columns=["id", "v"], update_when="s._lf_status = 'U'"
    )
    backend.merge(name, change, clauses)
    assert rows(backend.read(name)) == [(1, "a"), (2, "B"), (3, "c")]
    backend.update(name, {"v": "'z'"}, "id = 1")
    assert rows(backend.read(name)) == [(1, "z"), (2, "B"), (3, "c")]
    matches = frame(ws, (2, "x"))
    backend.delete_and_append(name, frame(ws, (4, "d")), "this.id = input.id", matches, 1)
    assert rows(backend.read(name)) == [(1, "z"), (3, "c"), (4, "d")]
    backend.replace(name, frame(ws, (9, "n")))
    assert rows(backend.read(name)) == [(9, "n")]


def test_a_new_version_of_the_table_replaces_its_schema_in_one_commit_that_carries_its_batch(ws, seam):
    backend, name = seam
    made(ws, backend, name)
    load(backend, name, "b1", frame(ws, (1, "a")))
    wide = ws.spark.createDataFrame([(1, "a", 10)], "id int, v string, n bigint")
    version = backend.replace_table(name, wide, "refresh-1", [])
    assert [f.name for f in backend.schema(name).fields] == ["id", "v", "n"]
    assert rows(backend.read(name)) == [(1, "a", 10)]
    assert backend.head(name) == version
    assert backend.commits_after(name, None, limit=1)[0].batch_id == "refresh-1"


def test_a_control_table_s_rows_are_appended_read_and_swapped_only_from_the_state_they_were_read_at(ws, seam):
    backend, name = seam
    backend.create(
        name, frame(ws).schema, Layout(properties=backend.log_table_properties()), staged_commits=False
    )
    schema = backend.schema(name)
    backend.append_rows(name, [{"id": 1, "v": "a"}, {"id": 2}], schema)
    marker, found = backend.read_rows(name)
    assert sorted((r["id"], r["v"]) for r in found) == [(1, "a"), (2, None)]
    backend.replace_rows(name, [{"id": 3, "v": "c"}], schema, marker)
    assert [(r["id"], r["v"]) for r in backend.read_rows(name)[1]] == [(3, "c")]
    with pytest.raises(CommitConflictError):  # read at `marker`, written since: a conflict
        backend.replace_rows(name, [{"id": 4, "v": "d"}], schema, marker)
    assert [(r["id"], r["v"]) for r in backend.read_rows(name)[1]] == [(3, "c")]


def test_the_changes_between_two_commits_are_inserts_deletes_and_updates_of_a_key(ws, seam):
    backend, name = seam
    made(ws, backend, name)
    first = load(backend, name, "b1", frame(ws, (1, "a"), (2, "b")))
    clauses = MergeClauses(keys=["id"], update_columns=["v"], insert_columns=["id", "v"])
    change = ws.spark.createDataFrame([(2, "B"), (3, "c")], SCHEMA)
    second = backend.publish(backend.stage(name, "b2", lambda: backend.merge(name, change, clauses)))
    seen = backend.changes(name, first, second, ["id"])
    kinds = sorted((r["id"], r["v"], r[CHANGE_TYPE_COLUMN]) for r in seen.collect())
    assert kinds == [(2, "B", "UPDATE_AFTER"), (2, "b", "UPDATE_BEFORE"), (3, "c", "INSERT")]
    assert backend.changes(name, None, first, ["id"]).count() == 2  # from its first commit


def test_upkeep_counts_files_and_deletes_compacts_and_expires(ws, seam):
    backend, name = seam
    made(ws, backend, name, Layout(write_mode="merge-on-read"))
    load(backend, name, "b0", frame(ws, (0, "x"), (1, "x"), (2, "x")).coalesce(1))  # one file
    load(backend, name, "b1", frame(ws, (3, "x")))
    assert backend.file_count(name) == 2
    ws.spark.sql(f"DELETE FROM {backend.qualified(name)} WHERE id = 0")  # merge-on-read: deletes
    assert backend.deletes(name).rows == 1  # ... that readers apply, the file kept
    done = backend.maintain(name, True, datetime.now(), 1, None)
    assert done["rewritten_data_files"] >= 1
    assert backend.deletes(name).rows == 0
    assert rows(backend.read(name)) == [(1, "x"), (2, "x"), (3, "x")]
    backend.compact(name, 1)
    assert backend.file_count(name) == 1
    assert backend.broadcast_rows() > 0
