"""Text in source files: bytes decoded in the declared encoding and checked exactly, and text
values cast strictly to their column types (timestamps in the source's time zone).

Decoding. A file may start with a byte order mark (BOM). It is dropped when it agrees with the
declared encoding: the UTF-8 mark with `UTF-8`; the UTF-16 marks with `UTF-16` (the mark gives the
byte order), `UTF-16LE` or `UTF-16BE` of that order; the same for UTF-32. Without a mark, `UTF-16`
and `UTF-32` are big-endian, as Java (and so Spark) reads them. A mark that disagrees with the
declared encoding (a UTF-16 file declared UTF-8, or any mark with a non-Unicode encoding) refuses
the file: reading on would turn every value into garbage.

Invalid bytes are found exactly, by decoding every byte once with Python's strict decoder of the
declared encoding: Spark replaces them with U+FFFD, so a U+FFFD in a value cannot tell them from a
genuine U+FFFD. `scan` returns the physical lines (1-based, counting `\\n`) that hold them.

Timestamps. Text with an explicit zone (`Z`, `+01:00`, ` UTC`, ` Europe/Paris`) keeps it. Naive
text (`2025-01-01 10:00:00`, a date alone) is a wall-clock time in the source's `timezone`; it
becomes an instant without Spark's session time zone: its fields are read as TIMESTAMP_NTZ and
the instant built with `make_timestamp` and `to_utc_timestamp`, which take the zone as an
argument. A wall-clock time that the zone skips (clocks set forward, e.g. 02:30 on the day
daylight saving time starts) has no instant: its row is quarantined. One that occurs twice (clocks
set back) takes the earlier instant, the one of the offset before the change (daylight time).
"""

from __future__ import annotations

import codecs
import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lakefresh.columns import FILE_COLUMN, LINE_COLUMN, RAW_COLUMN, REASON_COLUMN, RECORD_COLUMN
from lakefresh.errors import SourceError
from lakefresh.lakehouse.functions import try_cast_sql, try_to_date_sql, try_to_timestamp_sql
from lakefresh.lakehouse.sql import quote, sql_literal
from lakefresh.sources.json_text import from_json_text, is_nested

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import DataType

CORRUPT = "_lf_corrupt"  # the CSV/JSON reader's column for records it cannot parse
FILE_PATH = "_lf_path"  # a file's path as `_metadata.file_path` spells it (a URI)
BAD_BYTES = "_lf_bad_bytes"  # the reason of records holding invalid bytes
SCRATCH_COLUMNS = (CORRUPT, FILE_PATH, BAD_BYTES)  # helper columns never returned by cast_strictly
REPLACEMENT_CHAR = "\ufffd"

# --- decoding ----------------------------------------------------------------------------------

# Longest first: the UTF-32LE mark begins with the UTF-16LE one.
BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32LE"),
    (codecs.BOM_UTF32_BE, "UTF-32BE"),
    (codecs.BOM_UTF8, "UTF-8"),
    (codecs.BOM_UTF16_LE, "UTF-16LE"),
    (codecs.BOM_UTF16_BE, "UTF-16BE"),
)
# Python's codec for what a mark says, by the declared codecs that accept it.
_BOM_CODECS = {
    "UTF-8": ("utf-8", {"utf-8"}),
    "UTF-16LE": ("utf-16-le", {"utf-16", "utf-16-le"}),
    "UTF-16BE": ("utf-16-be", {"utf-16", "utf-16-be"}),
    "UTF-32LE": ("utf-32-le", {"utf-32", "utf-32-le"}),
    "UTF-32BE": ("utf-32-be", {"utf-32", "utf-32-be"}),
}
_JAVA_DEFAULT_ORDER = {"utf-16": "utf-16-be", "utf-32": "utf-32-be"}  # no mark: big-endian

# An invalid byte sequence decodes to a lone surrogate, which no valid decoding yields.
_MARK = "\udcff"


def _mark(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeDecodeError):
        raise error
    return _MARK, error.end


codecs.register_error("lakefresh.mark", _mark)


def codec_name(encoding: str) -> str:
    """Python's name of a text encoding (`utf-16-le` for UTF-16LE).

    Raises:
        LookupError: Python knows no text encoding of that name.
    """
    "".encode(encoding)  # refuses codecs that are not text encodings (rot13, base64)
    return codecs.lookup(encoding).name


@dataclass(frozen=True)
class Scan:
    """What one pass over a file's bytes found."""

    header: str | None  # the first line, without its line break; None for an empty file
    bad_lines: tuple[int, ...]  # physical lines (1-based) holding bytes that are not valid
    size: int = 0  # the file's bytes


