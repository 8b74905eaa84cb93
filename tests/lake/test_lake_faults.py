"""Object-store realities, each a failure the network or the store gives a run, through the link
between lakefresh's clients and the S3 server (tests/lake/servers.py, `Link`):

- the store is cut off while a batch is being written: the batch fails, nothing published is
  lost, and the next run takes it, once;
- a dropped connection and a throttled request (`503 Slow Down`) are retried by the clients:
  the run succeeds, every batch taken once;
- an object that appears while a run is under way is left to the next run, whole;
- an upload that never completed (a multipart upload whose writer died) is never read as a batch;
- the files of a failed batch, and files no snapshot references, are gone after `maintain`: the
  store keeps the files the table reads.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

from tests.conftest import CATALOG, rows, run_paused
from tests.lake.servers import ACCESS_KEY, BUCKET, REGION, SECRET_KEY

KEYED = (
    "- name: t\n  source: {{kind: files, path: {folder}, format: csv}}\n"
    "  strategy: {{kind: key, keys: [id]}}\n"
)


def published(p, ws) -> list[str]:
    return sorted(p.backend.published_batches(f"{ws.namespace}.t"))


def test_a_batch_cut_off_from_the_store_is_taken_once_by_the_next_run(ws, monkeypatch, tmp_path):
    ws.write("in/b1.csv", "id,v\n1,a\n2,b\n")
    ws.write("in/b2.csv", "id,v\n2,B\n3,c\n")
    p = ws.pipeline(KEYED.format(folder=ws.uri("in")))
    link = ws.lake.link

    # paused after staging b2 (its change set read), the store goes out of reach: b2's write fails
    try:
        cut = run_paused(p, monkeypatch, "after_stage@b2.csv", tmp_path / "go", link.cut)
    finally:
        link.mend()
    monkeypatch.delenv("LAKEFRESH_FAULTS")
    assert not cut.ok
    assert [b.batch_id for b in cut.batches if b.status == "published"] == ["b1.csv"]

    again = p.run()
    assert again.ok, again.to_dict()
    assert [b.batch_id for b in again.batches] == ["b2.csv"]
    assert rows(p.table("t"), ["id", "v"]) == [(1, "a"), (2, "B"), (3, "c")]
    assert published(p, ws) == ["b1.csv", "b2.csv"]
    history = [r["batch_id"] for r in p.history("t") if r["status"] == "published"]
    assert sorted(history) == ["b1.csv", "b2.csv"]


def test_a_dropped_connection_and_a_throttled_request_are_retried_and_the_batch_is_taken_once(ws):
    ws.write("in/b1.csv", "id,v\n1,a\n2,b\n")
    p = ws.pipeline(KEYED.format(folder=ws.uri("in")))
    link = ws.lake.link
    data = f"/{BUCKET}/warehouse/{ws.namespace}/t/data/"
    link.fail_next("GET", "/in/b1.csv", how="503")  # the batch's read, throttled once
    link.fail_next("PUT", data, how="drop")  # a data file's upload, its connection dropped
    before = link.failed

    result = p.run()
    assert result.ok, result.to_dict()
    assert link.failed - before == 2
    assert rows(p.table("t"), ["id", "v"]) == [(1, "a"), (2, "b")]
    assert published(p, ws) == ["b1.csv"]
    assert [b.batch_id for b in p.run().batches] == []


def test_an_object_that_appears_during_a_run_is_taken_whole_by_the_next_run(ws, monkeypatch, tmp_path):
    ws.write("in/b1.csv", "id,v\n1,a\n")
    p = ws.pipeline(KEYED.format(folder=ws.uri("in")))

    # the folder was listed; b2 lands while b1 is being applied
    def lands() -> None:
        ws.write("in/b2.csv", "id,v\n1,A\n2,b\n")

    first = run_paused(p, monkeypatch, "after_read@b1.csv", tmp_path / "go", lands)
    monkeypatch.delenv("LAKEFRESH_FAULTS")
    assert first.ok, first.to_dict()
    assert [b.batch_id for b in first.batches] == ["b1.csv"]
    assert rows(p.table("t"), ["id", "v"]) == [(1, "a")]

    second = p.run()
    assert [b.batch_id for b in second.batches] == ["b2.csv"]
    assert rows(p.table("t"), ["id", "v"]) == [(1, "A"), (2, "b")]
    assert published(p, ws) == ["b1.csv", "b2.csv"]


UPLOAD_AND_DIE = """
import os, sys
import pyarrow.fs as pafs
endpoint, key = sys.argv[1], sys.argv[2]
fs = pafs.S3FileSystem(access_key={access!r}, secret_key={secret!r}, endpoint_override=endpoint,
                       scheme="http", region={region!r}, force_virtual_addressing=False)
