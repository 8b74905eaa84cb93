"""Write folder trees laid out as Azure Synapse Link "Incremental CSV" exports, for tests, demos
and trying the `synapse_link` source without Azure.

The layout matches what Synapse Link writes into its container:

    <root>/
      Changelog/changelog.info            the folder being written now, e.g. 2025-01-01T12.00.00Z
      2025-01-01T10.00.00Z/
        model.json                        CDM schema of every exported entity; partitions list
        account/2025.csv                  headerless CSV, values quoted, NULL as nothing
        account/1.csv                     deletes (Id, SinkModifiedOn, IsDelete; the rest NULL)
      2025-01-01T11.00.00Z/ ...

Values are written as Synapse writes them: `SinkCreatedOn`/`SinkModifiedOn` as `6/28/2021 4:34:35
PM`, other `dateTime` values as `2021-06-25T16:21:12.0000000`, `dateTimeOffset` with `+00:00`,
booleans as `True`/`False`.

    export = SynapseExport(tmp_path)
    export.write_folder("2025-01-01T10.00.00Z", {"account": ACCOUNT}, {"account": {"2025.csv": rows}})
    export.set_current("2025-01-01T11.00.00Z")   # that folder is now the one being written
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from pathlib import Path

SINK_COLUMNS = ("SinkCreatedOn", "SinkModifiedOn")
# The columns Synapse Link adds to every entity, before the entity's own.
SYSTEM_ATTRIBUTES = (
    ("Id", "guid"),
    ("SinkCreatedOn", "dateTime"),
    ("SinkModifiedOn", "dateTime"),
)
TRAILING_ATTRIBUTES = (("versionnumber", "int64"), ("IsDelete", "boolean"))

Attributes = Sequence[tuple[str, str]]  # (name, model.json dataType), in file order
Row = Mapping[str, object]  # column -> value; absent columns are NULL


def entity_attributes(*own: tuple[str, str]) -> list[tuple[str, str]]:
    """An entity's attributes as Synapse exports them: its system columns around its own."""
    return [*SYSTEM_ATTRIBUTES, *own, *TRAILING_ATTRIBUTES]


class SynapseExport:
    def __init__(
        self, root: str | Path, container_url: str = "https://example.dfs.core.windows.net/dv"
    ) -> None:
        self.root = Path(root)
        self.container_url = container_url.rstrip("/")

    def write_folder(
        self,
        folder: str,
        schemas: Mapping[str, Attributes],
        files: Mapping[str, Mapping[str, Sequence[Row]]],
    ) -> Path:
        """Write a timestamped folder: model.json describing every entity in `schemas`, and for
        each entity in `files` its CSV files (file name -> rows)."""
        path = self.root / folder
        path.mkdir(parents=True, exist_ok=True)
        entities = []
        for entity, attributes in schemas.items():
            entity_files = files.get(entity, {})
            for name, rows in entity_files.items():
                (path / entity).mkdir(exist_ok=True)
                text = "".join(_csv_line(row, attributes) for row in rows)
                (path / entity / name).write_text(text, encoding="utf-8")
            entities.append(self._entity(folder, entity, attributes, list(entity_files)))
        model = {"name": "cdm", "description": "cdm", "version": "1.0", "entities": entities}
        (path / "model.json").write_text(json.dumps(model, indent=2), encoding="utf-8")
        return path

    def set_current(self, folder: str) -> None:
        """Name `folder` in Changelog/changelog.info (Synapse writes to it now) and create it."""
        (self.root / folder).mkdir(parents=True, exist_ok=True)
        (self.root / "Changelog").mkdir(parents=True, exist_ok=True)
        (self.root / "Changelog" / "changelog.info").write_text(folder, encoding="utf-8")

    def _entity(
        self, folder: str, entity: str, attributes: Attributes, files: list[str]
    ) -> dict[str, object]:
        settings = {
            "$type": "CsvFormatSettings",
            "columnHeaders": False,
            "delimiter": ",",
            "quoteStyle": "QuoteStyle.Csv",
            "csvStyle": "CsvStyle.QuoteAlways",
            "encoding": "UTF-8",
            "maxLength": -1,
        }
        return {
            "$type": "LocalEntity",
            "name": entity,
            "description": entity,
            "annotations": [{"name": "Athena:PartitionGranularity", "value": "Year"}],
            "attributes": [{"name": n, "dataType": t, "maxLength": -1} for n, t in attributes],
            "partitions": [
                {
                    "name": name.removesuffix(".csv"),
                    "location": f"{self.container_url}/{folder}/{entity}/{name}",
                    "fileFormatSettings": settings,
                }
                for name in files
            ],
        }


def _csv_line(row: Row, attributes: Attributes) -> str:
    unknown = set(row) - {n for n, _ in attributes}
    if unknown:
        raise ValueError(f"columns {sorted(unknown)} are not attributes of the entity")
    return ",".join(_cell(row.get(name), name, kind) for name, kind in attributes) + "\n"


def _cell(value: object, name: str, kind: str) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        text = "True" if value else "False"
    elif isinstance(value, datetime):
        if name in SINK_COLUMNS:
            hour, half = value.hour % 12 or 12, "PM" if value.hour >= 12 else "AM"
            text = f"{value.month}/{value.day}/{value.year} {hour}:{value:%M:%S} {half}"
        else:
            text = value.strftime("%Y-%m-%dT%H:%M:%S.%f") + "0"  # 7 fraction digits
            if kind.lower() == "datetimeoffset":
                text += "+00:00"
    elif isinstance(value, date):
        text = value.isoformat()
    else:
        text = str(value)
    return '"' + text.replace('"', '""') + '"'
