"""The first records of a `files` source's files, read in Python as the run reads them, without
Spark: each declared column's values with the file and line they come from (`lakefresh
validate`'s sample; the values are judged by text_casts.py).

CSV is read with Python's `csv` module in the source's dialect (delimiter, quote, escape, header,
encoding with its byte order mark, the text that stands for NULL; an empty cell is NULL, as in
Spark's reader); JSON Lines with `json`, every top-level value as the text the run casts (a number
as written, `true`, a nested value as its JSON); Parquet with pyarrow, its values typed. Records the
run quarantines for another reason (a wrong number of cells, bytes not valid in the encoding, a
malformed JSON line) are left out. Lines are physical lines, header included.
"""

from __future__ import annotations

import codecs
import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lakefresh.lakehouse.storage import ArrowStorage
from lakefresh.sources.text import decoding

if TYPE_CHECKING:
    from lakefresh.config.sources import FilesSourceConfig

ROWS_PER_FILE = 1000
FILES = 3


@dataclass(frozen=True)
class Value:
    """One value of the sample: as the run casts it (text, or a Parquet file's typed value)."""

    value: Any
    file: str
    line: int


@dataclass
class Sample:
    """The sampled values of each declared column present in the files (NULLs left out), and,
    for Parquet, each column's type in the files as Spark names it."""

    values: dict[str, list[Value]] = field(default_factory=dict)
    file_types: dict[str, str] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)

    def add(self, column: str, value: Any, file: str, line: int) -> None:
        self.values.setdefault(column, []).append(Value(value, file, line))


def sample(config: FilesSourceConfig, paths: list[str], rows: int = ROWS_PER_FILE) -> Sample:
    """The declared columns' values in the first `rows` records of each of `paths`."""
    found = Sample()
    declared = config.schema_ or {}
    read = {"csv": _csv_values, "json": _json_values, "parquet": _parquet_values}[config.format]
    for path in paths:
        found.files.append(path)
        read(config, path, rows, declared, found)
    return found


def text_lines(config: FilesSourceConfig, path: str) -> Iterator[str]:
    """A text file's lines, ends kept, decoded as the run decodes it (its byte order mark
    dropped; bytes not valid in the encoding as U+FFFD); decompressed by its extension."""
    with ArrowStorage().chunks(path, 1 << 16) as chunks:
        head = b""
        for chunk in chunks:
            head += chunk
            if len(head) >= 4:
                break
        codec, skip = decoding(head, config.csv.encoding, path)
        decoder = codecs.getincrementaldecoder(codec)(errors="replace")
        pending = decoder.decode(head[skip:])
        for chunk in chunks:
            *lines, pending = (pending + decoder.decode(chunk)).split("\n")
            yield from (line + "\n" for line in lines)
        *lines, pending = (pending + decoder.decode(b"", final=True)).split("\n")
        yield from (line + "\n" for line in lines)
        if pending:
            yield pending


def _csv_values(
    config: FilesSourceConfig, path: str, rows: int, declared: dict[str, str], found: Sample
) -> None:
    opts = config.csv
    csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))  # Spark's cells have no limit
    dialect: dict[str, Any] = {"delimiter": opts.delimiter, "quotechar": opts.quote, "strict": False}
    if opts.escape != opts.quote:
        dialect |= {"escapechar": opts.escape, "doublequote": False}
    reader = csv.reader(text_lines(config, path), **dialect)
    columns = list(declared)
    if opts.header:
        header = next(reader, None)
        if header is None:
            return
        columns = [name.strip() for name in header]
    taken, line = 0, reader.line_num + 1
    for cells in reader:
        start, line = line, reader.line_num + 1
        if not cells:
            continue  # a blank line: Spark's reader skips it
        taken += 1
        if len(cells) == len(columns) and not any("\ufffd" in c for c in cells):
            for name, cell in zip(columns, cells, strict=True):
                if name in declared and cell != opts.null_value and cell != "":
                    found.add(name, cell, path, start)
        if taken >= rows:
            return


def _json_values(
    config: FilesSourceConfig, path: str, rows: int, declared: dict[str, str], found: Sample
) -> None:
    taken = 0
    for number, line in enumerate(text_lines(config, path), start=1):
        if not line.strip():
            continue
        taken += 1
        try:
            record = json.loads(line, parse_float=str, parse_int=str)
        except ValueError:
            record = None
        if isinstance(record, dict) and "\ufffd" not in line:
            for name, value in record.items():
                if name in declared and value is not None:
                    found.add(name, _as_text(value), path, number)
        if taken >= rows:
            return


def _as_text(value: Any) -> str:
    """A JSON value as the run reads it before its cast (`primitivesAsString`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _parquet_values(
    config: FilesSourceConfig, path: str, rows: int, declared: dict[str, str], found: Sample
) -> None:
    import pyarrow.parquet as pq

    local = path.removeprefix("file:")
    with pq.ParquetFile(local) as parquet:
        present = [name for name in parquet.schema_arrow.names if name in declared]
        for name in present:
            found.file_types.setdefault(name, spark_type(parquet.schema_arrow.field(name).type))
        batch = next(parquet.iter_batches(batch_size=rows, columns=present), None)
    if batch is None:
        return
    for name in present:
        for index, value in enumerate(batch.column(name).to_pylist()):
            if value is not None:
                found.add(name, value, path, index + 1)


def spark_type(kind: Any) -> str:
    """Spark's name of an Arrow type (what Spark reads a Parquet column as); `other` for a type
    the sample does not judge."""
    import pyarrow as pa
    import pyarrow.types as t

    names = {pa.int8(): "tinyint", pa.int16(): "smallint", pa.int32(): "int", pa.int64(): "bigint"}
    names |= {pa.uint8(): "smallint", pa.uint16(): "int", pa.uint32(): "bigint"}
    names |= {pa.float32(): "float", pa.float64(): "double", pa.bool_(): "boolean"}
    if kind in names:
        return names[kind]
    if t.is_decimal(kind):
        return f"decimal({kind.precision},{kind.scale})"
    if t.is_string(kind) or t.is_large_string(kind):
        return "string"
    return "other"
