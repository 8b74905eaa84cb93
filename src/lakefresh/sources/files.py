"""Source `files`: a folder where every batch is a file (CSV, Parquet, JSON lines) or a subfolder.

Parsing is strict. Every value is first read as text, then cast to its column type; a row whose
cell count is wrong, whose value does not parse, or whose bytes are not valid in the declared
encoding gets a reason and goes to quarantine, never silently to NULL. Quoted fields may hold
delimiters and newlines (the reader runs with `multiLine`).

Column types come from, in order: the source's `schema`, the target table's column, inference
over the batch (Spark's CSV/JSON inference).

Line numbers count physical lines, header included, so a quoted field with newlines advances them.
Spark's reader skips blank lines; a file with blank lines between records reports lines as if
they were absent (`record`, the ordinal of the record in its file, is always exact).
"""

from __future__ import annotations

import csv
import fnmatch
from collections.abc import Callable
from typing import TYPE_CHECKING

from lakefresh.columns import FILE_COLUMN, LINE_COLUMN, RAW_COLUMN, REASON_COLUMN, RECORD_COLUMN
from lakefresh.config.sources import FilesSourceConfig
from lakefresh.errors import SourceError
from lakefresh.lakehouse.session import parse_schema
from lakefresh.lakehouse.storage import FileEntry, Storage
from lakefresh.sources.base import BatchRef, ReadBatch, SourceContext, with_provenance

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, DataFrameReader
    from pyspark.sql.types import DataType, StructType

CORRUPT = "_lf_corrupt"
REPLACEMENT_CHAR = "\ufffd"