def scan(chunks: Iterable[bytes], encoding: str, where: str) -> Scan:
    """Decode a file's bytes (in chunks of any size) strictly: its first line, and the lines
    that hold invalid bytes.

    Raises:
        SourceError: the file starts with a byte order mark the declared encoding does not take.
    """
    stream = iter(chunks)
    head = b""
    for chunk in stream:  # enough bytes to see any byte order mark
        head += chunk
        if len(head) >= 4:
            break
    codec, skip = decoding(head, encoding, where)
    decoder = codecs.getincrementaldecoder(codec)(errors="lakefresh.mark")
    state = _Lines()
    state.feed(decoder.decode(head[skip:]))
    size = len(head)
    for chunk in stream:
        size += len(chunk)
        state.feed(decoder.decode(chunk))
    state.feed(decoder.decode(b"", final=True))
    header = None if not head else "".join(state.header).removesuffix("\r")
    return Scan(header, tuple(state.bad), size)


def decoding(head: bytes, encoding: str, where: str) -> tuple[str, int]:
    """Python's codec for the bytes after the byte order mark, and the mark's length."""
    declared = codec_name(encoding)
    for bom, name in BOMS:
        if head.startswith(bom):
            codec, accepted = _BOM_CODECS[name]
            if declared not in accepted:
                family = name.removesuffix("LE").removesuffix("BE")
                raise SourceError(
                    f"{where} starts with a {name} byte order mark, but csv.encoding is "
                    f"{encoding}; declare csv.encoding: {family}"
                )
            return codec, len(bom)
    return _JAVA_DEFAULT_ORDER.get(declared, declared), 0


class _Lines:
    """Counts lines over decoded text and notes the first line and those with a mark."""

    def __init__(self) -> None:
        self.line = 1
        self.header: list[str] = []
        self.in_header = True
        self.bad: list[int] = []

    def feed(self, text: str) -> None:
        if self.in_header:
            end = text.find("\n")
            self.header.append(text if end < 0 else text[:end])
            self.in_header = end < 0
        at = text.find(_MARK)
        if at < 0:
            self.line += text.count("\n")
            return
        cursor = 0
        while at >= 0:
            self.line += text.count("\n", cursor, at)
            cursor = at
            if not self.bad or self.bad[-1] != self.line:
                self.bad.append(self.line)
            at = text.find(_MARK, at + 1)
        self.line += text.count("\n", cursor)


def header_has_mark(header: str) -> bool:
    return _MARK in header


# --- strict casting ----------------------------------------------------------------------------

# Naive date-time text as Spark casts it (date, then optional time); no zone after it.
NAIVE_TEXT = r"^\s*[+-]?\d{4,}(-\d{1,2}(-\d{1,2}([ T](\d{1,2}(:\d{1,2}(:\d{1,2}(\.\d*)?)?)?)?)?)?)?\s*$"
# A date and a time, which an explicit zone may follow.
DATED_TEXT = r"^\s*[+-]?\d{4,}-\d{1,2}-\d{1,2}[ T]\d"
UTC_NAMES = {"UTC", "Etc/UTC"}


def has_zone(pattern: str) -> bool:
    """Whether a Spark datetime pattern reads a zone or an offset (V, z, O, X, x, Z outside quotes)."""
    unquoted = re.sub(r"'[^']*'", "", pattern)
    return any(letter in unquoted for letter in "VzOXxZ")


def cast_strictly(
    df: DataFrame,
    types: dict[str, DataType],
    first_reasons: list[str | None],
    raw: str,
    timestamp_format: str | None = None,
    date_format: str | None = None,
    parsers: dict[str, Callable[[str], str]] | None = None,
    timezone: str = "UTC",
) -> DataFrame:
    """Cast each column to its type; a value that is present but does not parse gives a reason.
    `first_reasons` and `raw` are SQL expressions (the reasons found before the casts, the record's
    text); `parsers` turn the SQL of some columns' text into their type instead of a cast. Naive
    timestamps are read in `timezone` (see the module's docstring). One projection, built as SQL
    text (see lakefresh.lakehouse.functions)."""
    from pyspark.sql import types as T

    schema = {f.name: f.dataType for f in df.schema.fields}

    def leaf(source: str, type_: DataType, source_type: DataType | None = None) -> Leaf:
        return leaf_cast(
            source, type_, source_type or T.StringType(), timezone, timestamp_format, date_format
        )

    casts: dict[str, str] = {}
    reasons = [r for r in first_reasons if r is not None]
    for column, type_ in types.items():
        source = quote(column)
        source_type = schema[column]
        if source_type == type_:
            continue
        not_valid = _quoting(column, source, f"' is not a valid {type_.simpleString()}")
        if isinstance(source_type, T.StringType) and is_nested(type_) and not (parsers and column in parsers):
            casts[column], valid = from_json_text(source, type_, lambda text, kind: leaf(text, kind)[:2])
            reasons.append(f"CASE WHEN NOT {valid} THEN {not_valid} END")
            continue
        problem = None
        if parsers and column in parsers:
            cast = parsers[column](source)
        else:
            cast, inexact, why = leaf(source, type_, source_type)
            if inexact is not None:
                problem = f"CASE WHEN {inexact} THEN {_quoting(column, source, str(why))} END"
        casts[column] = cast
        invalid = f"CASE WHEN {source} IS NOT NULL AND ({cast}) IS NULL THEN {not_valid} END"
        reasons.append(invalid if problem is None else f"coalesce({problem}, {invalid})")
    reason = f"nullif(concat_ws('; ', {', '.join(reasons)}), '')" if reasons else "CAST(NULL AS STRING)"
    return df.selectExpr(
        *[f"{casts.get(c, quote(c))} AS {quote(c)}" for c in schema if c not in SCRATCH_COLUMNS],
        f"{reason} AS {REASON_COLUMN}",
        f"{raw} AS {RAW_COLUMN}",
    )


