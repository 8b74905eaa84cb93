"""An Iceberg table of a hadoop catalog read straight from its files, without pyiceberg: its
newest metadata file (JSON), the current snapshot's manifest list and manifests (Avro, through
fastavro), its Parquet data files and position delete files (pyarrow's Parquet reader, without
its datasets, which import pandas). What lakefresh's reading verbs ask of a small table: its
properties, its snapshots, its live row count and its rows. It reads Iceberg's files, so it speaks
Iceberg's words (snapshots, `snapshot-id`); lakehouse/native.py gives the seam their versions.

This is the quick road of lakehouse/native.py: importing pyiceberg costs more than a whole
`status` may take. It reads what the Iceberg spec (format versions 1 and 2) says a reader must
apply: a manifest entry's status (deleted entries are not live), data sequence numbers inherited
from the manifest list, and position deletes, applied to a data file when their data sequence
number is at least the file's. What it does not read raises :class:`Unread` before any row is
returned (equality deletes, deletion vectors, a data file that is not Parquet, a nested column
whose fields changed since the file was written, a file without field ids), and
lakehouse/native.py reads that table through pyiceberg instead. Columns are matched by field
id, so renamed and added columns read as the current schema names them (an added column is null
in the files written before it).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

    from lakefresh.lakehouse.iceberg.log import SnapshotInfo

FIELD_ID = b"PARQUET:field_id"
_DELETED = 2  # a manifest entry's status: 0 existing, 1 added, 2 deleted
_DATA, _POSITION_DELETES = 0, 1  # a data file's content (2: equality deletes)


class Unread(Exception):
    """Something of this table that this reader does not read: read it through pyiceberg."""


@dataclass(frozen=True)
class DataFile:
    """A live file of the current snapshot."""

    path: str
    content: int
    records: int
    sequence: int  # its data sequence number


class IcebergFiles:
    """One table as one metadata file describes it."""

    def __init__(self, metadata_file: Path) -> None:
        self.path = metadata_file
        self.metadata: dict[str, Any] = json.loads(metadata_file.read_text(encoding="utf-8"))
        self.format_version = int(self.metadata.get("format-version", 1))
        self._files: list[DataFile] | None = None

    @property
    def properties(self) -> dict[str, str]:
        return {str(k): str(v) for k, v in self.metadata.get("properties", {}).items()}

    def current_id(self) -> int | None:
        """The main branch's snapshot (a format-version 1 file may only say `current-snapshot-id`)."""
        main = self.metadata.get("refs", {}).get("main")
        found = main["snapshot-id"] if main else self.metadata.get("current-snapshot-id")
        return None if found is None or int(found) == -1 else int(found)

    def snapshots(self) -> dict[int, SnapshotInfo]:
        """Every retained snapshot, by id."""
        from lakefresh.lakehouse.iceberg.log import SnapshotInfo

        out = {}
        for s in self.metadata.get("snapshots", []):
            summary = {str(k): str(v) for k, v in s.get("summary", {}).items()}
            parent = s.get("parent-snapshot-id")
            out[int(s["snapshot-id"])] = SnapshotInfo(
                int(s["snapshot-id"]),
                None if parent is None else int(parent),
                int(s["timestamp-ms"]),
                summary.get("operation"),
                summary,
            )
        return out

    def count(self) -> int:
        """The live rows: the data files' records less the positions deleted in them (the
        snapshot's summary says so when it has no delete file)."""
        snapshots = self.metadata.get("snapshots", [])
        current = next((s for s in snapshots if s["snapshot-id"] == self.current_id()), None)
        if current is None:
            return 0
        totals = current.get("summary", {})
        if totals.get("total-delete-files") == "0" and "total-records" in totals:
            return int(totals["total-records"])
        files = self._live()
        return sum(f.records for f in files if f.content == _DATA) - sum(
            len(v) for v in self._deleted(files).values()
        )

    def rows(self) -> Iterator[tuple[list[dict[str, Any]], pa.Schema]]:
        """The live rows, per data file, named and ordered as the current schema has them, with
        the Arrow schema their values were read with (which says how each value converts; a
        zone-aware timestamp's value comes as a naive one in UTC)."""
        import pyarrow.parquet as pq

        fields = self.schema()["fields"]
        names = [field["name"] for field in fields]
        files = self._live()
        deleted = self._deleted(files)
        for f in files:
            if f.content != _DATA:
                continue
            data = pq.ParquetFile(_local(f.path)).read()
            by_id = {_field_id(c): c for c in data.schema}
            if None in by_id:  # a file written without field ids: read by the table's name mapping
                raise Unread(f"{f.path}: columns without field ids")
            kept = [(field, by_id[field["id"]]) for field in fields if field["id"] in by_id]
            for field, column in kept:
                if _nested_ids(column.type) != _iceberg_ids(field["type"]):
                    raise Unread(f"{f.path}: the fields of {field['name']!r} changed since it was written")
            data = data.select([c.name for _, c in kept]).rename_columns([n["name"] for n, _ in kept])
            read = without_zones(data).to_pylist() if kept else [{} for _ in range(data.num_rows)]
            gone = deleted.get(f.path, set())
            rows = [r for i, r in enumerate(read) if i not in gone]
            yield [{n: r.get(n) for n in names} for r in rows], data.schema

    def schema(self) -> dict[str, Any]:
        """The current schema, as the metadata file holds it."""
        current = self.metadata.get("current-schema-id")
        if "schemas" not in self.metadata:  # format version 1's only schema
            return dict(self.metadata["schema"])
        return next(s for s in self.metadata["schemas"] if s.get("schema-id") == current)

    def _live(self) -> list[DataFile]:
        """The current snapshot's live data and delete files (read once)."""
        if self._files is not None:
            return self._files
        if self.format_version > 2:
            raise Unread(f"format version {self.format_version}")
        entries = {int(s["snapshot-id"]): s for s in self.metadata.get("snapshots", [])}
        snapshot = entries.get(self.current_id() or -1)
        self._files = []
        if snapshot is None:
            return self._files
        if "manifest-list" not in snapshot:
            raise Unread("a snapshot without a manifest list")
        for manifest in _avro(snapshot["manifest-list"]):
            inherited = int(manifest.get("sequence_number") or 0)
            for entry in _avro(manifest["manifest_path"]):
                if entry["status"] == _DELETED:
                    continue
                data = entry["data_file"]
                content = int(data.get("content") or 0)
                if (
                    content not in (_DATA, _POSITION_DELETES)
                    or data.get("file_format", "").upper() != "PARQUET"
                ):
                    raise Unread(f"{data['file_path']}: content {content}, format {data.get('file_format')}")
                sequence = entry.get("sequence_number")
                self._files.append(
                    DataFile(
                        data["file_path"],
                        content,
                        int(data["record_count"]),
                        inherited if sequence is None else int(sequence),
                    )
                )
        return self._files

    def _deleted(self, files: list[DataFile]) -> dict[str, set[int]]:
        """Per live data file, its positions that position deletes of a data sequence number at
        least its own delete."""
        import pyarrow.parquet as pq

        data = {f.path: f.sequence for f in files if f.content == _DATA}
        out: dict[str, set[int]] = {}
        for f in files:
            if f.content != _POSITION_DELETES:
                continue
            found = pq.ParquetFile(_local(f.path)).read(columns=["file_path", "pos"])
            for path, pos in zip(
                found.column("file_path").to_pylist(), found.column("pos").to_pylist(), strict=True
            ):
                if path in data and data[path] <= f.sequence:
                    out.setdefault(path, set()).add(int(pos))
        return out


