"""The Common Data Model `model.json` that Azure Synapse Link writes into every folder it exports:
each entity's columns in the order of its headerless CSV files, and their data types.

Data types become Spark types as follows (the value text Synapse writes, then how it is read):

| model.json `dataType` | Spark type       | value text and parsing                                       |
|-----------------------|------------------|--------------------------------------------------------------|
| `string`, `guid`      | `string`         | as written                                                   |
| `int64`               | `bigint`         | digits                                                       |
| `int32`               | `int`            | digits                                                       |
| `int16`               | `smallint`       | digits                                                       |
| `byte`                | `tinyint`        | digits                                                       |
| `decimal`             | `decimal(38,18)` | `12.50`; more than 18 decimals are rounded                   |
| `double`, `float`     | `double`         | `1.5`, `1E-05`                                               |
| `boolean`             | `boolean`        | `True`/`False` (also `true`, `1`, `0`)                       |
| `date`                | `date`           | `2025-01-31`                                                 |
| `dateTime`            | `timestamp`      | `6/28/2021 4:34:35 PM` (SinkCreatedOn, SinkModifiedOn) or ISO |
|                       |                  | `2021-06-25T16:21:12Z`, `2018-05-25T16:21:09.0000000`: UTC    |
| `dateTimeOffset`      | `timestamp`      | `2018-05-25T16:21:09.0000000+00:00`, normalized to UTC       |
| anything else         | `string`         | as written (e.g. `time`), so no value is lost                |

A value that is present but does not parse sends its row to quarantine with the column and the
text, as in the `files` source.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from lakefresh.errors import SourceError
from lakefresh.lakehouse.functions import try_to_timestamp_sql
from lakefresh.lakehouse.sql import sql_literal

SPARK_TYPES = {
    "string": "string",
    "guid": "string",
    "int64": "bigint",
    "int32": "int",
    "int16": "smallint",
    "byte": "tinyint",
    "decimal": "decimal(38,18)",
    "double": "double",
    "float": "double",
    "boolean": "boolean",
    "date": "date",
    "datetime": "timestamp",
    "datetimeoffset": "timestamp",
}
# SinkCreatedOn and SinkModifiedOn are written as US-style local text (in UTC)
US_TIMESTAMP = "M/d/yyyy h:mm:ss a XXX"
ZONE_SUFFIX = "(Z|[+-][0-9][0-9]:?[0-9][0-9])$"


@dataclass(frozen=True)
class Attribute:
    name: str
    data_type: str  # as model.json spells it

    @property
    def spark_type(self) -> str:
        return SPARK_TYPES.get(self.data_type.lower(), "string")


@dataclass(frozen=True)
class Entity:
    name: str
    attributes: tuple[Attribute, ...]
    delimiter: str = ","

    @property
    def columns(self) -> list[str]:
        return [a.name for a in self.attributes]


def read_model(text: str, where: str) -> dict[str, Entity]:
    """The entities of a model.json, by lower-cased name.

    Raises:
        SourceError: the text is not a model.json (not JSON, or no entities with attributes).
    """
    try:
        model = json.loads(text)
        entities = {}
        for raw in model["entities"]:
            attributes = tuple(Attribute(str(a["name"]), str(a["dataType"])) for a in raw["attributes"])
            names = [a.name.lower() for a in attributes]
            if not attributes or len(set(names)) != len(names):
                raise ValueError(f"entity {raw['name']!r} must name each attribute once")
            settings = [p.get("fileFormatSettings") or {} for p in raw.get("partitions") or []]
            delimiter = next((str(s["delimiter"]) for s in settings if s.get("delimiter")), ",")
            entities[str(raw["name"]).lower()] = Entity(str(raw["name"]), attributes, delimiter)
    except (ValueError, KeyError, TypeError) as exc:
        raise SourceError(f"{where}: not a readable model.json: {exc}") from exc
    return entities


def parser(attribute: Attribute) -> Callable[[str], str] | None:
    """How the text of an attribute (SQL) becomes its Spark type (SQL) when a plain cast cannot
    (timestamps); None when a cast does."""
    if attribute.spark_type != "timestamp":
        return None
    return _timestamp


def _timestamp(text: str) -> str:
    trimmed = f"trim({text})"
    us_style = try_to_timestamp_sql(f"concat({trimmed}, ' +00:00')", US_TIMESTAMP)
    has_zone = f"{trimmed} RLIKE {sql_literal(ZONE_SUFFIX)}"
    zoned = f"CASE WHEN {has_zone} THEN {trimmed} ELSE concat({trimmed}, 'Z') END"
    return f"coalesce({us_style}, {try_to_timestamp_sql(zoned)})"


# Loose text shapes of the types that model.json declares, to tell a misplaced column from a bad
# value (see `misfits`); anything a shape rejects, Spark's parsing rejects too.
_SHAPES = {
    "bigint": re.compile(r"^\s*[+-]?\d+\s*$"),
    "int": re.compile(r"^\s*[+-]?\d+\s*$"),
    "smallint": re.compile(r"^\s*[+-]?\d+\s*$"),
    "tinyint": re.compile(r"^\s*[+-]?\d+\s*$"),
    "decimal(38,18)": re.compile(r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$"),
    "double": re.compile(r"^\s*[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|NaN|Infinity)\s*$", re.I),
    "boolean": re.compile(r"^\s*(true|false|t|f|yes|no|y|n|1|0)\s*$", re.I),
    "date": re.compile(r"^\s*(\d{4}-\d{1,2}-\d{1,2}|\d{1,2}/\d{1,2}/\d{4})"),
    "timestamp": re.compile(r"^\s*(\d{4}-\d{1,2}-\d{1,2}|\d{1,2}/\d{1,2}/\d{4})"),
}


def misfits(entity: Entity, records: list[list[str]]) -> dict[str, list[str]]:
    """Columns whose every value in `records` (at least two) has the wrong shape for the column's
    type, with those values: the sign of a model.json whose columns do not line up with the data
    (reordered). One bad value is a bad row, for quarantine; a whole column of them is not.
    Columns of type string take any text, so a swap between two of them cannot be seen here."""
    found = {}
    for position, attribute in enumerate(entity.attributes):
        shape = _SHAPES.get(attribute.spark_type)
        if shape is None:
            continue
        values = [r[position] for r in records if position < len(r) and r[position] != ""]
        if len(values) >= 2 and not any(shape.match(v) for v in values):
            found[attribute.name] = values
    return found
