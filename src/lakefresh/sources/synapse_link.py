"""Source `synapse_link`: one entity of an Azure Synapse Link "Incremental CSV" export.

The export's root holds timestamped folders (`2025-01-01T10.00.00Z/`), each with a `model.json`
(the schema of every entity, see `cdm`) and one subfolder of headerless CSV files per entity that
changed; `Changelog/changelog.info` names the folder Synapse is writing now. A folder is
*complete* when it has its model.json, is older than the folder changelog.info names, and is not
the newest folder (which may still be written). Incomplete folders are not listed; they become
batches once complete.

Streaming (the default): each complete folder holding files of the entity is a batch, its name is
the batch id, folders in name (= time) order. Only folders from changelog.info's time minus
`look_back_interval` are listed; exactly-once comes from the target's lineage, as for every source.
A folder older than the window that the target has not taken (the pipeline was stopped longer
than the window, or the table is new and the export is older) is never skipped silently: the run
fails and names the way out, `lakefresh backfill` or a wider window.

Backfill (`mode: backfill`, or `lakefresh backfill PIPELINE --table T`): every complete folder
from `backfill_start_date` is one batch, `backfill@<first folder>..<last folder>`. Streaming later
goes on after its last folder. `backfill_behavior: merge` merges it into the live table with the
table's strategy; `overwrite` builds the table anew from it in a temporary table, then replaces the
live table's rows in one commit (see `strategies.rebuild`).

Each folder is parsed with its own model.json, so a column added or dropped between folders is
read right; the runner then adds new columns to the target and leaves missing ones NULL. In a
backfill, the folders' rows are unioned by column name. Within a folder, `1.csv` (where Synapse
writes deletes, as Arcane notes) is read after the other files. Synapse's `IsDelete` marks deletes
(a `key` or `scd2` target deletes on it unless it has its own rule); order a key's rows with
`date_column: SinkModifiedOn` (or `versionnumber`).
"""

from __future__ import annotations

import csv
import io
import itertools
from typing import TYPE_CHECKING

from lakefresh.config.sources import SynapseLinkSourceConfig
from lakefresh.errors import SourceError
from lakefresh.lakehouse.sql import sql_literal
from lakefresh.lakehouse.storage import storage_for
from lakefresh.sources import cdm
from lakefresh.sources.base import BatchRef, ReadBatch, SourceContext
from lakefresh.sources.synapse_folders import FOLDER_NAME, MODEL, SynapseFolders
from lakefresh.sources.text import CORRUPT, as_json, bad_encoding, cast_strictly, number_records, parse_type

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

    from lakefresh.lakehouse.storage import Storage

SAMPLE_BYTES = 64 << 10  # the head of each file that the alignment check reads