class FilesSource:
    kind = "files"

    def __init__(self, config: FilesSourceConfig, ctx: SourceContext) -> None:
        self.config = config
        self.spark = ctx.spark
        self.storage = Storage(ctx.spark)
        self.path = ctx.resolve(config.path)

    # --- listing -----------------------------------------------------------------------------

    def list_batches(self) -> list[BatchRef]:
        if not self.storage.exists(self.path):
            raise SourceError(f"source folder {self.path} does not exist")
        entries = [e for e in self.storage.list(self.path) if not _hidden(e.name)]
        refs = []
        if self.config.layout == "file":
            for entry in entries:
                if not entry.is_dir and fnmatch.fnmatch(entry.name, self.config.file_pattern):
                    refs.append(self._ref(entry.name, [entry]))
        else:
            for entry in entries:
                if not entry.is_dir:
                    continue
                children = self.storage.list(entry.path)
                marker = self.config.completion_marker
                if marker and not any(c.name == marker for c in children):
                    continue  # still being written
                files = [
                    c
                    for c in children
                    if not c.is_dir
                    and not _hidden(c.name)
                    and fnmatch.fnmatch(c.name, self.config.file_pattern)
                ]
                refs.append(self._ref(entry.name, files))
        return sorted(refs, key=lambda r: r.order_key)

    def _ref(self, batch_id: str, files: list[FileEntry]) -> BatchRef:
        newest = max((f.modified for f in files), default=None)
        if newest is None:  # an empty folder batch: its own listing time
            from datetime import UTC, datetime

            newest = datetime.now(UTC).replace(tzinfo=None)
        order: tuple[str, ...]
        if self.config.order_by == "modified":
            order = (newest.isoformat(), batch_id)
            position = f"{newest.isoformat()} {batch_id}"
        else:
            order = (batch_id,)
            position = batch_id
        paths = tuple(f.path for f in files)
        return BatchRef(
            batch_id=batch_id,
            position=position,
            order_key=order,
            batch_time=newest,
            files=paths,
            replay={"kind": "files", "files": list(paths)},
        )

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
        return ReadBatch(ref, rows)

    def _empty(self, target_schema: StructType | None) -> DataFrame:
        from pyspark.sql.types import StructType

        schema = (
            parse_schema(_ddl(self.config.schema_))
            if self.config.schema_
            else (target_schema or StructType([]))
        )
        df = self.spark.createDataFrame([], schema)
        return with_provenance(df)

    def _read_csv(self, ref: BatchRef, target_schema: StructType | None) -> DataFrame:
        from pyspark.sql import functions as F
        from pyspark.sql.types import StringType, StructField, StructType

        opts = self.config.csv
        groups: dict[tuple[str, ...], list[str]] = {}
        for path in ref.files:
            groups.setdefault(self._header(path), []).append(path)

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
            frames.append(number_records(raw, list(header), header_lines=int(opts.header)))
        text = frames[0]
        for frame in frames[1:]:
            text = text.unionByName(frame, allowMissingColumns=True)

        columns = [c for c in text.columns if not c.startswith("_lf_")]
        types = self._column_types(columns, target_schema, ref, "csv")
        wrong_cells = F.when(
            F.col(CORRUPT).isNotNull(),
            F.lit(f"wrong number of cells: expected {len(columns)} ({', '.join(columns)})"),
        )
        bad_bytes = bad_encoding(columns) if opts.encoding.upper().replace("-", "") == "UTF8" else None
        raw_col = F.coalesce(F.col(CORRUPT), F.to_json(F.struct(*[F.col(_q(c)) for c in columns])))
        typed = cast_strictly(
            text,
            types,
            first_reasons=[wrong_cells, bad_bytes],
            raw=raw_col,
            timestamp_format=opts.timestamp_format,
            date_format=opts.date_format,
        )
        return typed

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

    def _header(self, path: str) -> tuple[str, ...]:
        opts = self.config.csv
        if not opts.header:
            if not self.config.schema_:
                raise SourceError("csv.header: false needs a declared `schema` to name the columns")
            return tuple(self.config.schema_)
        line = self.storage.first_line(path, opts.encoding)
        if line is None:
            raise SourceError(f"{path}: the file is empty; a CSV batch needs at least its header")
        names = next(csv.reader([line], delimiter=opts.delimiter, quotechar=opts.quote))
        names = [n.strip() for n in names]
        if any(not n for n in names) or len(set(names)) != len(names):
            raise SourceError(f"{path}: the header must name every column once, got {names}")
        return tuple(names)

    def _read_json(self, ref: BatchRef, target_schema: StructType | None) -> DataFrame:
        from pyspark.sql import functions as F

        raw = (
            self.spark.read.option("primitivesAsString", True)
            .option("mode", "PERMISSIVE")
            .option("columnNameOfCorruptRecord", CORRUPT)
            .json(list(ref.files))
        )
        if CORRUPT not in raw.columns:
            raw = raw.withColumn(CORRUPT, F.lit(None).cast("string"))
        columns = [c for c in raw.columns if c != CORRUPT]
        numbered = number_records(raw, columns, header_lines=0)
        types = self._column_types(columns, target_schema, ref, "json")
        malformed = F.when(F.col(CORRUPT).isNotNull(), F.lit("malformed JSON record"))
        raw_col = F.coalesce(F.col(CORRUPT), F.to_json(F.struct(*[F.col(_q(c)) for c in columns])))
        return cast_strictly(numbered, types, first_reasons=[malformed], raw=raw_col)

    def _read_parquet(self, ref: BatchRef, target_schema: StructType | None) -> DataFrame:
        from pyspark.sql import functions as F

        try:
            raw = self.spark.read.option("mergeSchema", True).parquet(*ref.files)
        except Exception as exc:
            raise SourceError(f"batch {ref.batch_id}: cannot read Parquet: {exc}") from exc
        columns = list(raw.columns)
        # Parquet knows each row's position in its file: no window needed to number records
        numbered = raw.select(
            *[F.col(_q(c)) for c in columns],
            F.lit(None).cast("string").alias(CORRUPT),
            F.col("_metadata.file_path").alias(FILE_COLUMN),
            (F.col("_metadata.row_index") + 1).alias(RECORD_COLUMN),
            (F.col("_metadata.row_index") + 1).alias(LINE_COLUMN),
        )
        declared = self.config.schema_ or {}
        types = {c: parse_type(declared[c]) for c in columns if c in declared}
        raw_col = F.to_json(F.struct(*[F.col(_q(c)) for c in columns]))
        return cast_strictly(numbered, types, first_reasons=[], raw=raw_col)

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
            inferred = self._infer(ref, fmt)
            for c in unknown:
                if c in inferred:
                    types[c] = inferred[c]
        return types

    def _infer(self, ref: BatchRef, fmt: str) -> dict[str, DataType]:
        opts = self.config.csv
        if fmt == "csv":
            reader = self._csv_reader().option("inferSchema", True)
            if opts.timestamp_format:
                reader = reader.option("timestampFormat", opts.timestamp_format)
            schema = reader.csv(list(ref.files)).schema
        else:
            schema = self.spark.read.json(list(ref.files)).schema
        return {f.name: f.dataType for f in schema.fields if f.name != "_corrupt_record"}


