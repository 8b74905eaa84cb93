"""The columns a waiting batch would bring, told without Spark (`plan` without a JVM), where
Python reads them cheaply and exactly as the run's reader names them:

- a CSV file's header (its first line only, decoded and checked by the run's own code:
  `text.scan`, `files.csv_header`); a batch of files with different headers unions them by name
  as the run does (the first header's columns, then each new one in order);
- JSON Lines: every line's top-level keys, sorted by name, as Spark's inference orders them;
- a Parquet file's schema (its footer);
- a Synapse Link folder's model.json, checked against its files as the run checks it
  (`synapse_link.folder_entity`);
- a transform's columns, when its SQL is a plain `SELECT` of `batch` (no join, no grouping, no
  set operation) that names only the batch's columns, and whose every item is `*`, a column of
  the batch or an expression named by `AS`: what else it makes is named by Spark only, and is
  not told here.

A batch's :class:`Shape` is its columns in order, each with its type where it is known before
reading (declared in the source's `schema`, a Parquet file's own, a model.json's, else the
target's column's); a CSV or JSON column the target lacks and the source does not declare is
typed by Spark's inference over the data, so two batches of the same columns may still read as
different types. What this module does not model exactly (JSON that Spark would
refuse or read otherwise, the files of one Parquet batch with different schemas) raises
NotNative: the plan takes the Spark road.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lakefresh.columns import PROVENANCE_COLUMNS
from lakefresh.config.sources import FilesSourceConfig, SynapseLinkSourceConfig
from lakefresh.lakehouse.native import NotNative
from lakefresh.sources.files import csv_header, file_name
from lakefresh.sources.sampling import spark_type, text_lines
from lakefresh.sources.synapse_link import folder_entity
from lakefresh.sources.text import scan

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from lakefresh.config.models import TableConfig
    from lakefresh.lakehouse.storage import Storage
    from lakefresh.sources.base import BatchRef


@dataclass(frozen=True)
class Shape:
    """A batch's columns as its read gives them, in order, each with its type (Spark's name)
    where it is known before reading (None: Spark infers it from the data)."""

    columns: tuple[str, ...]
    types: tuple[str | None, ...]

    @property
    def inferred(self) -> bool:
        """Whether Spark types some of its columns from the data."""
        return None in self.types

    def typed_by(self, target: dict[str, str]) -> Shape:
        """The shape as the run reads it into a target of these columns (name -> its type, as
        its format writes it): a CSV or JSON column it does not declare takes the target's
        type where the target has the column (files.py `_column_types`)."""
        by_name = {c.lower(): t for c, t in target.items()}
        typed = (
            f"the target's {by_name[c.lower()]}" if t is None and c.lower() in by_name else t
            for c, t in zip(self.columns, self.types, strict=True)
        )
        return Shape(self.columns, tuple(typed))


def batch_shape(table: TableConfig, folder: str, storage: Storage, ref: BatchRef) -> Shape:
    """The columns batch `ref` of the table's source (`folder`: where it is, resolved) reads as;
    NotNative for a source whose batches are read by Spark alone."""
    source = table.source
    if isinstance(source, SynapseLinkSourceConfig):
        return _synapse(source, folder, storage, ref)
    if not isinstance(source, FilesSourceConfig):
        raise NotNative(f"the columns of a {source.kind} source are read through Spark")
    declared = source.schema_ or {}
    if not ref.files:
        names: list[str] = list(declared)
    elif source.format == "csv":
        names = _union(_csv_header(source, folder, storage, path) for path in ref.files)
    elif source.format == "json":
        names = _json_keys(source, ref.files)
    else:
        return _parquet(declared, ref.files)
    return Shape(tuple(names), tuple(declared.get(c) for c in names))


def _csv_header(config: FilesSourceConfig, folder: str, storage: Storage, path: str) -> tuple[str, ...]:
    """A CSV file's columns, from its first line alone."""
    with storage.chunks(path, 1 << 16) as chunks:
        found = scan(_to_first_line(chunks), config.csv.encoding, file_name(folder, path))
    return csv_header(config, folder, path, found.header)


