"""Object-store realities: a `files` folder of thousands of objects, which S3 lists 1,000 keys a
page (S3Proxy's limit, as AWS's), is listed whole and in order (the time it took is printed,
never asserted)."""

from __future__ import annotations

import time

from tests.lake.servers import BUCKET

OBJECTS = 2500


def test_a_folder_of_thousands_of_objects_is_listed_across_pages_in_order(ws):
    prefix = ws.prefix.split("/", 3)[3]
    # the objects are made in the server's storage folder (2,500 PUTs through S3A would take
    # a minute); lakefresh lists them through S3, in three pages
    folder = ws.lake.s3.root / "store" / BUCKET / prefix / "many"
    folder.mkdir(parents=True)
    for n in range(OBJECTS):
        (folder / f"b{n:05d}.csv").write_text(f"id,v\n{n},x{n}\n", encoding="utf-8")
    source = f"{{kind: files, path: {ws.uri('many')}, format: csv, schema: {{id: int, v: string}}}}"
    p = ws.pipeline(f"- name: t\n  source: {source}\n  strategy: {{kind: append}}\n")

    began = time.monotonic()
    planned = p.plan().tables[0]
    seconds = time.monotonic() - began
    assert planned.error is None, planned.error
    assert [b.batch_id for b in planned.take] == [f"b{n:05d}.csv" for n in range(OBJECTS)]
    print(f"plan over {OBJECTS} objects: {seconds:.1f} s")
