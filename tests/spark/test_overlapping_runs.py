"""Two runs of one table that overlap (a scheduler starts the next run while the previous one is
still going): a batch is never applied twice, whatever the interleaving.

The race of a scheduler's overlap, made exact with `pause` faults (lakefresh/faults.py): run A
lists b1 alone and stops after reading it; b2 and b3 arrive; run B lists b1..b3 and stops after
reading b1 (in a group of the backlog, or alone); A publishes b1; then B goes on. B must notice
that the target moved under what it read and that b1 is in it already: it stages again or stops
naming the batch, and never publishes b1 a second time. A later run takes what B left.

Given those batches, the target equals the one a single clean run builds from them, its lineage
names every batch once, and the `batches` log holds every batch once as `published`; for every
kind of write on the one-batch path (`WRITES`) and every strategy that folds a backlog into one
commit on the group path, on Iceberg; on Delta, for `key` on both paths (tests/spark/test_delta.py).

The runs take no lease (`run: {lease: false}`): with it, B would stop before reading anything
(tests/spark/test_leases.py). This is the guarantee that holds without it, or when a run's lease
expired while it was stalled and another run took the table over.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from lakefresh.run import backlog
from lakefresh.strategies import make_strategy
from tests.spark import test_contract_strategies as contract

pytestmark = pytest.mark.lease

BATCHES = {
    "b0.csv": "id,v,ts,n\n1,a,2025-01-01 00:00:00,1\n2,b,2025-01-01 00:00:00,2\n",
    "b1.csv": "id,v,ts,n\n1,A,2025-01-02 00:00:00,2\n3,c,2025-01-02 00:00:00,3\n",
    "b2.csv": "id,v,ts,n\n2,B,2025-01-03 00:00:00,3\n4,d,2025-01-03 00:00:00,4\n",
    "b3.csv": "id,v,ts,n\n5,e,2025-01-04 00:00:00,5\n",
}
ONE_BY_ONE = "backlog: {max_batches: 1}\n"
PATHS = {"group": "", "single": ONE_BY_ONE}
GROUPED = ("append", "key")  # the strategies with a group path (run/backlog.py; checked below)
# one strategy per kind of write the race reaches: the race is caught by the runner (the staged
# commit's parent, run/steps.py and lakehouse/commit.py), whatever the strategy wrote; in it,
# `ledger`, `snapshot` and `timestamp` append as `append` does, `custom` deletes and inserts in one
# MERGE as `sequence` does
WRITES = ("append", "full", "key", "key_tombstones", "scd2", "sequence")
CASES = [
    (k, path)
    for k in contract.KINDS
    if k.name in WRITES
    for path in PATHS
    if path == "single" or k.name in GROUPED
]
REFERENCE: dict[str, list[tuple]] = {}  # a strategy's target after one clean run of the batches


def write(ws, folder: str, names: list[str]) -> None:
    for name in names:
        n = list(BATCHES).index(name)
        ws.write(f"{folder}/{name}", BATCHES[name], mtime=1_736_000_000 + 3600 * n)  # fixed batch times


def reference(ws, kind: contract.Kind) -> list[tuple]:
    if kind.name not in REFERENCE:
        write(ws, "ref", list(BATCHES))
        p = contract.second_pipeline(ws, contract.table_yaml(kind, str(ws.root / "ref")))
        assert p.run().ok
        REFERENCE[kind.name] = contract.contents(p, kind)
    return REFERENCE[kind.name]


def unleased(ws, yaml: str, path: str):
    """A pipeline of the table on this path that takes no lease: the race itself."""
    return ws.pipeline(yaml, defaults=PATHS[path], lease=False)


def paused(go: Path) -> None:
    deadline = time.monotonic() + 240
    while not Path(f"{go}.paused").exists():
        assert time.monotonic() < deadline, f"no run reached the pause {go.name}"
        time.sleep(0.05)


def in_thread(p, results: dict[str, object], name: str) -> threading.Thread:
    thread = threading.Thread(target=lambda: results.setdefault(name, p.run()))
    thread.start()
    return thread


@pytest.mark.parametrize(("kind", "path"), CASES, ids=[f"{k.name}-{p}" for k, p in CASES])
def test_overlapping_runs_apply_every_batch_once(ws, monkeypatch, kind, path):
    check_overlap(ws, monkeypatch, kind, "iceberg", path)


def check_overlap(ws, monkeypatch, kind: contract.Kind, table_format: str, path: str) -> None:
    """The race above on a table of this format, on this path (tests/spark/test_delta.py runs
    it on Delta)."""
    expected = reference(ws, kind)
    yaml = contract.table_yaml(kind, str(ws.root / "in"), table_format)
    first, second = unleased(ws, yaml, path), unleased(ws, yaml, path)  # no lease keeps B out
    write(ws, "in", ["b0.csv"])
    assert first.run().ok
    table = first.config.tables[0]
    grouped = backlog.why_not(first.config, table, make_strategy(table.strategy)) is None
    assert grouped == (path == "group"), backlog.why_not(first.config, table, make_strategy(table.strategy))
    go_a, go_b = ws.root / "go-a", ws.root / "go-b"
    results: dict[str, object] = {}

    write(ws, "in", ["b1.csv"])
    monkeypatch.setenv("LAKEFRESH_FAULTS", f"after_read@b1.csv:pause={go_a}")
    a = in_thread(first, results, "a")  # lists b1 alone, stops after reading it
    paused(go_a)
    write(ws, "in", ["b2.csv", "b3.csv"])
    monkeypatch.setenv("LAKEFRESH_FAULTS", f"after_read@b1.csv:pause={go_b}")
    b = in_thread(second, results, "b")  # lists b1..b3, stops after reading b1
    paused(go_b)
    go_a.touch()
    a.join(300)  # A publishes b1
    go_b.touch()
    b.join(300)  # then B goes on
    monkeypatch.delenv("LAKEFRESH_FAULTS")

    assert results["a"].ok, results["a"].tables[0].error
    if not results["b"].ok:  # it stopped, naming the batch another run published
        assert "published by another run" in results["b"].tables[0].error, results["b"].tables[0].error
    assert first.run().ok  # takes what B left
    assert contract.contents(first, kind) == expected
    name = f"{ws.namespace}.t"
    lineage = [b for c in reversed(first.backend.commits_after(name, None)) for b in c.batches]
    assert lineage == list(BATCHES)
    published = sorted(r["batch_id"] for r in first.history("t") if r["status"] == "published")
    assert published == list(BATCHES)


@pytest.mark.parametrize("path", list(PATHS))
def test_a_batch_another_run_publishes_right_after_this_run_assessed_the_table_is_not_taken_twice(
    ws, monkeypatch, path
):
    """Run B assesses the table (b1 is not in it), then run A publishes b1 before B goes on: B
    must compare what it stages against the head its assessment read, not the head it finds
    after, and so refuse b1 instead of appending it a second time."""
    from lakefresh.run.bookkeeping import Bookkeeping

    append = next(k for k in contract.KINDS if k.name == "append")
    yaml = contract.table_yaml(append, str(ws.root / "in"), "iceberg")
    first, second = unleased(ws, yaml, path), unleased(ws, yaml, path)
    write(ws, "in", ["b0.csv"])
    assert first.run().ok
    write(ws, "in", ["b1.csv"])
    assess = Bookkeeping.assess

    def assessed_then_another_run(self, name, table):
        found = assess(self, name, table)
        monkeypatch.setattr(Bookkeeping, "assess", assess)  # once: the other run assesses as usual
        assert [b.batch_id for b in first.run().batches] == ["b1.csv"]
        return found

    monkeypatch.setattr(Bookkeeping, "assess", assessed_then_another_run)
    late = second.run()
    refused = "published by another run" in (late.tables[0].error or "")
    assert refused or [b.batch_id for b in late.batches] == [], late.to_dict()
    assert first.table("t").count() == 4  # b0's two rows and b1's two, once
    name = f"{ws.namespace}.t"
    assert [b for c in reversed(first.backend.commits_after(name, None)) for b in c.batches] == [
        "b0.csv",
        "b1.csv",
    ]
    published = sorted(r["batch_id"] for r in first.history("t") if r["status"] == "published")
    assert published == ["b0.csv", "b1.csv"]
