"""A `files` batch's time and order from its metadata, besides the newest
modification time of its files.

- `batch_time: {name: <regex>}`: from the batch's file or folder name, by a regular expression
  with a group named `time` (ISO 8601, or a `format` for `datetime.strptime`, microseconds with
  `%f`); an offset converts to UTC, a time without one is UTC. A name that does not match is an
  error naming the batch.
- `batch_time: {metadata: <file name>, field: <key>}`: from a small JSON file beside the batch
  (`{batch}` and `{stem}` stand for the batch's name and its name without extension; with
  `layout: folder`, a file inside the folder). A batch whose metadata file is not there yet waits,
  as one without its completion marker does; metadata files are never batches themselves.
- `batch_time: {column: <column>}`: the batch's largest value of a column, known once it is read.

`order_by: batch_time` orders batches by that time (then name); `order_by: version` by the
integer the `version` regular expression's first group finds in the name (2 before 10, as
snapshot versions), as Databricks' AUTO CDC FROM SNAPSHOT orders its snapshots.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from lakefresh.errors import SourceError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from lakefresh.config.sources import BatchTimeConfig


def parse_time(text: str, fmt: str | None, where: str) -> datetime:
    """Text to a naive UTC datetime, exactly (microseconds kept)."""
    try:
        value = datetime.strptime(text, fmt) if fmt else datetime.fromisoformat(text)
    except ValueError as exc:
        how = f"format {fmt!r}" if fmt else "ISO 8601 (e.g. 2025-01-31T14:05:00.123456Z)"
        raise SourceError(f"{where}: {text!r} is no time in {how}: {exc}") from None
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value


def time_from_name(name: str, cfg: BatchTimeConfig) -> datetime:
    assert cfg.name is not None
    found = re.search(cfg.name, name)
    if not found:
        raise SourceError(
            f"batch {name!r}: its name does not match batch_time.name {cfg.name!r}, so it has no time"
        )
    return parse_time(found.group("time"), cfg.format, f"batch {name!r}")


def metadata_name(cfg: BatchTimeConfig, batch_id: str) -> str:
    """The metadata file's name for a batch."""
    assert cfg.metadata is not None
    stem = batch_id.rsplit(".", 1)[0] if "." in batch_id else batch_id
    return cfg.metadata.replace("{batch}", batch_id).replace("{stem}", stem)


def time_from_metadata(text: str, cfg: BatchTimeConfig, where: str) -> datetime:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceError(f"{where}: not JSON ({exc})") from None
    if not isinstance(document, dict) or cfg.field not in document:
        raise SourceError(f"{where}: no field {cfg.field!r} (batch_time.field)")
    value = document[cfg.field]
    if isinstance(value, int | float) and not isinstance(value, bool):  # seconds since the epoch
        return datetime.fromtimestamp(value, UTC).replace(tzinfo=None)
    return parse_time(str(value), cfg.format, where)


def version_of(name: str, pattern: str) -> int:
    found = re.search(pattern, name)
    if not found or not found.group(1).isdigit():
        raise SourceError(f"batch {name!r}: no integer version in its name by version {pattern!r}")
    return int(found.group(1))


def time_from_rows(rows: DataFrame, column: str, batch_id: str) -> datetime | None:
    """With `batch_time: {column: c}`: the batch's time, the largest value of c in its rows to
    load (UTC); None when they hold none (the files' time stands)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from lakefresh.lakehouse.functions import try_to_timestamp
    from lakefresh.lakehouse.sql import quote

    if column not in rows.columns:
        raise SourceError(f"batch {batch_id!r} has no column {column!r} (batch_time.column)")
    kind = rows.schema[column].dataType
    value = F.col(quote(column))
    if isinstance(kind, T.StringType):
        value = try_to_timestamp(value)
    elif not isinstance(kind, T.TimestampType | T.TimestampNTZType | T.DateType):
        raise SourceError(
            f"batch_time.column {column!r} is {kind.simpleString()}: give a timestamp, a date or ISO text"
        )
    if isinstance(kind, T.DateType):
        day = rows.agg(F.max(value)).first()[0]  # type: ignore[index]
        return None if day is None else datetime(day.year, day.month, day.day)
    # as microseconds: a collected timestamp would come back in the machine's own zone
    found = rows.agg(F.unix_micros(F.max(value).cast("timestamp"))).first()[0]  # type: ignore[index]
    if found is None:
        return None
    return datetime(1970, 1, 1) + timedelta(microseconds=found)
