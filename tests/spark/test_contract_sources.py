"""The source contract, one behaviour suite run against every source kind, in
the manner of dlt's destination configs: each kind knows how to put batches into its source and
how to add one more; the expectations are the same for all.

- listing is stable: two listings (and a listing by a restarted process) give the same batches,
  with the same ids, positions and order;
- a listed batch reads the same rows twice;
- positions survive a restart: after a crash right after the first batch was published, a new
  process takes exactly the batches after it, in order; a batch added later is taken once; then
  nothing.

`table_snapshot` with a `query` lists a new batch on every run by design and is not in the suite.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import pytest

from lakefresh.faults import SimulatedCrash
from lakefresh.sources import SourceContext, make_source
from lakefresh.synapse_export import SynapseExport, entity_attributes
from tests.conftest import CATALOG, rows

pytestmark = pytest.mark.lease


@dataclass(frozen=True)
class SourceKind:
    name: str
    setup: Callable  # (ws, request) -> table YAML, with two or more batches in the source
    add: Callable  # (ws, request) -> None: one more batch


def files_setup(ws, request):
    ws.write("in/b1.csv", "id,v\n1,a\n2,b\n", mtime=1_736_000_000)
    ws.write("in/b2.csv", "id,v\n2,B\n3,c\n", mtime=1_736_000_100)
    return "source: {kind: files, path: in, format: csv, schema: {id: int, v: string}}"


def files_add(ws, request):
    ws.write("in/b0_late.csv", "id,v\n4,d\n", mtime=1_736_000_200)  # an earlier name, arriving late


def folders_setup(ws, request):
    for n, text in ((1, "id,v\n1,a\n"), (2, "id,v\n2,b\n")):
        ws.write(f"in/d{n}/part-0.csv", text)
        ws.write(f"in/d{n}/_SUCCESS", "")
    ws.write("in/d9/part-0.csv", "id,v\n9,still being written\n")  # no marker: not a batch yet
    return "source: {kind: files, path: in, format: csv, layout: folder, schema: {id: int, v: string}}"


def folders_add(ws, request):
    ws.write("in/d9/_SUCCESS", "")


SYNAPSE = {"account": entity_attributes(("name", "string"))}
FOLDERS = [f"2025-03-01T{h:02d}.00.00Z" for h in (10, 11, 12, 13)]


def synapse_folder(ws, n: int) -> None:
    at = datetime(2025, 3, 1, 10 + n, 30)
    row = {"Id": f"k{n}", "SinkCreatedOn": at, "SinkModifiedOn": at, "name": f"n{n}", "versionnumber": n}
    export = SynapseExport(ws.folder("export"))
    export.write_folder(FOLDERS[n], SYNAPSE, {"account": {"2025.csv": [row]}})
    export.set_current(FOLDERS[n + 1])


def synapse_setup(ws, request):
    synapse_folder(ws, 0)
    synapse_folder(ws, 1)
    ws.publish("export")
    export = ws.uri("export")
    return f"source: {{kind: synapse_link, path: {export}, entity: account, look_back_interval: 30d}}"


def synapse_add(ws, request):
    synapse_folder(ws, 2)
    ws.publish("export")


def upstream(ws, request) -> str:
    spark = request.getfixturevalue("spark")
    name = f"{CATALOG}.{ws.namespace}.up"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{ws.namespace}")
    spark.sql(f"CREATE TABLE IF NOT EXISTS {name} (id int, v string) USING iceberg")
    return name


def changes_setup(ws, request):
    spark = request.getfixturevalue("spark")
    up = upstream(ws, request)
    spark.sql(f"INSERT INTO {up} VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT INTO {up} VALUES (3, 'c')")
    return f"source: {{kind: table_changes, table: {ws.namespace}.up, keys: [id]}}"


def snapshot_setup(ws, request):
    spark = request.getfixturevalue("spark")
    up = upstream(ws, request)
    spark.sql(f"INSERT INTO {up} VALUES (1, 'a'), (2, 'b')")
    return f"source: {{kind: table_snapshot, table: {ws.namespace}.up}}"


def upstream_add(ws, request):
    request.getfixturevalue("spark").sql(f"INSERT INTO {CATALOG}.{ws.namespace}.up VALUES (4, 'd')")


def jdbc_setup(ws, request):
    postgres = request.getfixturevalue("postgres")
    table = f"contract_{ws.namespace}"
    postgres.sql(
        f"CREATE TABLE {table} (id int, v text, m timestamp); "
        f"INSERT INTO {table} VALUES (1, 'a', '2025-01-01 10:00'), (2, 'b', '2025-01-01 10:05')"
    )
    return (
        f"source: {{kind: jdbc, url: '{postgres.url}', user: lakefresh, "
        f"query: 'SELECT id, v, m FROM {table} WHERE m > {{{{ watermark }}}}', "
        "watermark_column: m, initial_watermark: '1970-01-01 00:00:00'}"
    )


def jdbc_add(ws, request):
    postgres = request.getfixturevalue("postgres")
    postgres.sql(f"INSERT INTO contract_{ws.namespace} VALUES (3, 'c', '2025-01-01 11:00')")


KINDS = [
    SourceKind("files", files_setup, files_add),
    SourceKind("files-folders", folders_setup, folders_add),
    SourceKind("synapse_link", synapse_setup, synapse_add),
    SourceKind("table_changes", changes_setup, upstream_add),
    SourceKind("table_snapshot", snapshot_setup, upstream_add),
    SourceKind("jdbc", jdbc_setup, jdbc_add),
]


def table_yaml(source: str) -> str:
    keys = "[Id]" if "synapse" in source else "[id]"
    return f"- name: t\n  {source}\n  strategy: {{kind: key, keys: {keys}}}\n"


def source_of(p):
    """The table's source as a run makes it: a new object, as in a new process."""
    table = p.config.tables[0]
    return make_source(table.source, SourceContext.of(p.config, p.backend, str(p.base_dir), table))


