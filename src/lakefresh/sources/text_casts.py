"""The run's strict casts of text (sources/text.py `cast_strictly`), judged in Python: whether a
value a file holds parses as its column's declared type, so that `lakefresh validate` can say,
without Spark, which values a run would quarantine.

The rules follow Spark's `TRY_CAST` from text and lakefresh's own checks on top of it:
- integers (`tinyint`, `smallint`, `int`, `bigint`): digits with an optional sign, in range; no
  fraction (`10.50` is not an int, nor is `10.0`), no exponent;
- `float`, `double`: Java's number syntax (`1.5`, `.5`, `1e3`, `1.5d`, `0x1p3`) and `NaN`,
  `Infinity`, `inf`; never out of range (too large is infinity);
- `decimal(p,s)`: a number (`1.5`, `1.2E1`) that fits p digits with s after the point without
  rounding (`10.505` does not fit `decimal(4,2)`);
- `boolean`: `true`, `t`, `yes`, `y`, `1` and `false`, `f`, `no`, `n`, `0`, in any case;
- `date`, `timestamp`: ISO text (`2025-01-31`, `2025-01-31 10:00:00`, `...T10:00:00+01:00`), or
  the source's `date_format` / `timestamp_format` (datetime_patterns.py); a naive timestamp must
  exist in the source's time zone;
- `string`, `binary`: any text. Nested types (`struct`, `array`, `map`) are not judged here.
Numbers and booleans are read after trimming blanks; dates and timestamps as Spark trims them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from zoneinfo import ZoneInfo

from lakefresh.sources.datetime_patterns import Parsed, Reader, reader

_INTEGERS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64}
_ALIASES = {"integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint", "real": "float"}
_DECIMAL = re.compile(r"decimal\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?", re.I)
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
_JAVA_NUMBER = re.compile(
    r"[+-]?(?:(?:[0-9]+[.]?[0-9]*|[.][0-9]+)(?:[eE][+-]?[0-9]+)?"
    r"|0[xX](?:[0-9a-fA-F]+[.]?[0-9a-fA-F]*|[.][0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?"
)
_SPECIAL_FLOATS = {"nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"}
_DECIMAL_TEXT = re.compile(r"[+-]?(?:[0-9]+[.]?[0-9]*|[.][0-9]+)(?:[eE][+-]?[0-9]+)?")
_TRUE = {"true", "t", "yes", "y", "1"}
_FALSE = {"false", "f", "no", "n", "0"}
# ISO dates and times as Spark's cast reads them: a year of 4 to 7 digits, one- or two-digit fields
_ISO = re.compile(
    r"[+-]?(?P<year>[0-9]{4,7})(?:-(?P<month>[0-9]{1,2})(?:-(?P<day>[0-9]{1,2})"
    r"(?:[ T](?:(?P<hour>[0-9]{1,2})(?::(?P<minute>[0-9]{1,2})(?::(?P<second>[0-9]{1,2})"
    r"(?:[.](?P<fraction>[0-9]{0,9}))?)?)?(?P<zone>.*))?)?)?)?",
    re.S,
)
# naive date-time text as the run matches it first (sources/text.py NAIVE_TEXT), with its date
_NAIVE = re.compile(
    r"\s*[+-]?([0-9]{4,})(?:-([0-9]{1,2})(?:-([0-9]{1,2})"
    r"(?:[ T](?:[0-9]{1,2}(?::[0-9]{1,2}(?::[0-9]{1,2}(?:[.][0-9]*)?)?)?)?)?)?)?\s*",
    re.ASCII,
)
_OFFSET = re.compile(r"(?:UTC|GMT|UT)?\s*([+-])([0-9]{1,2})(?::?([0-9]{2}))?(?::?([0-9]{2}))?", re.I)
# Java's short zone names, which Spark takes too (ZoneId.SHORT_IDS)
_SHORT_ZONES = {
    *("ACT", "AET", "AGT", "ART", "AST", "BET", "BST", "CAT", "CNT", "CST", "CTT", "EAT", "ECT", "EST"),
    *("HST", "IET", "IST", "JST", "MIT", "MST", "NET", "NST", "PLT", "PNT", "PRT", "PST", "SST", "VST"),
}
_BLANKS = "".join(chr(c) for c in range(33))  # what Spark trims from text before a cast


@dataclass(frozen=True)
class Declared:
    """A declared column type as the casts see it: its Spark name, and for decimals the digits."""

    name: str  # Spark's spelling: int, bigint, decimal(10,2), timestamp...
    precision: int = 0
    scale: int = 0

    @property
    def judged(self) -> bool:
        """Whether values are judged against it (not text, bytes or a nested type)."""
        return self.name not in ("string", "binary") and "<" not in self.name


def declared(type_text: str) -> Declared:
    """A declared type (as config/types.py accepts it) in Spark's spelling."""
    text = " ".join(type_text.split()).lower()
    number = _DECIMAL.fullmatch(text)
    if number:
        precision, scale = int(number.group(1) or 10), int(number.group(2) or 0)
        return Declared(f"decimal({precision},{scale})", precision, scale)
    return Declared(_ALIASES.get(text, text))