def number_records(raw: DataFrame, columns: list[str], header_lines: int) -> DataFrame:
    """Add the file, the record ordinal in it, and the physical line the record starts on."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    with_file = raw.withColumn(FILE_COLUMN, F.input_file_name()).withColumn(
        "_lf_order", F.monotonically_increasing_id()
    )
    newlines = F.when(F.col(CORRUPT).isNotNull(), _count_newlines(F.col(CORRUPT))).otherwise(
        sum((F.coalesce(_count_newlines(F.col(_q(c))), F.lit(0)) for c in columns), F.lit(0))
    )
    in_file = Window.partitionBy(FILE_COLUMN).orderBy("_lf_order")
    before = in_file.rowsBetween(Window.unboundedPreceding, -1)
    return (
        with_file.withColumn(RECORD_COLUMN, F.row_number().over(in_file).cast("bigint"))
        .withColumn("_lf_span", newlines + 1)
        .withColumn(
            LINE_COLUMN,
            (F.coalesce(F.sum("_lf_span").over(before), F.lit(0)) + header_lines + 1).cast("bigint"),
        )
        .drop("_lf_order", "_lf_span")
    )


# --- strict casting --------------------------------------------------------------------------


def cast_strictly(
    df: DataFrame,
    types: dict[str, DataType],
    first_reasons: list[Column | None],
    raw: Column,
    timestamp_format: str | None = None,
    date_format: str | None = None,
    parsers: dict[str, Callable[[Column], Column]] | None = None,
) -> DataFrame:
    """Cast each column to its type; a value that is present but does not parse gives a reason.
    `parsers` turn the text of some columns into their type instead of a cast."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    casts: dict[str, Column] = {}
    reasons: list[Column] = [r for r in first_reasons if r is not None]
    for column, type_ in types.items():
        source = F.col(_q(column))
        if df.schema[column].dataType == type_:
            continue
        if parsers and column in parsers:
            cast = parsers[column](source)
        elif isinstance(type_, T.TimestampType) and timestamp_format:
            cast = F.to_timestamp(source, timestamp_format)
        elif isinstance(type_, T.DateType) and date_format:
            cast = F.to_date(source, date_format)
        elif isinstance(df.schema[column].dataType, T.StringType) and isinstance(
            type_, T.IntegralType | T.FractionalType | T.DecimalType
        ):
            cast = F.trim(source).cast(type_)
        else:
            cast = source.cast(type_)
        casts[column] = cast
        reasons.append(
            F.when(
                source.isNotNull() & cast.isNull(),
                F.concat(
                    F.lit(f"{column}: '"),
                    source.cast("string"),
                    F.lit(f"' is not a valid {type_.simpleString()}"),
                ),
            )
        )
    reason = F.concat_ws("; ", *reasons) if reasons else F.lit("")
    out = df.select(
        *[casts.get(c, F.col(_q(c))).alias(c) for c in df.columns if c != CORRUPT],
        F.when(reason != "", reason).alias(REASON_COLUMN),
        raw.alias(RAW_COLUMN),
    )
    return out


def bad_encoding(columns: list[str]) -> Column | None:
    from pyspark.sql import functions as F

    if not columns:
        return None
    tests = [F.coalesce(F.instr(F.col(_q(c)), REPLACEMENT_CHAR) > 0, F.lit(False)) for c in columns]
    hit = tests[0]
    for test in tests[1:]:
        hit = hit | test
    return F.when(hit, F.lit("bytes that are not valid UTF-8"))


def _count_newlines(column: Column) -> Column:
    from pyspark.sql import functions as F

    return F.length(column) - F.length(F.regexp_replace(column, "\n", ""))


def parse_type(name: str) -> DataType:
    return parse_schema(f"x {name}").fields[0].dataType


def _ddl(schema: dict[str, str]) -> str:
    return ", ".join(f"{_q(c)} {t}" for c, t in schema.items())


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _hidden(name: str) -> bool:
    return name.startswith((".", "_"))
