"""The strategy contract, one behaviour suite run against every strategy, in
the manner of pyiceberg's catalog behaviour tests: the same batches, the same faults, the same
expectations, whatever the strategy does with a batch.

For every strategy, five batches (rows, a bad row, changes, an empty batch, a new column) are
applied twice from the same files: once cleanly (the reference), once through an exception and a
simulated crash at every fault point (on the default Spark line, for the strategies whose writes
differ most; elsewhere at two points before the publish, see `faults_before_publishing`). The
contract:

- a fault before publishing leaves the target as the reference after the previous batch; a fault
  after publishing leaves it as the reference after this batch; the next run finishes the job;
- at the end the target equals the reference, every batch is in the lineage and logged
  `published` exactly once, with the reference's status counts and effective counts, and a bad
  row is quarantined exactly once;
- a run with nothing new adds no version to any table;
- the empty batch and the new column are taken like any batch (the schema evolves);
- every publish passed the audit's row-count prediction (audit.row_count is on by default).

`crash` raises a BaseException that no handler of lakefresh catches: the durable state is what
`kill -9` leaves, without a new JVM per case (tests/spark/test_exactly_once.py kills real
processes for the key strategy).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyspark
import pytest

from lakefresh.faults import SimulatedCrash
from tests.conftest import rows

pytestmark = pytest.mark.lease

SCHEMA = "{id: int, v: string, ts: timestamp, n: int}"
BATCHES = {
    "b1.csv": "id,v,ts,n\n1,a,2025-01-01 00:00:00,1\n2,b,2025-01-01 00:00:00,2\n",
    "b2.csv": (
        "id,v,ts,n\n1,A,2025-01-02 00:00:00,2\n3,c,2025-01-02 00:00:00,3\nx,bad,2025-01-02 00:00:00,3\n"
    ),
    "b3.csv": "id,v,ts,n\n2,B,2025-01-03 00:00:00,3\n4,d,2025-01-03 00:00:00,4\n",
    "b4.csv": "id,v,ts,n\n",
    "b5.csv": "id,v,ts,n,extra\n5,e,2025-01-05 00:00:00,5,new\n1,A2,2025-01-05 00:00:00,6,new\n",
}
BAD_ROW = ("b2.csv", 4)


@dataclass(frozen=True)
class Kind:
    name: str
    strategy: str
    volatile: tuple[str, ...] = ()  # columns with the wall clock of the run, not compared


KINDS = [
    Kind("append", "{kind: append}"),
    Kind("full", "{kind: full}"),
    Kind("key", "{kind: key, keys: [id], date_column: ts}"),
    # b2 deletes key 1 and b3 key 2: their tombstones, out of sight, follow the batches' commits
    Kind(
        "key_tombstones",
        "{kind: key, keys: [id], date_column: ts, delete: {condition: \"v IN ('A', 'B')\"},"
        " tombstone_retention: 30d}",
    ),
    Kind("scd2", "{kind: scd2, keys: [id], sequence_by: ts}"),
    Kind("ledger", "{kind: ledger, keys: [id], event_time: ts}"),
    Kind("snapshot", "{kind: snapshot, keys: [id], event_time: ts}", volatile=("system_time",)),
    Kind("timestamp", "{kind: timestamp, column: ts}"),
    Kind("sequence", "{kind: sequence, column: n}"),
    Kind("custom", "{kind: custom, delete_when: this.id = input.id}"),
]

PRE_PUBLISH = ("after_read", "after_stage", "after_write", "after_audit", "after_record_staged")
COMMITTED_ON_DELTA = ("after_write", "after_audit", "after_record_staged")  # Delta has no staging


def table_yaml(kind: Kind, folder: str, table_format: str = "iceberg") -> str:
    return (
        f"- name: t\n"
        f"  format: {table_format}\n"
        f"  source: {{kind: files, path: {folder}, format: csv, schema: {SCHEMA}}}\n"
        f"  strategy: {kind.strategy}\n"
    )


def write_batches(ws) -> None:
    for n, (name, text) in enumerate(BATCHES.items()):
        ws.write(f"in/{name}", text, mtime=1_736_000_000 + 3600 * n)  # fixed batch times


def contents(p, kind: Kind, version: int | None = None) -> list[tuple]:
    df = p.backend.read(f"{p.config.defaults.namespace}.t", version)
    columns = [c for c in df.columns if (not c.startswith("_lf_") or c == "_lf_batch_id")]
    columns = [c for c in columns if c not in kind.volatile]
    return rows(df, sorted(columns))


def kept(p) -> list[tuple]:
    """The target's tombstones that count (state/tombstones.py): (id, date, batch)."""
    from lakefresh.state import tombstones

    target = f"{p.config.defaults.namespace}.t"
    if not p.backend.exists(tombstones.table_of(target)):
        return []
    found = p.backend.read(tombstones.table_of(target))
    live = tombstones.counting(p.backend, target, tombstones.commits_of(found))
    return sorted(
        (r["id"], r["_lf_updated_at"], r["_lf_batch_id"])
        for r in found.collect()
        if r["_lf_batch_id"] in live
    )