def listing(p) -> list[tuple[str, str]]:
    return [(r.batch_id, r.position) for r in source_of(p).list_batches()]


@pytest.fixture(params=KINDS, ids=[k.name for k in KINDS])
def kind(request):
    return request.param


def test_listing_is_stable_and_a_listed_batch_reads_the_same_rows_twice(ws, kind, request):
    check_listing(ws, kind, request)


def test_positions_survive_a_restart(ws, kind, monkeypatch, request):
    check_restart(ws, kind, monkeypatch, request)


def check_listing(ws, kind: SourceKind, request) -> None:
    """Two listings give the same batches; a listed batch reads the same rows twice."""
    p = ws.pipeline(table_yaml(kind.setup(ws, request)))
    first = listing(p)
    assert first, "the source lists its batches"
    assert listing(p) == first
    ref = source_of(p).list_batches()[0]
    once = rows(source_of(p).read(ref, None).rows)
    assert once
    assert rows(source_of(p).read(ref, None).rows) == once


def check_restart(ws, kind: SourceKind, monkeypatch, request) -> None:
    """After a crash right after the first batch's publish, a new process takes exactly the
    batches after it, in order; a batch added later is taken once; then nothing."""
    yaml = table_yaml(kind.setup(ws, request))
    p = ws.pipeline(yaml)
    listed = [batch_id for batch_id, _ in listing(p)]
    monkeypatch.setenv("LAKEFRESH_FAULTS", f"after_publish@{listed[0]}:crash")
    with pytest.raises(SimulatedCrash):
        p.run()
    monkeypatch.delenv("LAKEFRESH_FAULTS")

    restarted = ws.pipeline(yaml, name="restarted.yml").run()
    assert restarted.ok, restarted.to_dict()
    assert [b.batch_id for b in restarted.batches] == listed[1:]
    assert restarted.tables[0].recovered == [listed[0]]

    kind.add(ws, request)
    later = ws.pipeline(yaml, name="later.yml").run()
    assert later.ok, later.to_dict()
    assert len(later.batches) == 1 and later.batches[0].batch_id not in listed
    assert ws.pipeline(yaml, name="last.yml").run().batches == []