@dataclass(frozen=True)
class Formats:
    """The source's options that a cast of text reads."""

    date_format: str | None = None
    timestamp_format: str | None = None
    timezone: str = "UTC"


def holds(type_: Declared, text: str, formats: Formats) -> bool | None:
    """Whether the run casts this text (a value that is present) to the type; None when this
    module cannot tell (a pattern with letters it does not read, a type it does not judge)."""
    name = type_.name
    if not type_.judged:
        return None
    if name in _INTEGERS:
        return _integer(text.strip(" "), _INTEGERS[name])
    if name in ("float", "double"):
        return _floating(text.strip(" "))
    if name.startswith("decimal"):
        return _decimal(text.strip(" "), type_.precision, type_.scale)
    if name == "boolean":
        return text.strip(_BLANKS).lower() in _TRUE | _FALSE
    if name == "date":
        return _date(text, formats)
    if name == "timestamp":
        return _timestamp(text, formats)
    if name == "timestamp_ntz":
        return _timestamp_ntz(text)
    return None


def _integer(text: str, bits: int) -> bool:
    text = text.strip(_BLANKS)
    if not _INTEGER_TEXT.fullmatch(text):
        return False
    return -(1 << (bits - 1)) <= int(text) < 1 << (bits - 1)


def _floating(text: str) -> bool:
    text = text.strip(_BLANKS)
    return text.lower() in _SPECIAL_FLOATS or _JAVA_NUMBER.fullmatch(text) is not None


def _decimal(text: str, precision: int, scale: int) -> bool:
    text = text.strip(_BLANKS)
    if not _DECIMAL_TEXT.fullmatch(text):
        return False
    try:
        value = Decimal(text)
        rounded = value.quantize(Decimal(1).scaleb(-scale))
    except InvalidOperation:
        return False
    return rounded == value and abs(rounded) < Decimal(10) ** (precision - scale)


def _date(text: str, formats: Formats) -> bool | None:
    """A date, or naive date-time text whose date is one (Spark reads the date and leaves the
    rest, `2025-01-31 25:00:00` too), or a timestamp Spark reads (with a zone)."""
    if formats.date_format:
        read = reader(formats.date_format)
        return None if read is None else _read(read, text) is not None
    naive = _NAIVE.fullmatch(text)
    if naive is None:
        return _iso(text) is not None
    if len(naive.group(1)) > 7:  # Spark's dates have years of 4 to 7 digits
        return False
    try:
        date(_same_calendar(int(naive.group(1))), int(naive.group(2) or 1), int(naive.group(3) or 1))
    except ValueError:
        return False
    return True


def _timestamp(text: str, formats: Formats) -> bool | None:
    if formats.timestamp_format:
        read = reader(formats.timestamp_format)
        if read is None:
            return None
        parsed = _read(read, text)
        return parsed is not None and (parsed.zone is not None or _exists(parsed.wall, formats.timezone))
    found = _iso(text)
    if found is None:
        return False
    wall, zoned, timed = found
    return timed if zoned else _exists(wall, formats.timezone)