def log(p) -> list[tuple]:
    return sorted(
        (r["batch_id"], r["status"], dict(r["status_counts"] or {}), r["effective_count"])
        for r in p.history("t")
        if r["status"] == "published"
    )


def second_pipeline(ws, tables: str):
    """The same tables in namespaces of their own (target and control tables)."""
    from lakefresh.api import load_pipeline

    text = (
        ws.pipeline_yaml(tables)
        .replace(f"control_namespace: {ws.control_namespace}", f"control_namespace: {ws.control_namespace}_f")
        .replace(f"namespace: {ws.namespace}", f"namespace: {ws.namespace}_f")
    )
    path = ws.root / "faulted.yml"
    path.write_text(text, encoding="utf-8")
    return load_pipeline(path, spark=ws.spark)


def run_with_fault(p, monkeypatch, spec: str):
    monkeypatch.setenv("LAKEFRESH_FAULTS", spec)
    try:
        return p.run()
    except SimulatedCrash:
        return None
    finally:
        monkeypatch.delenv("LAKEFRESH_FAULTS")


# The default Spark line runs every fault point on Iceberg for the strategies whose writes differ
# most (`EVERY_POINT`: a MERGE with its tombstone table beside it, the multi-statement history
# writes, a whole-table replace): the safety net. Every other case (the other strategies there,
# those on the other Spark line, 3.5 (`OTHER_LINE`), and on Delta Lake, where `key` alone takes every
# point, its control tables on Delta too: tests/spark/test_delta.py, `ON_DELTA`) takes one raise
# after its write (the write is undone) and one crash at the last point before the publish (its
# commit staged and recorded, or on Delta not yet written), besides the faults after the publish.
# The points are checkpoints of the runner, the same code for every strategy, line and format (one
# `Transaction` commits every strategy's change: lakehouse/commit.py); what a strategy, a Spark
# line or a format changes is what its statements and the backend's stage, undo and publish do,
# which those two faults reach for every strategy.
DEFAULT_LINE = int(pyspark.__version__.split(".")[0]) >= 4
EVERY_POINT = ("key_tombstones", "scd2", "snapshot", "full")
# The other Spark line runs it for the strategies that reach each kind of write there: an append,
# a replacement, a MERGE (with a tombstone table beside it), a history's several statements, a
# range replaced through the salted MERGE whose runtime filter 3.5 cannot plan
# (lakehouse/merge.py, `delete_and_insert`) and the equi-join one. `ledger`, `snapshot` and
# `timestamp` write as `append` and `sequence` do; their own statements are the default line's
# and the behaviour tests' (`make test-spark3.5 FULL=1` runs every Spark test on 3.5).
OTHER_LINE = ("append", "full", "key", "key_tombstones", "scd2", "sequence", "custom")
ON_THIS_LINE = KINDS if DEFAULT_LINE else [k for k in KINDS if k.name in OTHER_LINE]