Leaf = tuple[str, str | None, str | None]  # the cast, when it is not exact, and what then follows the value


def leaf_cast(
    source: str,
    type_: DataType,
    source_type: DataType,
    timezone: str,
    timestamp_format: str | None,
    date_format: str | None,
) -> Leaf:
    """SQL of `source` cast to a type that is not nested; SQL of the condition that the value
    exists but the cast does not hold it exactly (a wall-clock time the zone skips, a number
    rounded to fit), and the text that then follows the value in the reason."""
    from pyspark.sql import types as T

    if isinstance(type_, T.TimestampType) and isinstance(
        source_type, T.StringType | T.DateType | T.TimestampNTZType
    ):
        cast, gap = to_instant(source, source_type, timezone, timestamp_format)
        return cast, gap, f"' does not exist in {timezone} (daylight saving gap)"
    if isinstance(type_, T.DateType) and date_format:
        return try_to_date_sql(source, date_format), None, None
    if isinstance(type_, T.DateType) and isinstance(source_type, T.StringType):
        # Spark's cast ignores what follows `yyyy-mm-dd ` ('2025-01-31 garbage'): a date, or a time
        timed = try_cast_sql(source, T.TimestampType())
        whole = f"{source} RLIKE {sql_literal(NAIVE_TEXT)} OR {timed} IS NOT NULL"
        return f"CASE WHEN {whole} THEN {try_cast_sql(source, type_)} END", None, None
    if isinstance(source_type, T.StringType) and isinstance(type_, T.StringType):
        return source, None, None
    text = isinstance(source_type, T.StringType)
    number = isinstance(type_, T.IntegralType | T.FractionalType | T.DecimalType)
    value = f"trim({source})" if text and number else source
    cast = try_cast_sql(value, type_)
    rounded = f"' does not fit {type_.simpleString()} without rounding"
    if text and isinstance(type_, T.DecimalType):  # a cast to a decimal rounds to its scale
        # a digit other than 0 after the scale's last, written plainly or (wider) as 1.2E1
        beyond = sql_literal(f"^[+-]?[0-9]*\\.[0-9]{{{type_.scale}}}[0-9]*[1-9][0-9]*$")
        wide = T.DecimalType(38, 38 - (type_.precision - type_.scale))
        return cast, f"({value} RLIKE {beyond} OR {try_cast_sql(value, wide)} <> {cast})", rounded
    exact = isinstance(type_, T.IntegralType | T.DecimalType)
    if not text and exact and isinstance(source_type, T.FloatType | T.DoubleType):  # last bits: noise
        slack = "1e-6" if isinstance(source_type, T.FloatType) else "1e-12"
        return cast, f"abs(CAST({cast} AS DOUBLE) - {source}) > abs({source}) * {slack}", rounded
    if not text and exact and isinstance(source_type, T.NumericType):
        return cast, f"{try_cast_sql(cast, source_type)} <> {source}", rounded
    return cast, None, None  # text casts to an integer exactly or not at all; floats are approximate


def _quoting(column: str, source: str, after: str) -> str:
    """SQL for the text `<column>: '<value><after>`."""
    before = sql_literal(f"{column}: '")
    return f"concat({before}, CAST({source} AS STRING), {sql_literal(after)})"


