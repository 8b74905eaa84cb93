"""Spark's datetime patterns (`csv.date_format`, `csv.timestamp_format`) read in Python, as
`to_timestamp(text, pattern)` reads them: the whole text must match, numbers of the width the
letters give (`dd`: two digits, `d`: one or two), the fields must make a real date and time.

Only the letters sources commonly use are read here: years (`y`, `u`), months (`M`, `L`, also by
name: `MMM`, `MMMM`), days (`d`), hours (`H`, `h`, `k`, `K`), minutes, seconds, fractions (`S`),
AM/PM (`a`), zone offsets (`X`, `x`, `Z`) and zone names (`VV`), and quoted text. A pattern with any
other letter gives None: `validate` then leaves its values to the run.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from functools import lru_cache
from zoneinfo import ZoneInfo

_MONTHS = [m.lower() for m in calendar.month_name[1:]]
_ABBREVIATIONS = [m.lower() for m in calendar.month_abbr[1:]]
# X and x by their count: +01 or +0100; +0100; +01:00 (X also takes Z)
_OFFSETS = {1: r"[+-][0-9]{2}(?:[0-9]{2})?", 2: r"[+-][0-9]{4}", 3: r"[+-][0-9]{2}:[0-9]{2}"}
_LETTER_RUN = re.compile(r"'(?:[^']|'')*'|([A-Za-z])\1*|.", re.S)


@dataclass(frozen=True)
class Parsed:
    """A text read by a pattern: its wall-clock fields, and its offset or zone when it gave one."""

    wall: datetime
    zone: timezone | ZoneInfo | None


Reader = Callable[[str], Parsed | None]


@lru_cache(maxsize=64)
def reader(pattern: str) -> Reader | None:
    """A function that reads text by this pattern (None when the text does not match it, or its
    fields are not a real date and time); None when the pattern uses letters this module does
    not read."""
    parts: list[str] = []
    for match in _LETTER_RUN.finditer(pattern):
        token = match.group(0)
        if token.startswith("'"):
            parts.append(re.escape(token[1:-1].replace("''", "'") if token != "''" else "'"))
        elif match.group(1):
            regex = _field(token)
            if regex is None:
                return None
            parts.append(regex)
        else:
            parts.append(re.escape(token))
    compiled = re.compile("".join(parts), re.IGNORECASE)
    return lambda text: _parsed(compiled.fullmatch(text))


def _field(token: str) -> str | None:
    """The named regex group for a run of one pattern letter, or None for a letter not read."""
    letter, width = token[0], len(token)
    numbers = {"y": "year", "u": "year", "M": "month", "L": "month", "d": "day", "H": "hour24"}
    numbers |= {"k": "hour24", "h": "hour12", "K": "hour12", "m": "minute", "s": "second"}
    if letter in "yu":
        return rf"(?P<year>[0-9]{{{width}}})" if width in (2, 4) else r"(?P<year>[+-]?[0-9]{4,9})"
    if letter in "ML" and width >= 3:
        names = _ABBREVIATIONS if width == 3 else _MONTHS
        return f"(?P<month_name>{'|'.join(names)})"
    if letter in numbers and width <= 2:
        digits = r"[0-9]{2}" if width == 2 else r"[0-9]{1,2}"
        return f"(?P<{numbers[letter]}>{digits})"
    if letter == "S" and width <= 9:
        return rf"(?P<fraction>[0-9]{{1,{width}}})"
    if letter == "a" and width == 1:
        return "(?P<half>AM|PM)"
    if letter in "Xx" and width <= 3:
        offset = _OFFSETS[width]
        return f"(?P<offset>Z|{offset})" if letter == "X" else f"(?P<offset>{offset})"
    if letter == "Z" and width <= 3:
        return r"(?P<offset>[+-][0-9]{4})"
    if letter == "V" and width == 2:
        return r"(?P<zone>[A-Za-z_]+(?:/[A-Za-z_+-]+)*)"
    return None


def _parsed(match: re.Match[str] | None) -> Parsed | None:
    if match is None:
        return None
    fields = {k: v for k, v in match.groupdict().items() if v is not None}
    year = int(fields.get("year", "1970"))
    if len(fields.get("year", "")) == 2:
        year += 2000
    if "month_name" in fields:
        name = fields["month_name"].lower()
        month = (_MONTHS.index(name) if name in _MONTHS else _ABBREVIATIONS.index(name)) + 1
    else:
        month = int(fields.get("month", "1"))
    hour = int(fields.get("hour24", "0"))
    if "hour12" in fields:
        hour = int(fields["hour12"])
        if not 1 <= hour <= 12 or "half" not in fields:
            return None
        hour = hour % 12 + (12 if fields["half"].upper() == "PM" else 0)
    fraction = int(fields.get("fraction", "0").ljust(6, "0")[:6])
    try:
        wall = datetime(year, month, int(fields.get("day", "1")), hour, int(fields.get("minute", "0")))
        wall = wall.replace(second=int(fields.get("second", "0")), microsecond=fraction)
        return Parsed(wall, _zone(fields))
    except (ValueError, KeyError):
        return None


def _zone(fields: dict[str, str]) -> timezone | ZoneInfo | None:
    if "zone" in fields:
        return ZoneInfo(fields["zone"])  # KeyError (ZoneInfoNotFoundError): not a zone
    offset = fields.get("offset")
    if offset is None:
        return None
    if offset.upper() == "Z":
        return UTC
    digits = offset[1:].replace(":", "")
    minutes = int(digits[:2]) * 60 + int(digits[2:4] or "0")
    if minutes >= 18 * 60:
        raise ValueError(offset)
    return timezone(timedelta(minutes=-minutes if offset[0] == "-" else minutes))