def _timestamp_ntz(text: str) -> bool:
    return _iso(text) is not None


def _read(read: Reader, text: str) -> Parsed | None:
    try:
        return read(text)
    except (ValueError, KeyError):  # an offset out of range, a zone that is not one
        return None


def _exists(wall: datetime, zone_name: str) -> bool:
    """Whether a wall-clock time exists in the zone (it is not in a daylight saving gap)."""
    if zone_name in ("UTC", "Etc/UTC") or not 1 < wall.year < 9999:
        return True
    zone = ZoneInfo(zone_name)
    return wall.replace(tzinfo=zone).astimezone(UTC).astimezone(zone).replace(tzinfo=None) == wall


def _iso(text: str) -> tuple[datetime, bool, bool] | None:
    """ISO text as Spark's cast reads it: the wall-clock time, whether a zone follows it, and
    whether it has a time of day; None when it is not a date (and time) Spark reads."""
    match = _ISO.fullmatch(text.strip(_BLANKS))
    if match is None:
        return None
    fields = match.groupdict()
    zone = (fields["zone"] or "").strip(" ")
    if zone and not _is_zone(zone):
        return None
    if zone and fields["zone"].startswith(" ") and fields["second"] is None:
        return None  # a zone after a blank follows seconds (10:00:00 UTC, not 10:00 UTC)
    try:
        year = int(fields["year"])
        day = date(_same_calendar(year), int(fields["month"] or 1), int(fields["day"] or 1))
        hour, minute = int(fields["hour"] or 0), int(fields["minute"] or 0)
        wall = datetime(day.year, day.month, day.day, hour, minute, int(fields["second"] or 0))
    except ValueError:
        return None
    return wall, bool(zone), fields["hour"] is not None


def _same_calendar(year: int) -> int:
    """A year Python's dates hold with the same calendar (leap or not) as `year`."""
    if 1 <= year <= 9999:
        return year
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 2000 if leap else 2001


def _is_zone(text: str) -> bool:
    """Whether Spark reads this as a zone after a time: Z, an offset (+01, +01:00, +0100, UTC+1),
    or a zone's name (Europe/Paris, UTC, EST)."""
    if text in ("Z", "z") or _OFFSET.fullmatch(text):
        offset = _OFFSET.fullmatch(text)
        return offset is None or int(offset.group(2)) <= 18
    if text.upper() in ("UTC", "GMT", "UT") or text in _SHORT_ZONES:
        return True
    try:
        ZoneInfo(text)
    except (ValueError, KeyError):
        return False
    return True


def holds_typed(type_: Declared, value: object, file_type: str) -> bool | None:
    """Whether the run casts a typed value (a Parquet file's number) to the type without
    rounding; None for the pairs of types this module does not judge."""
    name = type_.name
    if name in ("string", "float", "double") and file_type != "other":
        return True
    exact = name in _INTEGERS or name.startswith("decimal")
    if not exact or file_type in ("boolean", "other") or isinstance(value, bool):
        return None
    if isinstance(value, float):
        if not math.isfinite(value):
            return False
        slack = abs(value) * (1e-6 if file_type == "float" else 1e-12)
        held = math.trunc(value) if name in _INTEGERS else _rounded(Decimal(value), type_.scale)
        return _in_range(type_, Decimal(held)) and abs(float(held) - value) <= slack
    if not isinstance(value, int | Decimal):
        return None
    number = Decimal(value)
    held_exactly = number == number.to_integral_value() if name in _INTEGERS else True
    if name.startswith("decimal"):
        held_exactly = _rounded(number, type_.scale) == number
    return held_exactly and _in_range(type_, number)


def _rounded(number: Decimal, scale: int) -> Decimal:
    return number.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)


def _in_range(type_: Declared, number: Decimal) -> bool:
    if type_.name in _INTEGERS:
        bits = _INTEGERS[type_.name]
        return -(1 << (bits - 1)) <= number < 1 << (bits - 1)
    return abs(_rounded(number, type_.scale)) < Decimal(10) ** (type_.precision - type_.scale)
