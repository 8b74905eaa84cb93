"""Reads of small tables without a JVM: Iceberg tables of a `hadoop` catalog from their files
(or through pyiceberg), Delta tables through the `deltalake` package (delta-rs), both in a local
warehouse folder.

The verbs that only read what runs recorded (`status`, `history`, `quarantine`, `freshness`,
`report`) answer in a second or two this way, where a Spark session takes tens of seconds to
start. A hadoop catalog keeps each table at `<warehouse>/<namespace>/<table>` with its metadata
files (`metadata/v<N>.metadata.json`, the newest named by `version-hint.text`), so a table is read
from its newest metadata file with no catalog service: straight from its files
(lakehouse/iceberg_files.py: importing pyiceberg alone costs more than a whole `status`), or,
for what that reader leaves (equality deletes, a nested column changed since a file was
written), through pyiceberg (`StaticTable.from_metadata`). A Delta table lives at the same place
under the same warehouse (lakehouse/delta/backend.py `location`).

Rows come back as PySpark's `Row.asDict(recursive=True)` gives them, so the verbs' answers are
the same on both roads: timestamps as naive datetimes in this process's local time (as PySpark
converts them), maps as dicts, structs as dicts. What this reader cannot reach (another catalog
type, a warehouse in an object store) raises :class:`NotNative` before anything is read, and the
callers take the Spark road; so does any failure of these libraries (a table feature they do
not read).
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lakefresh.lakehouse.backend import Deletes
from lakefresh.lakehouse.iceberg_files import IcebergFiles, Unread, without_zones
from lakefresh.lakehouse.sql import standard_sql_literal

if TYPE_CHECKING:
    import pyarrow as pa

    from lakefresh.config.models import PipelineConfig
    from lakefresh.lakehouse.backend import Lineage, VersionState
    from lakefresh.lakehouse.delta.log import Version, VersionLog
    from lakefresh.lakehouse.iceberg.log import SnapshotLog

# LAKEFRESH_NATIVE_READS=0 sends every read through Spark (to compare the roads, or when these
# libraries misread a table)
SWITCH = "LAKEFRESH_NATIVE_READS"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
log = logging.getLogger(__name__)
_METADATA = re.compile(r"^v(\d+)(\.[a-z0-9]+)?\.metadata\.json$")


class NotNative(Exception):
    """This table (or pipeline) cannot be read without Spark: take the Spark road."""


class NativeTables:
    """Reads the tables of one pipeline's warehouse folder without Spark. Table names are
    `namespace.table`, as everywhere in lakefresh; `delta` names the Delta ones, and every table of
    `delta_namespaces` is a Delta table (the control tables with `control_format: delta`)."""

    def __init__(
        self, warehouse: Path, iceberg_catalog: bool, delta: set[str], delta_namespaces: set[str]
    ) -> None:
        self.warehouse = warehouse
        self.iceberg_catalog = iceberg_catalog  # whether its Iceberg tables are a hadoop catalog's
        self.delta = frozenset(delta)
        self.delta_namespaces = frozenset(delta_namespaces)
        self._loaded: dict[Path, Any] = {}  # Iceberg tables through pyiceberg, by their metadata file
        # Iceberg tables read from their files, each as its newest metadata file has it, with its
        # rows once read whole (a commit makes a newer metadata file, read afresh)
        self._files: dict[str, IcebergFiles] = {}
        self._rows: dict[str, tuple[IcebergFiles, list[dict[str, Any]]]] = {}

    @staticmethod
    def of(config: PipelineConfig, warehouse: str | None) -> NativeTables:
        """The reader of a pipeline's tables; NotNative when none can be read without Spark (a
        warehouse in an object store, reads switched off)."""
        if os.environ.get(SWITCH, "1") == "0":
            raise NotNative(f"{SWITCH}=0")
        if warehouse is None:
            raise NotNative("no warehouse folder")
        local = warehouse
        if local.startswith("file:"):  # file:/a, file:///a
            local = "/" + local.removeprefix("file:").lstrip("/")
        if "://" in local:
            raise NotNative(f"the warehouse {warehouse} is not a local folder")
        control = {config.catalog.control_namespace} if config.catalog.control_format == "delta" else set()
        return NativeTables(Path(local), config.catalog.type == "hadoop", config.delta_tables(), control)

    def is_delta(self, table: str) -> bool:
        return table in self.delta or table.split(".")[0] in self.delta_namespaces or _is_folder(table)

    def location(self, table: str) -> Path:
        """Where the table is: `namespace.table` in the warehouse folder; a Delta table may also
        be named by its folder (a `delta_changes` source's path)."""
        if _is_folder(table):
            if "://" in table and not table.startswith("file:"):
                raise NotNative(f"the Delta table {table} is not in a local folder")
            return Path("/" + table.removeprefix("file:").lstrip("/") if table.startswith("file:") else table)
        if not self.is_delta(table) and not self.iceberg_catalog:
            raise NotNative(f"{table} is in a catalog that is not a hadoop catalog")
        if len(table.split(".")) != 2:  # another catalog's table
            raise NotNative(f"{table} is not named namespace.table")
        return self.warehouse.joinpath(*table.split("."))

    def exists(self, table: str) -> bool:
        where = self.location(table)
        if self.is_delta(table):
            return (where / "_delta_log").is_dir()
        return _newest_metadata(where) is not None

    def properties(self, table: str) -> dict[str, str]:
        """The table's properties (Delta: its configuration)."""
        if self.is_delta(table):
            return dict(self._delta(table).metadata().configuration)
        return self._iceberg_files(table).properties

    def rows(self, table: str, equal: tuple[str, str] | None = None) -> list[dict[str, Any]]:
        """The table's rows now (those whose column `equal[0]` holds `equal[1]`), as PySpark's
        `asDict(recursive=True)` gives them."""
        if self.is_delta(table):
            where = "" if equal is None else f" WHERE {_name(equal[0])} = {standard_sql_literal(equal[1])}"
            return spark_rows(self._delta_query(table, f"SELECT * FROM t{where}"))
        try:
            found = self._iceberg_rows(table)
        except Unread as exc:
            log.debug("%s read through pyiceberg: %s", table, exc)
            return self._pyiceberg_rows(table, equal)
        return [dict(r) for r in found if equal is None or r[equal[0]] == equal[1]]

    def _pyiceberg_rows(self, table: str, equal: tuple[str, str] | None) -> list[dict[str, Any]]:
        from pyiceberg.expressions import AlwaysTrue, EqualTo

        equal_to: Any = EqualTo  # a pydantic model whose generated signature mypy misreads
        found: Any = AlwaysTrue() if equal is None else equal_to(*equal)
        return spark_rows(self._iceberg(table).scan(row_filter=found).to_arrow())

    def count(self, table: str) -> int:
        """The table's rows now (deleted rows not counted)."""
        if self.is_delta(table):
            return int(self._delta_query(table, "SELECT count(*) AS n FROM t").column(0)[0].as_py())
        try:
            return self._iceberg_files(table).count()
        except Unread as exc:
            log.debug("%s counted through pyiceberg: %s", table, exc)
            return int(self._iceberg(table).scan().count())

    # --- the lineage, as TableBackend's (a change feed's listing, a synapse_link's) -------------

    def published_batches(self, table: str) -> dict[str, int]:
        """Batch id -> version of the batches the table's current lineage
        carries, newest first."""
        return self._log(table).published()

    def head(self, table: str) -> int | None:
        return self._log(table).head()

    def lineage(self, table: str) -> Lineage:
        return self._log(table).view()

    def committed_at(self, table: str, version: int) -> datetime:
        return self._log(table).committed_at(table, version)

    def commit_properties(self, table: str, version: int) -> dict[str, str]:
        return self._log(table).commit_properties(table, version)

    def columns(self, table: str) -> dict[str, str]:
        """The table's columns now (its current schema's top-level fields), each with its type
        as the format writes it (Iceberg's JSON, Delta's), by name."""
        if self.is_delta(table):
            return {f.name: str(f.type) for f in self._delta(table).schema().fields}
        fields = self._iceberg_files(table).schema()["fields"]
        return {str(f["name"]): json.dumps(f["type"], sort_keys=True) for f in fields}

    def deletes(self, table: str) -> Deletes:
        """What its readers still apply (`TableBackend.deletes`): an Iceberg table's current
        snapshot's summary; a Delta table's deletion vectors (delta-rs), stored rows being the
        live ones (from its files' statistics) plus those they delete."""
        from lakefresh.lakehouse.delta import rs_log
        from lakefresh.lakehouse.iceberg.log import summary_deletes

        if not self.is_delta(table):
            files = self._iceberg_files(table)
            return summary_deletes(_snapshot_log(files).summary())
        found = self._delta(table)
        if found.version() < 0 or not rs_log.keeps_deletion_vectors(found):
            return Deletes()
        vectors = rs_log.deletes(found)
        live = rs_log.records(found)
        return Deletes(
            vectors.files, vectors.rows, (self.count(table) if live is None else live) + vectors.rows
        )

    def version_state(self, table: str, version: int) -> VersionState:
        return self._log(table).state(version)

    def delta_lineage(self, table: str) -> list[Version]:
        """A Delta table's current version and its ancestors, newest first."""
        from lakefresh.lakehouse.delta.log import lineage

        return lineage(self.delta_history(table))

    def delta_history(self, table: str) -> list[Version]:
        """A Delta table's retained history, newest first (as DESCRIBE HISTORY gives it)."""
        from lakefresh.lakehouse.delta.log import history_entry

        commits = self._delta(table).history()
        log = self.location(table) / "_delta_log"
        return sorted((history_entry(c, log) for c in commits), key=lambda v: -v.version)

    def _log(self, table: str) -> SnapshotLog | VersionLog:
        """An Iceberg table's snapshots, or a Delta table's history."""
        from lakefresh.lakehouse.delta.log import VersionLog

        if self.is_delta(table):
            return VersionLog(self.delta_history(table))
        return _snapshot_log(self._iceberg_files(table))

    def _iceberg_files(self, table: str) -> IcebergFiles:
        """The table as its newest metadata file has it, read from its files (once per such file)."""
        found = _newest_metadata(self.location(table))
        if found is None:
            raise NotNative(f"{table}: no Iceberg metadata file")
        if table not in self._files or self._files[table].path != found:
            self._files[table] = IcebergFiles(found)
        return self._files[table]

    def _iceberg_rows(self, table: str) -> list[dict[str, Any]]:
        """Every row of the table now (read once per metadata file)."""
        files = self._iceberg_files(table)
        kept = self._rows.get(table)
        if kept is None or kept[0] is not files:
            kept = (files, [r for rows, schema in files.rows() for r in _converted(rows, schema)])
            self._rows[table] = kept
        return kept[1]

    def _iceberg(self, table: str) -> Any:
        """The table as its newest metadata file has it (loaded once per such file)."""
        from pyiceberg.table import StaticTable

        _keep_null_lists()
        found = _newest_metadata(self.location(table))
        if found is None:
            raise NotNative(f"{table}: no Iceberg metadata file")
        if found not in self._loaded:
            loaded = StaticTable.from_metadata(str(found))
            if loaded.format_version > 2:  # deletion vectors: read only through Spark here
                raise NotNative(f"{table}: Iceberg format version {loaded.format_version}")
            self._loaded[found] = loaded
        return self._loaded[found]

    def _delta(self, table: str) -> Any:
        from deltalake import DeltaTable

        return DeltaTable(str(self.location(table)))

    def _delta_query(self, table: str, sql: str) -> pa.Table:
        from lakefresh.lakehouse.delta.rs_log import query

        return query(self._delta(table), sql)


def _snapshot_log(files: IcebergFiles) -> SnapshotLog:
    """An Iceberg table's snapshots as its metadata file lists them."""
    from lakefresh.lakehouse.iceberg.log import SnapshotLog

    return SnapshotLog(files.current_id(), files.snapshots())


def _is_folder(table: str) -> bool:
    """Whether a table is named by its folder (a path or a URI), not as `namespace.table`."""
    return table.startswith(("/", ".")) or "://" in table or table.startswith("file:")


def _keep_null_lists() -> None:
    """pyiceberg (0.12) rebuilds a list of structs without its validity, so a null list reads as
    an empty one (apache/iceberg-python#3833; `batches.effective_ranges` is null on a batch
    without ranges, where an empty list means "owns nothing"): its rebuilt list gets the nulls
    of the list it was rebuilt from. Patched once per process, and only where nulls were lost."""
    from pyiceberg.io.pyarrow import ArrowProjectionVisitor

    rebuild = ArrowProjectionVisitor.list
    if getattr(rebuild, "keeps_nulls", False):
        return

    def keeping(self: Any, list_type: Any, list_array: Any, value_array: Any) -> Any:
        out = rebuild(self, list_type, list_array, value_array)
        if out is None or list_array is None or list_array.null_count == out.null_count:
            return out
        return type(out).from_arrays(out.offsets, out.values, type=out.type, mask=list_array.is_null())

    keeping.keeps_nulls = True  # type: ignore[attr-defined]
    ArrowProjectionVisitor.list = keeping  # type: ignore[method-assign]


def _name(column: str) -> str:
    """A column's name in DataFusion's SQL (standard double quotes)."""
    return '"' + column.replace('"', '""') + '"'


def _newest_metadata(folder: Path) -> Path | None:
    """The newest `v<N>.metadata.json` of an Iceberg table of a hadoop catalog (the highest N:
    `version-hint.text` may lag a commit); None when there is none."""
    metadata = folder / "metadata"
    if not metadata.is_dir():
        return None
    found = [(int(m.group(1)), p) for p in metadata.iterdir() if (m := _METADATA.match(p.name))]
    return max(found)[1] if found else None


def spark_rows(data: pa.Table) -> list[dict[str, Any]]:
    """Arrow rows as PySpark collects them (`_converter`)."""
    return _converted(without_zones(data).to_pylist(), data.schema)


def _converted(rows: list[dict[str, Any]], schema: pa.Schema) -> list[dict[str, Any]]:
    """Rows read with this Arrow schema as PySpark collects them (`_converter`); a column the
    schema does not have is null."""
    convert = {f.name: _converter(f.type) for f in schema}
    same: Callable[[Any], Any] = lambda v: v  # noqa: E731
    return [{k: convert.get(k, same)(v) for k, v in row.items()} for row in rows]


def _converter(kind: pa.DataType) -> Callable[[Any], Any]:
    """How a value of this Arrow type becomes the value PySpark collects: an aware timestamp a
    naive one in local time, a map (a list of pairs) a dict, bytes a bytearray, inside lists and
    structs too."""
    import pyarrow as pa

    if pa.types.is_timestamp(kind) and kind.tz is not None:
        return _local
    if pa.types.is_map(kind):
        key, item = _converter(kind.key_type), _converter(kind.item_type)
        return lambda v: None if v is None else {key(k): item(x) for k, x in v}
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        each = _converter(kind.value_type)
        return lambda v: None if v is None else [each(x) for x in v]
    if pa.types.is_struct(kind):
        fields = {f.name: _converter(f.type) for f in kind}
        return lambda v: None if v is None else {k: fields[k](x) for k, x in v.items()}
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return lambda v: None if v is None else bytearray(v)
    return lambda v: v


def _local(value: datetime | None) -> datetime | None:
    """An aware time (or a naive one in UTC) as PySpark gives a timestamp: naive, in this
    process's local time."""
    if value is None:
        return None
    micros = (value.replace(tzinfo=value.tzinfo or UTC) - _EPOCH) // timedelta(microseconds=1)
    return datetime.fromtimestamp(micros // 1_000_000).replace(microsecond=micros % 1_000_000)
