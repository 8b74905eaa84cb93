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
import re
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from lakefresh.config.sources import SynapseLinkSourceConfig
from lakefresh.errors import SourceError
from lakefresh.lakehouse.sql import sql_literal
from lakefresh.lakehouse.storage import storage_for
from lakefresh.sources import cdm
from lakefresh.sources.base import BatchRef, ReadBatch, SourceContext
from lakefresh.sources.text import CORRUPT, as_json, bad_encoding, cast_strictly, number_records, parse_type

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

FOLDER_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}\.\d{2}\.\d{2}Z$")
FOLDER_TIME = "%Y-%m-%dT%H.%M.%SZ"
CHANGELOG = "Changelog/changelog.info"
MODEL = "model.json"
DELETES_FILE = "1.csv"
BACKFILL = "backfill@"
SAMPLE_BYTES = 64 << 10  # the head of each file that the alignment check reads


def folder_time(name: str) -> datetime:
    """The UTC time (naive) a folder's name stands for."""
    return datetime.strptime(name, FOLDER_TIME)


def folder_name(time: datetime) -> str:
    return time.strftime(FOLDER_TIME)


def covered_until(batch_ids: Iterable[str]) -> str | None:
    """The newest folder that published batches cover: a folder's own name, or a backfill's
    last folder; None when none."""
    newest = None
    for batch_id in batch_ids:
        text = str(batch_id)
        last = text.rsplit("..", 1)[-1] if text.startswith(BACKFILL) else text
        if FOLDER_NAME.match(last) and (newest is None or last > newest):
            newest = last
    return newest