def without_zones(data: pa.Table) -> pa.Table:
    """Zone-aware timestamp columns as naive ones in UTC, the same values seen without their
    zone (a view, not a cast: pyarrow's casts import its compute functions, and it converts
    aware values to Python through pandas, each import costing about half a second)."""
    import pyarrow as pa

    for i, field in enumerate(data.schema):
        if pa.types.is_timestamp(field.type) and field.type.tz is not None:
            naive = pa.timestamp(field.type.unit)
            column = pa.chunked_array([c.view(naive) for c in data.column(i).chunks], type=naive)
            data = data.set_column(i, field.with_type(naive), column)
    return data


def _avro(path: str) -> Iterator[dict[str, Any]]:
    import fastavro

    with open(_local(path), "rb") as stream:
        yield from fastavro.reader(stream)  # type: ignore[misc]


def _local(path: str) -> str:
    """A file's path in this machine's file system (`file:/a`, `file:///a` or `/a`)."""
    if path.startswith("file:"):
        return "/" + path.removeprefix("file:").lstrip("/")
    if "://" in path:
        raise Unread(f"{path} is not a local file")
    return path


def _field_id(field: pa.Field) -> int | None:
    found = (field.metadata or {}).get(FIELD_ID)
    return None if found is None else int(found)


def _nested_ids(kind: pa.DataType) -> set[int]:
    """The field ids inside a nested Arrow type (none in a primitive one)."""
    import pyarrow as pa

    if pa.types.is_map(kind):
        children = [kind.key_field, kind.item_field]
    elif pa.types.is_list(kind) or pa.types.is_large_list(kind):
        children = [kind.value_field]
    elif pa.types.is_struct(kind):
        children = list(kind)
    else:
        return set()
    out: set[int] = set()
    for child in children:
        found = _field_id(child)
        if found is not None:
            out.add(found)
        out |= _nested_ids(child.type)
    return out


def _iceberg_ids(kind: Any) -> set[int]:
    """The field ids inside a nested Iceberg type of the schema's JSON (none in a primitive)."""
    if not isinstance(kind, dict):
        return set()
    if kind["type"] == "map":
        return {kind["key-id"], kind["value-id"]} | _iceberg_ids(kind["key"]) | _iceberg_ids(kind["value"])
    if kind["type"] == "list":
        return {kind["element-id"]} | _iceberg_ids(kind["element"])
    out: set[int] = set()
    for field in kind.get("fields", []):
        out |= {field["id"]} | _iceberg_ids(field["type"])
    return out
