"""The run lease on real Spark (state/leases.py): taking it is one compare-and-swap of the `leases`
control table, so of two runs that read it free only one holds it, on Iceberg control tables and
on Delta ones; a held lease stops a run of the same tables before it reads anything; an expired
one is taken over; `status` shows who holds a table. The same with real processes and signals:
tests/e2e/test_lease.py."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from lakefresh.errors import CommitConflictError, LeaseHeld
from lakefresh.lakehouse.failures import is_commit_conflict
from lakefresh.lakehouse.session import parse_schema
from lakefresh.state.leases import LEASES_SCHEMA, Holder, LeaseRow, Leases

pytestmark = pytest.mark.lease

TABLE = """
- name: t
  source: {kind: files, path: "%s", format: csv, schema: {id: int}}
  strategy: {kind: append}
"""
DELTA_CONTROL = "  control_format: delta\n"


def pipeline(ws, control: str = "iceberg"):
    ws.catalog_extra = DELTA_CONTROL if control == "delta" else ""
    ws.write("in/b1.csv", "id\n1\n")
    return ws.pipeline(TABLE % (ws.root / "in"))


@pytest.mark.parametrize("control", ["iceberg", "delta"])
def test_of_two_writers_that_read_the_leases_free_only_the_first_commits(ws, control):
    p = pipeline(ws, control)
    leases = Leases(p.backend, p.config.catalog.control_namespace)
    leases.ensure()
    schema = parse_schema(LEASES_SCHEMA)
    a = Holder("run-a", "host-a", 1, "a.yml", "run")
    b = Holder("run-b", "host-b", 2, "b.yml", "run")
    name = f"{ws.namespace}.t"
    for _ in range(2):  # on the empty table, then on one that holds rows
        marker, _rows = p.backend.read_rows(leases.table)  # what A read: the table free
        leases.take([name], b, 60)  # B reads it free too, and commits first
        now = leases.live()[0].acquired_at
        late = LeaseRow(name, a, now, now, now.replace(year=now.year + 1))
        with pytest.raises(Exception) as refused:  # A's swap, from its read, is refused
            p.backend.replace_rows(leases.table, [late.row()], schema, marker)
        assert isinstance(refused.value, CommitConflictError) or is_commit_conflict(refused.value)
        assert [(r.table_name, r.holder) for r in leases.live()] == [(name, b)]
        with pytest.raises(LeaseHeld, match=f"another run holds {name} since .* started by host-b/pid 2"):
            leases.take([name, f"{ws.namespace}.other"], a, 60)  # all or nothing
        assert [r.table_name for r in leases.live()] == [name]
        leases.release(b)
        assert leases.live() == []


def test_a_held_lease_stops_a_run_before_it_reads_and_an_expired_one_is_taken_over(ws):
    p = pipeline(ws)
    other = ws.pipeline(TABLE % (ws.root / "in"), name="other.yml")  # another pipeline, same target
    name = f"{ws.namespace}.t"
    with p.lease(None, "run"):
        assert p.run().ok  # the pipeline's own lease covers its run
        with pytest.raises(LeaseHeld) as held:
            other.run()
        message = str(held.value)
        assert f"another run holds {name} since " in message
        assert f"started by {socket.gethostname()}/pid " in message and "pipeline.yml" in message
        assert "wait for it with --wait" in message
        assert f"held by {socket.gethostname()}" in next(s for s in other.status() if s.table == "t").lease
        with pytest.raises(LeaseHeld, match="waited 1s"):
            other.run(wait=1)
    assert next(s for s in other.status() if s.table == "t").lease is None  # released

    leases = Leases(p.backend, p.config.catalog.control_namespace)
    killed = Holder("killed", "gone-host", 99, "p.yml", "run")
    leases.take([name], killed, 4.0)  # a run that died holding it: never renewed, never released
    ws.write("in/b2.csv", "id\n2\n")
    with pytest.raises(LeaseHeld, match="gone-host/pid 99"):
        other.run()
    time.sleep(4.2)
    result = other.run()  # expired: taken over
    assert result.ok and [b.status for b in result.batches] == ["published"]
    assert sorted(r.id for r in other.table("t").collect()) == [1, 2]
    assert leases.live() == []


def test_a_waiting_run_goes_on_once_the_holder_releases(ws):
    p = pipeline(ws)
    other = ws.pipeline(TABLE % (ws.root / "in"), name="other.yml")
    released = threading.Event()

    def hold() -> None:
        with p.lease(None, "run"):
            released.wait(60)

    holder = threading.Thread(target=hold)
    holder.start()
    deadline = time.monotonic() + 60
    while not other.leases.live() and time.monotonic() < deadline:
        time.sleep(0.1)
    threading.Timer(3, released.set).start()  # the holder ends in 3 s
    started = time.monotonic()
    result = other.run(wait=60)
    holder.join()
    assert time.monotonic() - started >= 2.5  # it waited for the holder
    assert result.ok and sorted(r.id for r in other.table("t").collect()) == [1]


def test_a_pipeline_that_takes_no_lease_never_touches_the_leases(ws):
    ws.write("in/b1.csv", "id\n1\n")
    p = ws.pipeline(TABLE % (ws.root / "in"), lease=False)  # `run: {lease: false}`
    with pipeline(ws).lease(None, "run"):  # another run holds the table
        assert p.run().ok


def test_a_lease_its_run_could_not_release_is_taken_over_by_the_next_run_of_its_process(ws, monkeypatch):
    p = pipeline(ws)
    release = Leases.release

    def unreachable(self, holder):
        raise OSError("the control tables' store is unreachable")

    monkeypatch.setattr(Leases, "release", unreachable)
    assert p.run().ok  # its lease stays behind, unexpired
    monkeypatch.setattr(Leases, "release", release)
    left = [r["table_name"] for r in p.backend.read_rows(p.leases.table)[1]]
    assert left == [f"{ws.namespace}.t"]
    assert p.leases.live() == []  # to this process, whose run it was, no run holds it
    ws.write("in/b2.csv", "id\n2\n")
    result = p.run()  # not LeaseHeld for two minutes: taken over
    assert result.ok and [b.batch_id for b in result.batches] == ["b2.csv"]
    assert p.backend.read_rows(p.leases.table)[1] == []  # the row left behind went with the take