class SynapseLinkSource:
    kind = "synapse_link"
    config_type = SynapseLinkSourceConfig

    def __init__(self, config: SynapseLinkSourceConfig, ctx: SourceContext) -> None:
        self.config = config
        self.ctx = ctx
        self.storage = storage_for(ctx.spark)
        self.root = ctx.resolve(config.path).rstrip("/")

    # --- listing -----------------------------------------------------------------------------

    def list_batches(self) -> list[BatchRef]:
        current = self._current()
        if self.config.mode == "backfill":
            return self._backfill(self._complete_folders(current, after=None))
        applied = self.ctx.backend.published_batches(self.ctx.target) if self._target_exists() else {}
        covered = covered_until(applied)
        folders = self._complete_folders(current, after=covered)
        window_start = folder_time(current) - timedelta(seconds=self.config.look_back_interval)
        refs, missed = [], []
        for folder in folders:
            if covered is not None and folder <= covered:
                continue  # taken (exactly-once skips those in the lineage; older ones were before it)
            files = self._entity_files(folder)
            if not files:
                continue
            if folder_time(folder) < window_start:
                missed.append(folder)
            else:
                refs.append(self._ref(folder, [folder], files))
        if missed:
            since = f"its last folder is {covered}" if covered else "it has taken no folder yet"
            raise SourceError(
                f"{len(missed)} folder(s) of {self.config.entity} ({missed[0]} .. {missed[-1]}) are "
                f"older than the look-back window (from {folder_name(window_start)}) and the target "
                f"has not taken them ({since}); nothing was skipped. Load them once with `lakefresh "
                "backfill PIPELINE --table TABLE`, or widen look_back_interval."
            )
        return refs

    def _backfill(self, folders: list[str]) -> list[BatchRef]:
        start = self.config.backfill_start_date
        chosen = [f for f in folders if start is None or folder_time(f) >= start]
        with_files = [(f, self._entity_files(f)) for f in chosen]
        with_files = [(f, files) for f, files in with_files if files]
        if not with_files:
            return []
        names = [f for f, _ in with_files]
        files = [path for _, paths in with_files for path in paths]
        ref = self._ref(f"{BACKFILL}{names[0]}..{names[-1]}", names, files)
        ref.replay["backfill"] = self.config.backfill_behavior
        return [ref]

    def _ref(self, batch_id: str, folders: list[str], files: list[str]) -> BatchRef:
        return BatchRef(
            batch_id=batch_id,
            position=folders[-1],
            order_key=(folders[-1],),
            batch_time=folder_time(folders[-1]),
            files=tuple(files),
            replay={"kind": "synapse_link", "entity": self.config.entity, "folders": folders},
        )

    def _current(self) -> str:
        if not self.storage.exists(self.root):
            raise SourceError(f"Synapse Link export {self.root} does not exist")
        path = f"{self.root}/{CHANGELOG}"
        if not self.storage.exists(path):
            raise SourceError(f"{self.root} is not a Synapse Link export: {CHANGELOG} is missing")
        current = self.storage.read_text(path).strip()
        if not FOLDER_NAME.match(current):
            raise SourceError(f"{path} names {current!r}, not a folder like 2025-01-01T10.00.00Z")
        return current

    def waiting(self) -> list[tuple[str, str]]:
        """Folders not listed as batches yet, with the reason (`plan`)."""
        current = self._current()
        folders = sorted(
            e.name for e in self.storage.list(self.root) if e.is_dir and FOLDER_NAME.match(e.name)
        )
        out = [
            (f, "may still be written (the newest folder)")
            for f in folders
            if f == folders[-1] or f >= current
        ]
        out += [
            (f, f"finished, but without its {MODEL} yet")
            for f in folders[:-1]
            if f < current and not self.storage.exists(f"{self.root}/{f}/{MODEL}") and self._entity_files(f)
        ]
        return out

    def _complete_folders(self, current: str, after: str | None) -> list[str]:
        """Timestamped folders after `after` that Synapse has finished (older than `current`, the
        one changelog.info names, and holding their model.json), oldest first.

        A finished folder with files of the entity but no model.json (Synapse writes it last)
        stops the list there: the folders after it wait for it, since taking them first would
        cover it and skip it for good. After `model_grace_period` it is reported."""
        entries = self.storage.list(self.root)
        folders = sorted(e.name for e in entries if e.is_dir and FOLDER_NAME.match(e.name))
        done = [f for f in folders[:-1] if f < current and (after is None or f > after)]
        complete = []
        for folder in done:  # the newest folder above may still be written
            if self.storage.exists(f"{self.root}/{folder}/{MODEL}"):
                complete.append(folder)
            elif self._entity_files(folder):
                self._await_model(folder, current)
                break
        return complete

    def _await_model(self, folder: str, current: str) -> None:
        waited = folder_time(current) - folder_time(folder)
        grace = timedelta(seconds=self.config.model_grace_period)
        if waited > grace:
            raise SourceError(
                f"folder {folder} holds files of {self.config.entity} but no {MODEL}, {waited} "
                f"after it (model_grace_period is {grace}); it and the folders after it were not "
                f"taken, so that nothing is skipped. Put its {MODEL} back (a copy of the next "
                "folder's fits when the entity's columns did not change), or move the folder out "
                "of the export to leave its rows out for good."
            )

    def _entity_files(self, folder: str) -> list[str]:
        """The entity's CSV files in a folder, deletes (1.csv) last."""
        path = f"{self.root}/{folder}/{self.config.entity}"
        if not self.storage.exists(path):
            return []
        files = [e for e in self.storage.list(path) if not e.is_dir and e.name.endswith(".csv")]
        files.sort(key=lambda e: (e.name == DELETES_FILE, e.name))
        return [e.path for e in files]

    def _target_exists(self) -> bool:
        return self.ctx.backend.exists(self.ctx.target)

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

    def _entity(self, folder: str) -> cdm.Entity:
        path = f"{self.root}/{folder}/{MODEL}"
        entity = cdm.read_model(self.storage.read_text(path), path).get(self.config.entity.lower())
        if entity is None:
            raise SourceError(f"{path} does not describe entity {self.config.entity!r}, yet it has files")
        return entity

    def _read_folder(self, folder: str, files: list[str]) -> DataFrame:
        """A folder's rows, parsed with the folder's own model.json; bad rows carry a reason."""
        from pyspark.sql.types import StringType, StructField, StructType

        entity = self._entity(folder)
        self._check_alignment(folder, entity, files)
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

    def _check_alignment(self, folder: str, entity: cdm.Entity, files: list[str]) -> None:
        """Refuse a folder whose model.json does not line up with its data: in the first records of
        a file, a typed column none of whose values has its type's shape (see `cdm.misfits`)."""
        for path in files:
            with self.storage.chunks(path, SAMPLE_BYTES) as chunks:
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
                    f"{folder}/{MODEL} does not line up with {path}: {named}. Its columns look "
                    "reordered against the data (Synapse appends columns at the end); nothing of "
                    f"this folder was taken. Fix {folder}/{MODEL}, or export the folder again."
                )


def entity_type(entity: cdm.Entity, column: str) -> str:
    return next(a.data_type for a in entity.attributes if a.name == column)