out = fs.open_output_stream(key)
out.write(b"id,v\\n" + b"9,never\\n" * (1500 * 1024))  # over 12 MB: its first parts are sent
out.flush()
os._exit(9)  # the writer dies: the upload is never completed
"""


def upload_and_die(endpoint: str, key: str) -> None:
    """A multipart upload of `key` by a writer that dies before completing it (pyarrow's S3
    client, which sends a large object in parts as it is written)."""
    script = UPLOAD_AND_DIE.format(access=ACCESS_KEY, secret=SECRET_KEY, region=REGION)
    env = {**os.environ, "AWS_REQUEST_CHECKSUM_CALCULATION": "when_required"}
    command = [sys.executable, "-c", script, endpoint, key]
    died = subprocess.run(command, env=env, capture_output=True, timeout=120)
    assert died.returncode == 9, died.stderr.decode(errors="replace")


def test_an_upload_never_completed_is_never_read_as_a_batch(ws):
    ws.write("in/b1.csv", "id,v\n1,a\n")
    prefix = ws.prefix.split("/", 3)[3]
    upload_and_die(ws.lake.endpoint, f"{BUCKET}/{prefix}/in/b2.csv")
    assert ws.lake.s3.objects(f"{prefix}/in/") == [f"{prefix}/in/b1.csv"]  # its parts are stored
    p = ws.pipeline(KEYED.format(folder=ws.uri("in")))

    first = p.run()
    assert [b.batch_id for b in first.batches] == ["b1.csv"]
    ws.write("in/b2.csv", "id,v\n2,b\n")  # uploaded again, whole
    assert [b.batch_id for b in p.run().batches] == ["b2.csv"]
    assert rows(p.table("t"), ["id", "v"]) == [(1, "a"), (2, "b")]


def test_after_maintain_the_store_keeps_only_the_files_the_table_reads(ws, monkeypatch):
    ws.write("in/b1.csv", "id,v\n1,a\n")
    ws.write("in/b2.csv", "id,v\n1,A\n2,b\n")
    p = ws.pipeline(KEYED.format(folder=ws.uri("in")))
    monkeypatch.setenv("LAKEFRESH_FAULTS", "after_write@b2.csv")  # b2's files written, then it fails
    assert not p.run().ok
    monkeypatch.delenv("LAKEFRESH_FAULTS")
    assert p.run().ok
    table = f"{ws.namespace}.t"
    data = f"warehouse/{ws.namespace}/t/data/"
    folder = ws.lake.s3.root / "store" / BUCKET
    (folder / data / "stray-from-a-dead-writer.parquet").write_bytes(b"PAR1 not a table's file")
    # every data object two days old (an object's time is its file's in the server's storage):
    # older than the orphans' age limit, which Iceberg refuses under a day
    old = time.time() - 2 * 86400
    for name in ws.lake.s3.objects(data):
        os.utime(folder / name, (old, old))

    now = datetime.now(UTC)
    done = p.backend.maintain(table, False, now, 1, now - timedelta(days=1, hours=1))
    assert done["removed_orphan_files"] >= 1
    read = {
        r[0].split(f"/{BUCKET}/", 1)[1]
        for r in ws.spark.sql(f"SELECT file_path FROM {CATALOG}.{table}.all_files").collect()
    }
    assert set(ws.lake.s3.objects(data)) == read
    assert rows(p.table("t"), ["id", "v"]) == [(1, "A"), (2, "b")]
