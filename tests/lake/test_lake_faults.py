"""Object-store realities: the S3 server goes away while a batch is being written (its process
stopped, every connection dropped) and comes back; the failed batch is taken by the next run,
exactly once, and nothing published is lost."""

from __future__ import annotations

import pytest

from tests.conftest import rows, run_paused

KEYED = (
    "- name: t\n  source: {{kind: files, path: {folder}, format: csv}}\n"
    "  strategy: {{kind: key, keys: [id]}}\n"
)


@pytest.mark.xfail(
    run=False,
    reason="not yet diagnosed: once the S3 server stops mid-batch, the run waits more than five "
    "minutes in the REST catalog's loadTable (the write's parent_rows and the lease's renewal), "
    "with every S3 client, the catalog server's included, set to give up after a short retry",
)
def test_a_batch_cut_off_by_the_server_is_taken_once_by_the_next_run(ws, monkeypatch, tmp_path):
    ws.write("in/b1.csv", "id,v\n1,a\n2,b\n")
    ws.write("in/b2.csv", "id,v\n2,B\n3,c\n")
    p = ws.pipeline(KEYED.format(folder=ws.uri("in")))
    server = ws.lake.s3

    # paused after staging b2 (its change set read), the server stops; the batch's write fails
    cut = run_paused(p, monkeypatch, "after_stage@b2.csv", tmp_path / "go", server.halt)
    monkeypatch.delenv("LAKEFRESH_FAULTS")
    server.start()  # the same port, the same objects
    assert not cut.ok
    assert [b.batch_id for b in cut.batches if b.status == "published"] == ["b1.csv"]

    again = p.run()
    assert again.ok, again.to_dict()
    assert [b.batch_id for b in again.batches] == ["b2.csv"]
    assert rows(p.table("t"), ["id", "v"]) == [(1, "a"), (2, "B"), (3, "c")]
    assert sorted(p.backend.published_batches(f"{ws.namespace}.t")) == ["b1.csv", "b2.csv"]
    published = [r["batch_id"] for r in p.history("t") if r["status"] == "published"]
    assert sorted(published) == ["b1.csv", "b2.csv"]
