"""Source `files`: a folder where every batch is a file (CSV, Parquet, JSON lines) or a subfolder.

Parsing is strict. Every value is first read as text, then cast to its column type; a row whose
cell count is wrong, whose value does not parse, or whose bytes are not valid in the declared
encoding gets a reason and goes to quarantine, never silently to NULL. Quoted fields may hold
delimiters and newlines (the reader runs with `multiLine`).

Every CSV file is decoded once in Python before Spark reads it (`text.scan`): its header, in the
declared encoding with any byte order mark dropped, and the exact lines holding invalid bytes. A
header must name every column of a declared `schema` (it may have more); one that does not
refuses the batch, with the difference, before anything is written. Naive timestamps are read in
the source's `timezone` (see `text`).

Column types come from, in order: the source's `schema`, the target table's column, inference
over the batch (Spark's CSV/JSON inference).

Line numbers count physical lines, header included, so a quoted field with newlines advances them.
Spark's reader skips blank lines; a file with blank lines between records reports lines as if
they were absent (`record`, the ordinal of the record in its file, is always exact).
"""

from __future__ import annotations

import csv
import difflib
from typing import TYPE_CHECKING

from lakefresh.columns import FILE_COLUMN, LINE_COLUMN, RECORD_COLUMN, SEQ_COLUMN
from lakefresh.config.sources import FilesSourceConfig
from lakefresh.errors import SourceError
from lakefresh.lakehouse.failures import describe
from lakefresh.lakehouse.literals import empty_rows
from lakefresh.lakehouse.session import parse_schema
from lakefresh.lakehouse.sql import quote, sql_literal
from lakefresh.lakehouse.storage import storage_for
from lakefresh.sources.base import BatchRef, ReadBatch, SourceContext, with_provenance
from lakefresh.sources.batch_times import time_from_rows
from lakefresh.sources.file_listing import Listing
from lakefresh.sources.inference import inferred_types
from lakefresh.sources.text import (
    BAD_BYTES,
    CORRUPT,
    FILE_PATH,
    Scan,
    as_json,
    cast_strictly,
    header_has_mark,
    number_records,
    parse_type,
    record_span,
    scan,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from datetime import datetime

    from pyspark.sql import DataFrame, DataFrameReader
    from pyspark.sql.types import DataType, StructType

# Text files of at most this many bytes in all (a batch's, of one header) are read and numbered
# in one task (see `number_records`): about as many rows as `materialize` keeps in one partition
# at 40 bytes a row. Spark reads a CSV file (multi-line records allowed) in one task anyway.
ONE_TASK_BYTES = 4 << 20
# compressed files: their size on disk says little of their text, and Spark reads each in a task
_COMPRESSED = (".gz", ".bz2", ".xz", ".zst", ".lz4", ".snappy", ".deflate", ".zip")


class FilesSource:
    kind = "files"
    config_type = FilesSourceConfig

    def __init__(self, config: FilesSourceConfig, ctx: SourceContext) -> None:
        self.config = config
        self.spark = ctx.spark
        self.storage = storage_for(ctx.spark)
        self.path = ctx.resolve(config.path)
        self.listing = Listing(config, self.storage, self.path)

    # --- listing -----------------------------------------------------------------------------

    def list_batches(self) -> list[BatchRef]:
        return self.listing.batches()

    def waiting(self) -> list[tuple[str, str]]:
        """What the folder holds that is not listed as a batch yet, with the reason (`plan`)."""
        return self.listing.waiting()

    def published(self, ref: BatchRef) -> bool:
        return False  # the target's lineage is the whole record of what was taken

    # --- reading -----------------------------------------------------------------------------

    def read(self, ref: BatchRef, target_schema: StructType | None) -> ReadBatch:
        if not ref.files:
            return ReadBatch(ref, self._empty(target_schema))
        fmt = self.config.format
        if fmt == "csv":
            rows = self._read_csv(ref, target_schema)
        elif fmt == "json":
            rows = self._read_json(ref, target_schema)
        else:
            rows = self._read_parquet(ref, target_schema)
        return ReadBatch(ref, rows, self._timed(ref))

    def _timed(self, ref: BatchRef) -> Callable[[DataFrame], datetime | None] | None:
        """With `batch_time: {column: c}`: how the batch's rows tell its time."""
        column = self.config.batch_time.column if self.config.batch_time else None
        if column is None:
            return None
        return lambda good: time_from_rows(good, column, ref.batch_id)

    def read_many(self, refs: list[BatchRef], target_schema: StructType | None) -> DataFrame | None:
        """Several CSV batches of one header read as one (a backlog group, run/backlog.py), each row
        with its batch's index in `refs` (SEQ_COLUMN): one reader over all their files, not a
        union of one per batch. None when they cannot be: another format, headers that differ,
        column types left to inference (it could differ batch by batch), an unmatched file."""
        from pyspark.sql import functions as F

        files = [f for ref in refs for f in ref.files]
        if self.config.format != "csv" or not files or any(not ref.files for ref in refs):
            return None
        scans = {path: self._scan(path) for path in files}
        headers = {self._header(path, scans[path]) for path in files}
        known = set(self.config.schema_ or {}) | {f.name.lower() for f in (target_schema or [])}
        if len(headers) > 1 or any(c not in known and c.lower() not in known for c in next(iter(headers))):
            return None
        last = refs[-1]
        combined = BatchRef(last.batch_id, last.position, last.order_key, last.batch_time, tuple(files))
        rows = self._read_csv(combined, target_schema, scans)
        owner = {_location(f): n for n, ref in enumerate(refs) for f in ref.files}
        found = [r[0] for r in rows.select(FILE_COLUMN).distinct().collect()]
        if any(_location(f) not in owner for f in found):
            return None
        seq = F.lit(None).cast("int")
        for f in found:
            seq = F.when(F.col(FILE_COLUMN) == F.lit(f), F.lit(owner[_location(f)])).otherwise(seq)
        return rows.withColumn(SEQ_COLUMN, seq)

    def _empty(self, target_schema: StructType | None) -> DataFrame:
        from pyspark.sql.types import StructType

        schema = (
            parse_schema(_ddl(self.config.schema_))
            if self.config.schema_
            else (target_schema or StructType([]))
        )
        df = empty_rows(self.spark, schema)
        return with_provenance(df)

    def _read_csv(
        self, ref: BatchRef, target_schema: StructType | None, scans: dict[str, Scan] | None = None
    ) -> DataFrame:
        from pyspark.sql import functions as F
        from pyspark.sql.types import StringType, StructField, StructType

        opts = self.config.csv
        scans = scans or {path: self._scan(path) for path in ref.files}
        groups: dict[tuple[str, ...], list[str]] = {}
        for path in ref.files:
            groups.setdefault(self._header(path, scans[path]), []).append(path)
        bad_lines = [(self.storage.uri(p), line) for p, found in scans.items() for line in found.bad_lines]

        frames = []
        for header, paths in groups.items():
            text_schema = StructType(
                [StructField(c, StringType()) for c in header] + [StructField(CORRUPT, StringType())]
            )
            reader = (
                self._csv_reader()
                .schema(text_schema)
                .option("mode", "PERMISSIVE")
                .option("columnNameOfCorruptRecord", CORRUPT)
                .option("enforceSchema", True)
            )
            raw = reader.csv(list(paths))
            if bad_lines:
                raw = raw.withColumn(FILE_PATH, F.col("_metadata.file_path"))
            small = sum(scans[p].size for p in paths) <= ONE_TASK_BYTES
            frames.append(number_records(raw, list(header), header_lines=int(opts.header), one_task=small))
        text = frames[0]
        for frame in frames[1:]:
            text = text.unionByName(frame, allowMissingColumns=True)

        columns = [c for c in text.columns if not c.startswith("_lf_")]
        types = self._column_types(columns, target_schema, ref, "csv")
        expected = sql_literal(f"wrong number of cells: expected {len(columns)} ({', '.join(columns)})")
        wrong_cells = f"CASE WHEN {CORRUPT} IS NOT NULL THEN {expected} END"
        bad_bytes = None
        if bad_lines:
            text = self._mark_bad_bytes(text, columns, bad_lines)
            bad_bytes = BAD_BYTES
        raw_col = f"coalesce({CORRUPT}, {as_json(columns)})"
        typed = cast_strictly(
            text,
            types,
            first_reasons=[wrong_cells, bad_bytes],
            raw=raw_col,
            timestamp_format=opts.timestamp_format,
            date_format=opts.date_format,
            timezone=self.config.timezone,
        )
        return typed

    def _mark_bad_bytes(
        self, text: DataFrame, columns: list[str], bad_lines: list[tuple[str, int]]
    ) -> DataFrame:
        """Give the reason to the records whose lines [line, line + span) hold a bad line."""
        from pyspark.sql import functions as F

        bad = self.spark.createDataFrame(bad_lines, f"{FILE_PATH} string, _lf_at bigint")
        last = F.col(LINE_COLUMN) + F.expr(record_span(columns)) - 1
        hits = (
            text.select(FILE_PATH, LINE_COLUMN, F.explode(F.sequence(LINE_COLUMN, last)).alias("_lf_at"))
            .join(bad, [FILE_PATH, "_lf_at"], "left_semi")
            .select(FILE_PATH, LINE_COLUMN)
            .distinct()
            .withColumn(BAD_BYTES, F.lit(f"bytes that are not valid {self.config.csv.encoding}"))
        )
        return text.join(hits, [FILE_PATH, LINE_COLUMN], "left").select(*text.columns, BAD_BYTES)

    def _csv_reader(self) -> DataFrameReader:
        """Spark's CSV reader with this source's dialect; multiLine so quoted newlines work."""
        opts = self.config.csv
        return (
            self.spark.read.option("header", opts.header)
            .option("multiLine", True)
            .option("sep", opts.delimiter)
            .option("quote", opts.quote)
            .option("escape", opts.escape)
            .option("encoding", opts.encoding)
            .option("nullValue", opts.null_value)
        )

    def _scan(self, path: str) -> Scan:
        with self.storage.chunks(path) as chunks:
            return scan(chunks, self.config.csv.encoding, self._name(path))

    def _header(self, path: str, found: Scan) -> tuple[str, ...]:
        return csv_header(self.config, self.path, path, found.header)

    def _name(self, path: str) -> str:
        return file_name(self.path, path)

    def _read_json(self, ref: BatchRef, target_schema: StructType | None) -> DataFrame:
        """JSON Lines, every top-level value read as text (a nested object or array as its JSON
        text), then cast strictly: a column typed `struct`, `array` or `map` is parsed from that
        text (sources/json_text.py), one typed otherwise keeps the text."""
        from pyspark.sql.types import StringType, StructField, StructType

        try:
            names = self._json_reader().option("primitivesAsString", True).json(list(ref.files)).columns
        except Exception as exc:  # `Id` and `id` are one column to Spark, which refuses both
            if "COLUMN_ALREADY_EXISTS" not in str(exc):
                raise
            raise SourceError(
                "its JSON spells one column two ways (names differing only in case are one "
                f"column): {describe(exc)}"
            ) from None
        columns = [c for c in names if c != CORRUPT]
        as_text = StructType([StructField(c, StringType()) for c in [*columns, CORRUPT]])
        raw = self._json_reader().schema(as_text).json(list(ref.files))
        small = self._few_bytes(ref.files)
        numbered = number_records(raw, columns, header_lines=0, one_task=small, span="1")
        types = self._column_types(columns, target_schema, ref, "json")
        malformed = f"CASE WHEN {CORRUPT} IS NOT NULL THEN 'malformed JSON record' END"
        raw_col = f"coalesce({CORRUPT}, {as_json(columns)})"
        return cast_strictly(
            numbered, types, first_reasons=[malformed], raw=raw_col, timezone=self.config.timezone
        )

    def _json_reader(self) -> DataFrameReader:
        return self.spark.read.option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", CORRUPT)

    def _few_bytes(self, files: Iterable[str]) -> bool:
        """Whether these uncompressed files hold at most ONE_TASK_BYTES (sizes looked up until
        the sum passes it)."""
        total = 0
        for path in files:
            if path.lower().endswith(_COMPRESSED):
                return False
            total += self.storage.size(path)
            if total > ONE_TASK_BYTES:
                return False
        return True

    def _read_parquet(self, ref: BatchRef, target_schema: StructType | None) -> DataFrame:
        from pyspark.sql import functions as F

        try:
            raw = self.spark.read.option("mergeSchema", True).parquet(*ref.files)
        except Exception as exc:
            raise SourceError(f"batch {ref.batch_id}: cannot read Parquet: {exc}") from exc
        columns = list(raw.columns)
        # Parquet knows each row's position in its file: no window needed to number records
        numbered = raw.select(
            *[F.col(quote(c)) for c in columns],
            F.lit(None).cast("string").alias(CORRUPT),
            F.col("_metadata.file_path").alias(FILE_COLUMN),
            (F.col("_metadata.row_index") + 1).alias(RECORD_COLUMN),
            (F.col("_metadata.row_index") + 1).alias(LINE_COLUMN),
        )
        declared = self.config.schema_ or {}
        types = {c: parse_type(declared[c]) for c in columns if c in declared}
        return cast_strictly(
            numbered, types, first_reasons=[], raw=as_json(columns), timezone=self.config.timezone
        )

    def _column_types(
        self, columns: list[str], target_schema: StructType | None, ref: BatchRef, fmt: str
    ) -> dict[str, DataType]:
        declared = self.config.schema_ or {}
        target = {f.name.lower(): f.dataType for f in (target_schema.fields if target_schema else [])}
        types: dict[str, DataType] = {}
        unknown = []
        for c in columns:
            if c in declared:
                types[c] = parse_type(declared[c])
            elif c.lower() in target:
                types[c] = target[c.lower()]
            else:
                unknown.append(c)
        if unknown:
            inferred = inferred_types(self.spark, self._csv_reader, list(ref.files), fmt, self.config.csv)
            for c in unknown:
                if c in inferred:
                    types[c] = inferred[c]
        return types


def csv_header(config: FilesSourceConfig, folder: str, path: str, line: str | None) -> tuple[str, ...]:
    """The columns a CSV file's first line (`line`, decoded: `text.scan`) names, as the run reads
    them; SourceError when they cannot be read or lack declared columns (a typo or a rename)."""
    opts = config.csv
    declared = config.schema_
    if not opts.header:
        if not declared:
            raise SourceError("csv.header: false needs a declared `schema` to name the columns")
        return tuple(declared)
    name = file_name(folder, path)
    if line is None:
        raise SourceError(f"{path}: the file is empty; a CSV batch needs at least its header")
    if header_has_mark(line):
        raise SourceError(f"the header of {name} has bytes that are not valid {opts.encoding}")
    if "\x00" in line:
        raise SourceError(
            f"the header of {name} holds NUL characters, as a UTF-16 or UTF-32 file read as "
            f"{opts.encoding} does; declare its csv.encoding"
        )
    names = next(csv.reader([line], delimiter=opts.delimiter, quotechar=opts.quote))
    names = [n.strip() for n in names]
    if any(not n for n in names) or len({n.lower() for n in names}) != len(names):
        # Spark's names are not case sensitive: `id` and `ID` are one column
        raise SourceError(f"{path}: the header must name every column once, got {names}")
    missing = [c for c in declared or {} if c not in names]
    extra = [n for n in names if n not in (declared or {})]
    if missing and extra:  # a typo or a rename; missing alone is an older or newer shape
        raise SourceError(
            f"the header of {name} lacks declared column(s) {_spelled(missing, extra)}; "
            f"header: {', '.join(names)}"
        )
    return tuple(names)


def file_name(folder: str, path: str) -> str:
    """A file as the user knows it: its path under the source folder (`b2.csv`,
    `2025-01-01/part-0.csv`)."""
    prefix = folder.rstrip("/") + "/"
    at = path.find(prefix)
    return path[at + len(prefix) :] if at >= 0 else path


def _location(uri: str) -> tuple[str, str]:
    """A file's URI as Spark's `input_file_name()` or a listing writes it, compared by place:
    `file:/a` and `file:///a` are one file, and so are escaped and plain characters."""
    from urllib.parse import unquote, urlparse

    parsed = urlparse(uri)
    return parsed.netloc, unquote(parsed.path)


def _spelled(missing: list[str], candidates: list[str]) -> str:
    """'name' (did you mean 'nmae'?), 'amount'"""
    out = []
    for column in missing:
        near = difflib.get_close_matches(column, candidates, n=1, cutoff=0.6)
        out.append(repr(column) + (f" (did you mean {near[0]!r}?)" if near else ""))
    return ", ".join(out)


def _ddl(schema: dict[str, str]) -> str:
    return ", ".join(f"{quote(c)} {t}" for c, t in schema.items())