class SynapseLinkSource:
    kind = "synapse_link"
    config_type = SynapseLinkSourceConfig

    def __init__(self, config: SynapseLinkSourceConfig, ctx: SourceContext) -> None:
        self.config = config
        self.ctx = ctx
        self.storage = storage_for(ctx.spark)
        self.root = ctx.resolve(config.path).rstrip("/")
        self.folders = SynapseFolders(config, self.storage, self.root, self._published)

    def _published(self) -> dict[str, int]:
        """The batches the target's lineage holds."""
        target, backend = self.ctx.target, self.ctx.backend
        return backend.published_batches(target) if backend.exists(target) else {}

    # --- listing -----------------------------------------------------------------------------

    def list_batches(self) -> list[BatchRef]:
        return self.folders.batches()

    def waiting(self) -> list[tuple[str, str]]:
        """Folders not listed as batches yet, with the reason (`plan`)."""
        return self.folders.waiting()

    def published(self, ref: BatchRef) -> bool:
        return False  # the target's lineage is the whole record of what was taken

    # --- reading -----------------------------------------------------------------------------

    def read(self, ref: BatchRef, target_schema: StructType | None) -> ReadBatch:
        frames = []
        folders: list[str] = ref.replay["folders"]  # type: ignore[assignment]
        for folder in folders:
            files = [f for f in ref.files if f"/{folder}/" in f]
            frames.append(self._read_folder(str(folder), files))
        rows = frames[0]
        for frame in frames[1:]:
            rows = rows.unionByName(frame, allowMissingColumns=True)
        return ReadBatch(ref, rows)

    def _read_folder(self, folder: str, files: list[str]) -> DataFrame:
        """A folder's rows, parsed with the folder's own model.json; bad rows carry a reason."""
        from pyspark.sql.types import StringType, StructField, StructType

        entity = folder_entity(self.config, self.storage, self.root, folder, files)
        columns = entity.columns
        text_schema = StructType(
            [StructField(c, StringType()) for c in columns] + [StructField(CORRUPT, StringType())]
        )
        text = (
            self.ctx.spark.read.option("header", False)
            .option("multiLine", True)
            .option("sep", entity.delimiter)
            .option("quote", '"')
            .option("escape", '"')
            .option("nullValue", "")
            .option("mode", "PERMISSIVE")
            .option("columnNameOfCorruptRecord", CORRUPT)
            .schema(text_schema)
            .csv(files)
        )
        numbered = number_records(text, columns, header_lines=0)
        message = sql_literal(f"wrong number of cells: {folder}/model.json gives {len(columns)} columns")
        narrower = self._narrower(folder, entity)
        wrong_cells = f"CASE WHEN {CORRUPT} IS NOT NULL AND NOT {narrower} THEN {message} END"
        raw = f"coalesce({CORRUPT}, {as_json(columns)})"
        types = {a.name: parse_type(a.spark_type) for a in entity.attributes}
        parsers = {a.name: p for a in entity.attributes if (p := cdm.parser(a)) is not None}
        return cast_strictly(
            numbered, types, first_reasons=[wrong_cells, bad_encoding(columns)], raw=raw, parsers=parsers
        )

    def _narrower(self, folder: str, entity: cdm.Entity) -> str:
        """SQL for whether a row Spark found malformed is one written before columns were appended
        to the entity: fewer cells than this folder's model.json, but at least as many as the
        entity had in the model.json of the folder before. Spark binds its trailing columns to
        NULL, as Synapse documents; any other count of cells is a malformed row."""
        width = len(entity.columns)
        earlier = self._earlier_width(folder)
        if earlier is None or earlier >= width:
            return "FALSE"
        quoted_cells = sql_literal('"([^"]|"")*"')  # a quoted cell, quotes doubled inside
        outside_quotes = f"regexp_replace({CORRUPT}, {quoted_cells}, '')"
        delimiter = sql_literal("\\Q" + entity.delimiter + "\\E")
        cells = f"size(split({outside_quotes}, {delimiter}, -1))"
        double_quote = sql_literal('"')
        quotes = f"length({CORRUPT}) - length(replace({CORRUPT}, {double_quote}, ''))"
        balanced = f"(({quotes}) % 2 = 0)"
        return f"({balanced} AND {cells} >= {earlier} AND {cells} < {width})"

    def _earlier_width(self, folder: str) -> int | None:
        """How many columns the entity had in the nearest earlier folder's model.json."""
        entries = self.storage.list(self.root)
        earlier = sorted((e.name for e in entries if e.is_dir and FOLDER_NAME.match(e.name)), reverse=True)
        for name in (f for f in earlier if f < folder):
            path = f"{self.root}/{name}/{MODEL}"
            if self.storage.exists(path):
                entity = cdm.read_model(self.storage.read_text(path), path).get(self.config.entity.lower())
                return None if entity is None else len(entity.columns)
        return None


def folder_entity(
    config: SynapseLinkSourceConfig, storage: Storage, root: str, folder: str, files: list[str]
) -> cdm.Entity:
    """The source's entity as the folder's model.json describes it, checked against the folder's
    files: SourceError when the model does not describe it, or does not line up with the data
    (in the first records of a file, a typed column none of whose values has its type's shape:
    see `cdm.misfits`)."""
    path = f"{root}/{folder}/{MODEL}"
    entity = cdm.read_model(storage.read_text(path), path).get(config.entity.lower())
    if entity is None:
        raise SourceError(f"{path} does not describe entity {config.entity!r}, yet it has files")
    for data in files:
        with storage.chunks(data, SAMPLE_BYTES) as chunks:
            head = next(chunks, b"")
        text = head.decode("utf-8", errors="replace")
        if len(head) == SAMPLE_BYTES:
            text = text[: text.rfind("\n") + 1]  # whole records only
        records = list(itertools.islice(csv.reader(io.StringIO(text), delimiter=entity.delimiter), 20))
        found = cdm.misfits(entity, records)
        if found:
            named = "; ".join(
                f"{c} ({entity_type(entity, c)}) holds {', '.join(repr(v) for v in vs[:3])}"
                for c, vs in found.items()
            )
            raise SourceError(
                f"{folder}/{MODEL} does not line up with {data}: {named}. Its columns look "
                "reordered against the data (Synapse appends columns at the end); nothing of "
                f"this folder was taken. Fix {folder}/{MODEL}, or export the folder again."
            )
    return entity


def entity_type(entity: cdm.Entity, column: str) -> str:
    return next(a.data_type for a in entity.attributes if a.name == column)