def _to_first_line(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The chunks up to the one that ends the first line."""
    for chunk in chunks:
        yield chunk
        if b"\n" in chunk:
            return


def _union(headers: Iterable[tuple[str, ...]]) -> list[str]:
    """Columns unioned by name (without case, as Spark's `unionByName`): the first's, then each
    new one in order."""
    out: list[str] = []
    for header in headers:
        seen = {c.lower() for c in out}
        out += [c for c in header if c.lower() not in seen]
    return out


def _json_keys(config: FilesSourceConfig, files: tuple[str, ...]) -> list[str]:
    """Every record's top-level keys, sorted by name (a line that is no JSON object is one Spark
    marks malformed)."""
    keys: set[str] = set()
    for path in files:
        for line in text_lines(config, path):
            try:
                record = json.loads(line) if line.strip() else None
            except ValueError:
                continue
            if isinstance(record, list):  # Spark reads an array's objects as records
                raise NotNative(f"{path}: a JSON line holding an array is read through Spark")
            if isinstance(record, dict):
                keys |= set(record)
    if len({k.lower() for k in keys}) != len(keys):  # Spark refuses the batch: in its words
        raise NotNative("JSON keys that differ only in case are read through Spark")
    return sorted(keys)


def _parquet(declared: dict[str, str], files: tuple[str, ...]) -> Shape:
    """The columns of a batch's Parquet files (their footers), declared types first."""
    import pyarrow.parquet as pq

    shapes = set()
    for path in files:
        schema = pq.read_schema(path.removeprefix("file:"))
        shapes.add(tuple((f.name, _spark_name(f.type)) for f in schema))
    if len(shapes) != 1:  # merged by Spark's rules
        raise NotNative("Parquet files of one batch with different schemas are read through Spark")
    (found,) = shapes
    return Shape(tuple(c for c, _ in found), tuple(declared.get(c, t) for c, t in found))


def _spark_name(kind: object) -> str:
    name = spark_type(kind)
    return str(kind) if name == "other" else name


def _synapse(config: SynapseLinkSourceConfig, root: str, storage: Storage, ref: BatchRef) -> Shape:
    """A Synapse Link batch's columns: each folder's model.json's, unioned by name."""
    types: dict[str, str] = {}
    headers = []
    folders: list[str] = ref.replay["folders"]  # type: ignore[assignment]
    for folder in folders:
        files = [f for f in ref.files if f"/{folder}/" in f]
        entity = folder_entity(config, storage, root.rstrip("/"), folder, files)
        headers.append(tuple(entity.columns))
        types |= {a.name: a.spark_type for a in entity.attributes if a.name not in types}
    names = _union(headers)
    return Shape(tuple(names), tuple(types[c] for c in names))


def transformed_columns(table: TableConfig, columns: tuple[str, ...]) -> list[str] | None:
    """The columns the table's transform makes of a batch of these columns, in order; None when
    its SQL is more than this module tells (the module's doc)."""
    import sqlglot
    from sqlglot import exp

    assert table.transform is not None
    try:
        tree = sqlglot.parse_one(table.transform.sql, dialect="spark")
    except sqlglot.errors.SqlglotError:
        return None
    if not isinstance(tree, exp.Select):
        return None
    source = tree.args.get("from_") or tree.args.get("from")
    if (
        source is None
        or not isinstance(source.this, exp.Table)
        or source.this.name.lower() != "batch"
        or any(tree.args.get(k) for k in ("joins", "group", "having", "with"))
    ):
        return None
    batch = [*columns, *PROVENANCE_COLUMNS]
    names = {c.lower() for c in batch}
    if any(
        c.name.lower() not in names for c in tree.find_all(exp.Column) if not isinstance(c.this, exp.Star)
    ):
        return None  # a column the batch lacks: Spark's error, in its words
    out: list[str] = []
    for item in tree.expressions:
        if isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star)):
            out += batch
        elif isinstance(item, exp.Alias):
            out.append(item.alias)
        elif isinstance(item, exp.Column):  # named as the SELECT spells it, as Spark names it
            out.append(item.name)
        else:
            return None
    return out