def to_instant(
    source: str, source_type: DataType, zone: str, timestamp_format: str | None
) -> tuple[str, str | None]:
    """SQL for a timestamp (an instant) from text, a date or a TIMESTAMP_NTZ (`source`, SQL),
    whatever the session's time zone; and, unless the zone is UTC, SQL for the condition that the
    wall-clock time does not exist in the zone (the instant is then NULL)."""
    from pyspark.sql import types as T

    zoned: str | None = None
    if not isinstance(source_type, T.StringType):
        wall = f"CAST({source} AS TIMESTAMP_NTZ)"
    elif timestamp_format and has_zone(timestamp_format):
        return try_to_timestamp_sql(source, timestamp_format), None  # the text gives its zone
    elif timestamp_format:
        # to_timestamp_ntz has no TRY form on 3.5: it runs only where the text parses
        parses = f"{try_to_timestamp_sql(source, timestamp_format)} IS NOT NULL"
        wall = f"CASE WHEN {parses} THEN to_timestamp_ntz({source}, {sql_literal(timestamp_format)}) END"
    else:
        naive = f"({source} RLIKE {sql_literal(NAIVE_TEXT)})"
        wall = f"CASE WHEN {naive} THEN {try_cast_sql(source, T.TimestampNTZType())} END"
        dated = f"{source} RLIKE {sql_literal(DATED_TEXT)}"
        zoned = f"CASE WHEN NOT {naive} AND {dated} THEN {try_cast_sql(source, T.TimestampType())} END"
    wall = f"({wall})"
    fields = (
        *(f"{part}({wall})" for part in ("year", "month", "dayofmonth", "hour", "minute")),
        f"date_part('SECOND', {wall})",  # with the fraction: decimal(8,6)
    )
    as_utc = f"make_timestamp({', '.join(fields)}, 'UTC')"  # the wall-clock time, read in UTC
    gap = None
    if zone in UTC_NAMES:
        instant = as_utc
    else:
        # a wall-clock time the zone skips moves forward here: caught by `gap`
        shifted = f"to_utc_timestamp({as_utc}, {sql_literal(zone)})"
        gap = f"(from_utc_timestamp({shifted}, {sql_literal(zone)}) != {as_utc})"
        instant = f"CASE WHEN NOT {gap} THEN {shifted} END"
    return (instant if zoned is None else f"coalesce({instant}, {zoned})"), gap


def as_json(columns: list[str]) -> str:
    """SQL for a record's values as a JSON object (its text in the quarantine)."""
    return f"to_json(struct({', '.join(quote(c) for c in columns)}))"


def bad_encoding(columns: list[str]) -> str | None:
    """SQL for the reason of rows with U+FFFD in a value, as bytes that are not valid UTF-8: a
    heuristic (a genuine U+FFFD counts too) kept for the `synapse_link` source; `files` checks the
    bytes exactly."""
    if not columns:
        return None
    hit = " OR ".join(
        f"coalesce(instr({quote(c)}, {sql_literal(REPLACEMENT_CHAR)}) > 0, FALSE)" for c in columns
    )
    return f"CASE WHEN {hit} THEN 'bytes that are not valid UTF-8' END"


def parse_type(name: str) -> DataType:
    """A type from its SQL name, parsed by Spark once per name (a round trip to the JVM)."""
    return _parsed_type(" ".join(name.split()))


@functools.lru_cache(maxsize=256)
def _parsed_type(name: str) -> DataType:
    from lakefresh.lakehouse.session import parse_schema

    return parse_schema(f"x {name}").fields[0].dataType


def number_records(
    raw: DataFrame, columns: list[str], header_lines: int, one_task: bool = False, span: str | None = None
) -> DataFrame:
    """Add the file, the record ordinal in it, and the physical line the record starts on.
    `one_task`: the files are read in one partition, so that numbering them per file (a window)
    needs no shuffle (for a small batch, a stage less). `span`: SQL for the lines a record takes,
    where that is not the newlines in its text values plus one (a JSON Lines record: one line)."""
    with_file = raw.selectExpr(
        "*", f"input_file_name() AS {FILE_COLUMN}", "monotonically_increasing_id() AS _lf_order"
    )
    if one_task:
        with_file = with_file.coalesce(1)
    in_file = f"PARTITION BY {FILE_COLUMN} ORDER BY _lf_order"
    before = f"{in_file} ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING"
    first_line = header_lines + 1
    lines_before = f"sum({span or record_span(columns)}) OVER ({before})"
    return with_file.selectExpr(
        *[quote(c) for c in raw.columns],
        FILE_COLUMN,
        f"CAST(row_number() OVER ({in_file}) AS BIGINT) AS {RECORD_COLUMN}",
        f"CAST(coalesce({lines_before}, 0) + {first_line} AS BIGINT) AS {LINE_COLUMN}",
    )


def record_span(columns: list[str]) -> str:
    """SQL for the physical lines a record takes: 1 + the newlines in its values (or its raw
    text)."""
    values = " + ".join(f"coalesce({_count_newlines(quote(c))}, 0)" for c in columns) or "0"
    return f"(CASE WHEN {CORRUPT} IS NOT NULL THEN {_count_newlines(CORRUPT)} ELSE {values} END + 1)"


def _count_newlines(text: str) -> str:
    return f"(length({text}) - length(replace({text}, '\\n', '')))"