@pytest.mark.parametrize("kind", ON_THIS_LINE, ids=[k.name for k in ON_THIS_LINE])
def test_faults_at_every_point_then_a_rerun_equal_applying_each_batch_once(ws, monkeypatch, kind):
    check_contract(ws, monkeypatch, kind, "iceberg", every_point=DEFAULT_LINE and kind.name in EVERY_POINT)


def faults_before_publishing(table_format: str, every_point: bool) -> list[tuple[str, str]]:
    """(action, point) of the faults before the publish: every one that applies, or a raise at
    the first point after the write and a crash at the last point that applies."""
    applies = [
        (action, point)
        for action in ("raise", "crash")
        for point in PRE_PUBLISH
        # Delta commits at the write: an error after it is undone (RESTORE), a crash is not, and
        # is a crash after the publish (b4's, in check_contract); before the write nothing
        # differs from Iceberg, and one fault per point is enough there
        if not (table_format == "delta" and (action == "crash") == (point in COMMITTED_ON_DELTA))
    ]
    if every_point:
        return applies
    written = PRE_PUBLISH[PRE_PUBLISH.index("after_write") :]
    raised = next(f for f in applies if f[0] == "raise" and f[1] in written)
    crashed = [f for f in applies if f[0] == "crash"][-1]
    return [raised, crashed]


def check_contract(ws, monkeypatch, kind: Kind, table_format: str, every_point: bool = True) -> None:
    """The contract, for one strategy on one table format (tests/spark/test_delta.py: Delta).
    `every_point` False: two faults before the publish (`faults_before_publishing`)."""
    write_batches(ws)
    folder = ws.uri("in")
    ref = ws.pipeline(table_yaml(kind, folder, table_format), name="reference.yml")
    first = ref.run()
    assert first.ok, first.to_dict()
    assert [b.batch_id for b in first.batches] == list(BATCHES)
    versions = ref.backend.published_batches(f"{ws.namespace}.t")
    after = {b: contents(ref, kind, versions[b]) for b in BATCHES}
    after[None] = []
    # the tombstones after each batch: those of it and of the batches before it
    deleted = kept(ref)
    tombs = {b: [t for t in deleted if t[2] <= b] for b in BATCHES}
    if "tombstone_retention" in kind.strategy:
        assert [t[::2] for t in deleted] == [(1, "b2.csv"), (2, "b3.csv")]

    # the same files into a second namespace, through the faults
    faulted = second_pipeline(ws, table_yaml(kind, folder, table_format))

    for action, point in faults_before_publishing(table_format, every_point):
        run_with_fault(faulted, monkeypatch, f"{point}@b2.csv:{action}")
        assert contents(faulted, kind) == after["b1.csv"], (action, point)
        assert kept(faulted) == tombs["b1.csv"], (action, point)
    # b3 and b4 are published in one run, whose record (one commit at the table's end) the crash
    # at b4 prevents: both are left `staged`; the fault at the record itself comes after it
    for spec, applied in (
        ("after_publish@b2.csv:raise", "b2.csv"),
        ("after_publish@b4.csv:crash", "b4.csv"),
        ("after_record@b5.csv:crash", "b5.csv"),
    ):
        run_with_fault(faulted, monkeypatch, spec)
        assert contents(faulted, kind) == after[applied], spec
        assert kept(faulted) == tombs[applied], spec

    final = faulted.run()
    assert final.ok, final.to_dict()
    assert final.batches == []  # every batch was published already; the run only records
    assert contents(faulted, kind) == after["b5.csv"]
    assert kept(faulted) == deleted
    assert sorted(faulted.backend.published_batches(f"{ws.namespace}_f.t")) == list(BATCHES)
    assert log(faulted) == log(ref)
    assert rows(faulted.quarantine("t"), ["batch_id", "line"]) == [BAD_ROW]
    assert "extra" in faulted.table("t").columns

    # nothing new: no version anywhere
    tables = [
        f"{ws.namespace}_f.t",
        f"{ws.control_namespace}_f.batches",
        f"{ws.control_namespace}_f.quarantine",
    ]
    before = ws.version_counts(tables, faulted.backend)
    again = faulted.run()
    assert again.ok and again.batches == []
    assert ws.version_counts(tables, faulted.backend) == before
