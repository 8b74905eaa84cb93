"""The control tables in the `lakefresh` namespace, with explicit, versioned schemas.

- `batches`: one row per table, batch and attempt. A published batch's row is written when the
  table's run ends, in one commit for the whole run, from the record its target commit carries
  (state/published.py); a batch with quarantine rows (or on an Iceberg before 1.12) is recorded as
  `staged` (with its counts) before its target commit is published, and marked `published` by that
  commit. After a crash the next run reads the target's lineage and completes the log (rows
  written from the commits' records, `staged` marked `published`) or marks staged attempts that
  never published `abandoned` before staging the batch again.
- `quarantine`: rows that could not be loaded, with the reason, file, line and batch.
- `leases` (state/leases.py): the tables runs hold now, one row each. Created when missing (an
  older lakefresh never reads it), so it takes no version step below; it is rewritten whole by
  every write, so no migration ever needs to add a column in place: a new layout replaces it.

The target's lineage is the authority on what was applied; these tables are the log of it.
Version: the table property `lakefresh.state-version`. A run against tables of another version
stops with a message that says what to do; `lakefresh migrate` upgrades older tables in place
(each step only adds columns, so no row is rewritten and older readers keep working).

| version | change                                                                            |
| ------- | --------------------------------------------------------------------------------- |
| 1       | first release                                                                     |
| 2       | batches: strategy, effective_count, range_start, range_end, effective_ranges      |
| 3       | batches: config_fingerprint, config (what shaped the batch's result; no secrets)  |
| 4       | batches: rule_results (violations per rule); quarantine: resolved_by (a replay)   |
| 5       | batches: superseded (rows this batch took from each earlier batch, by batch id)   |

Statuses of a `batches` row: `staged`, `published`, `failed`, `audit_failed`, `abandoned` (an
attempt that never published), `rolled_back` (published, then gone from the target's lineage),
`forgotten` (rolled back, and the operator chose never to take it again), `refused` (it had bad
rows and its table refuses such batches: nothing written), `skipped` (the operator chose never to
take it: `run --skip-batch`), `unloaded` (published, then undone by the operator: `rollback`,
`unload`), `reloaded` (published, then applied again from its current content by `reload`: the
reload's attempt is the published one), `maintained` (a table's upkeep by `maintain`: what was
done is in `replay`). The verbs that rebuild a table (`reset`, `unload`, `reload`) log their own
commit as a batch whose id starts with `lakefresh:`, as `maintain` does its rows, and `adopt` the
commit that made a table another tool wrote lakefresh's (`lakefresh:adopt:<id>`, `published`, its
`replay` saying what it found and added): the first row of that table's log.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from datetime import datetime
from typing import TYPE_CHECKING, Any

from lakefresh.errors import StateError
from lakefresh.lakehouse.backend import Layout
from lakefresh.lakehouse.failures import retry_conflicts
from lakefresh.lakehouse.session import parse_schema
from lakefresh.lakehouse.sql import sql_literal
from lakefresh.secrets import redact
from lakefresh.state.batch_row import BatchRow
from lakefresh.state.marks import OperatorMarks
from lakefresh.state.published import RANGES_TYPE, PublishMarks
from lakefresh.state.reads import AttemptRow, LogReads, LogRow

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

    from lakefresh.lakehouse.backend import TableBackend

STATE_VERSION = 5
VERSION_PROPERTY = "lakefresh.state-version"

# The batch ids of lakefresh's own commits and log rows (the verbs that rebuild a table: reset,
# unload, reload, a full refresh; `maintain`): a prefix no source's batch id has. A rebuilding
# verb's commit replaces the table's rows, and its log row's `replay` says what it undid or redid.
VERB_PREFIX = "lakefresh:"
# The adoption of a table another tool wrote (`adopt`): its rows before lakefresh, in one commit.
ADOPTION_PREFIX = f"{VERB_PREFIX}adopt:"


def is_verb(batch_id: str) -> bool:
    """Whether a batch id is one of lakefresh's own commits rather than a batch of the source."""
    return batch_id.startswith(VERB_PREFIX)


def is_adopted(batch_id: str) -> bool:
    """Whether a batch id is the commit that adopted a table another tool wrote."""
    return batch_id.startswith(ADOPTION_PREFIX)


def verb_batch_id(verb: str) -> str:
    """A new batch id for one of `verb`'s commits (`lakefresh:<verb>:<id>`)."""
    return f"{VERB_PREFIX}{verb}:{uuid.uuid4().hex[:12]}"


# `staged_snapshot_id` and `published_snapshot_id` hold versions (lakehouse/backend.py): stored
# columns, named as they were created (renaming them would need a migration)
BATCHES_SCHEMA = f"""
table_name string NOT NULL, batch_id string NOT NULL, attempt string NOT NULL,
status string NOT NULL, source_kind string, source_position string, replay string,
record_count bigint, quarantined_count bigint, duplicate_count bigint,
status_counts map<string, bigint>, staged_snapshot_id bigint, published_snapshot_id bigint,
files_written bigint, bytes_written bigint,
read_seconds double, stage_seconds double, audit_seconds double, publish_seconds double,
started_at timestamp, published_at timestamp, error string, lakefresh_version string,
strategy string, effective_count bigint, range_start string, range_end string,
effective_ranges {RANGES_TYPE}, config_fingerprint string, config string,
rule_results map<string, bigint>, superseded map<string, bigint>
"""

# Upgrades, by the version they lead to: columns added to `batches`.
MIGRATIONS = {
    2: f"strategy string, effective_count bigint, range_start string, range_end string, "
    f"effective_ranges {RANGES_TYPE}",
    3: "config_fingerprint string, config string",
    4: "rule_results map<string, bigint>",
    5: "superseded map<string, bigint>",
}

QUARANTINE_SCHEMA = """
table_name string NOT NULL, batch_id string NOT NULL, attempt string NOT NULL,
source_file string, line bigint, record bigint, reason string NOT NULL, raw string,
quarantined_at timestamp, resolved_by string
"""
# Upgrades of `quarantine`, by the version they lead to.
QUARANTINE_MIGRATIONS = {4: "resolved_by string"}

# Upkeep: every batch adds about three files to `batches` (its attempt row, then a delete file and
# the rewritten row when it is published), and every read or MERGE of the table opens them all, so
# a long-running pipeline would slow down batch by batch. Past this many files a table is
# compacted into one file, and all but its KEEP_VERSIONS newest versions are expired (each
# commit rewrites the table's metadata file, which lists every version).
COMPACT_AT_FILES = 32
KEEP_VERSIONS = 50

# The load log of `table_changes` sources (state/loads.py), in the same namespace.
LOADS_TABLE = "loads"

__all__ = ["AttemptRow", "ControlTables"]


def compact_if_many_files(backend: TableBackend, table: str) -> int:
    """Compact a small table of lakefresh's own once it holds more than COMPACT_AT_FILES files,
    keeping its newest KEEP_VERSIONS versions; the files it held, 0: left alone."""
    files = backend.file_count(table)
    if files <= COMPACT_AT_FILES:
        return 0
    backend.compact(table, KEEP_VERSIONS)
    return files


class ControlTables(OperatorMarks, LogReads, PublishMarks):
    """Reads and writes the control tables through the table backend."""

    def __init__(self, backend: TableBackend, namespace: str) -> None:
        self.backend = backend
        self.namespace = namespace
        self.properties = control_properties(backend)
        self.batches = f"{namespace}.batches"
        self.quarantine = f"{namespace}.quarantine"
        self._ready = False
        self._batches_schema: StructType | None = None
        self._kept: OrderedDict[str, tuple[int | None, list[LogRow]]] = OrderedDict()

    # --- setup and versions ------------------------------------------------------------------

    def ensure(self) -> None:
        if not self._ready:
            retry_conflicts(self._ensure)  # another pipeline may create them at the same moment
            self._ready = True

    def _ensure(self) -> None:
        for table, ddl in ((self.batches, BATCHES_SCHEMA), (self.quarantine, QUARANTINE_SCHEMA)):
            if not self.backend.exists(table):
                schema = parse_schema(ddl)
                self.backend.create(table, schema, Layout(properties=self.properties), staged_commits=False)
            properties = self.backend.properties(table)
            self._check_version(table, properties)
            self._set_properties(table, properties)

    def _version(self, table: str) -> int | None:
        return _version_of(self.backend.properties(table))

    def _check_version(self, table: str, properties: dict[str, str]) -> None:
        check_version(table, properties)

    def _set_properties(self, table: str, properties: dict[str, str]) -> None:
        """Give tables created by an earlier lakefresh the properties this one creates them with."""
        missing = {k: v for k, v in self.properties.items() if properties.get(k) != v}
        if missing:
            self.backend.set_properties(table, missing)

    def tidy(self) -> list[str]:
        """Compact the control tables that hold more than COMPACT_AT_FILES files; return them.
        Cheap when there is nothing to do: the file counts come from the snapshot summaries."""
        tables = [self.batches, self.quarantine]
        loads = f"{self.namespace}.{LOADS_TABLE}"  # the change-feed load log, when there is one
        if self.backend.exists(loads):
            tables.append(loads)
        return [table for table in tables if compact_if_many_files(self.backend, table)]

    def migrate(self) -> list[str]:
        """Upgrade the control tables to this lakefresh's state version; say what was done."""
        done: list[str] = []
        for table in (self.batches, self.quarantine):
            if not self.backend.exists(table):
                continue
            found = self._version(table)
            if found is None or found > STATE_VERSION:
                raise StateError(f"control table {table} has state version {found}; cannot migrate it")
            for version in range(found + 1, STATE_VERSION + 1):
                added = (MIGRATIONS if table == self.batches else QUARANTINE_MIGRATIONS).get(version)
                name = self.backend.qualified(table)
                if added:
                    self.backend.spark.sql(f"ALTER TABLE {name} ADD COLUMNS ({added})")
                self.backend.set_properties(table, {VERSION_PROPERTY: str(version)})
                done.append(f"{table}: version {version - 1} -> {version}")
        self._ready = False
        self._batches_schema = None
        self.ensure()
        return done

    # --- reads -------------------------------------------------------------------------------

    def latest_attempt(self, table: str) -> tuple[str, str, str | None] | None:
        """The table's most recent attempt as (batch id, status, replay), None when none."""
        if not self.backend.exists(self.batches):
            return None
        row = self.backend.spark.sql(
            f"SELECT batch_id, status, replay FROM {self.backend.qualified(self.batches)} "
            f"WHERE table_name = {sql_literal(table)} "
            f"AND NOT startswith(batch_id, {sql_literal(VERB_PREFIX)}) "
            "ORDER BY started_at DESC, attempt LIMIT 1"
        ).first()
        return None if row is None else (row[0], row[1], row[2])

    def quarantined(self, table: str | None = None) -> DataFrame:
        where = f"WHERE table_name = {sql_literal(table)}" if table else ""
        return self.backend.spark.sql(
            f"SELECT * FROM {self.backend.qualified(self.quarantine)} {where} "
            "ORDER BY table_name, batch_id, source_file, record"
        )

    # --- writes ------------------------------------------------------------------------------

    def batches_schema(self) -> StructType:
        if self._batches_schema is None:
            self._batches_schema = self.backend.schema(self.batches)
        return self._batches_schema

    def full_row(self, row: BatchRow) -> dict[str, Any]:
        """A `batches` row's columns, with this lakefresh's version."""
        return {**row.columns(), "lakefresh_version": _version()}

    def record_attempt(self, row: BatchRow) -> None:
        """Append one attempt row (status staged, failed or audit_failed)."""
        self.record_attempts([row])

    def record_attempts(self, rows: list[BatchRow]) -> None:
        """Append attempt rows in one commit (a backlog group's staged rows)."""
        full = [self.full_row(row) for row in rows]
        schema = self.batches_schema()
        retry_conflicts(lambda: self.backend.append_rows(self.batches, full, schema))
        self.appended(full)

    def record_quarantine(self, table: str, batch_id: str, attempt: str, rows: DataFrame) -> None:
        from pyspark.sql import functions as F

        out = rows.select(
            F.lit(table).alias("table_name"),
            F.lit(batch_id).alias("batch_id"),
            F.lit(attempt).alias("attempt"),
            F.col("source_file").cast("string"),
            F.col("line").cast("bigint"),
            F.col("record").cast("bigint"),
            F.col("reason").cast("string"),
            F.col("raw").cast("string"),
            F.current_timestamp().alias("quarantined_at"),
            F.lit(None).cast("string").alias("resolved_by"),
        )
        retry_conflicts(lambda: self.backend.append(self.quarantine, out))

    def mark_failed(self, table: str, attempt: str, status: str, error: str | None) -> None:
        """A recorded attempt that failed before publishing: its quarantine rows are withdrawn
        (the batch's next attempt quarantines them again)."""
        self._update(
            table,
            f"attempt = {sql_literal(attempt)}",
            {"status": sql_literal(status), "error": sql_literal(redact(error or "")[:4000])},
        )
        self._drop_quarantine(table, [attempt])

    def _drop_quarantine(self, table: str, attempts: list[str]) -> None:
        ids = ", ".join(sql_literal(a) for a in attempts)
        self._sql(
            f"DELETE FROM {self.backend.qualified(self.quarantine)} "
            f"WHERE table_name = {sql_literal(table)} AND attempt IN ({ids})"
        )

    def mark_abandoned(self, table: str, attempts: list[AttemptRow]) -> None:
        """Earlier attempts of a batch that never published: mark them, drop their quarantine."""
        if not attempts:
            return
        ids = ", ".join(sql_literal(a.attempt) for a in attempts)
        self._update(table, f"attempt IN ({ids}) AND status = 'staged'", {"status": "'abandoned'"})
        self._drop_quarantine(table, [a.attempt for a in attempts])

    def record_recovered(self, table: str, batch_id: str, version: int, when: datetime) -> None:
        """A batch found in the target's lineage with no staged record (its log write was lost),
        published at `when` (its commit's time)."""
        self.record_attempt(
            BatchRow(
                table,
                batch_id,
                f"recovered-{version}",
                "published",
                published_snapshot_id=version,
                published_at=when,
                error="recovered from the target's lineage; counts were not recorded",
            )
        )

    def _update(self, table: str, where: str, assignments: dict[str, str]) -> None:
        """The table's rows of `batches` that meet `where` get these SQL values."""
        self._mark(self.batches, assignments, f"table_name = {sql_literal(table)} AND {where}")

    def _mark(self, control_table: str, assignments: dict[str, str], where: str) -> None:
        """A control table's rows that meet `where` get these SQL values (the backend's update),
        tried again while another pipeline's commit conflicts."""
        retry_conflicts(lambda: self.backend.update(control_table, assignments, where))

    def _sql(self, statement: str) -> None:
        """A write to a control table, tried again while another pipeline's commit conflicts."""
        retry_conflicts(lambda: self.backend.spark.sql(statement))


def control_properties(backend: TableBackend) -> dict[str, str]:
    """What the control tables are created with: the state version, and the backend's settings
    for small tables updated a row at a time by many pipelines at once. A write conflict that
    still surfaces is retried with backoff by every write here (`retry_conflicts`)."""
    return {VERSION_PROPERTY: str(STATE_VERSION), **backend.log_table_properties()}


def create_control_table(backend: TableBackend, table: str, schema: str) -> None:
    """Create a control table of its own (`schema`: its DDL columns) unless it exists; another
    pipeline creating it at the same moment is retried past."""

    def create() -> None:
        if not backend.exists(table):
            properties = control_properties(backend)
            backend.create(table, parse_schema(schema), Layout(properties=properties), staged_commits=False)

    retry_conflicts(create)


def check_version(table: str, properties: dict[str, str]) -> None:
    """StateError, saying what to do, unless the control table's properties name this
    lakefresh's state version."""
    found = _version_of(properties)
    if found != STATE_VERSION:
        newer = found is not None and found > STATE_VERSION
        raise StateError(
            f"control table {table} has state version {found}, this lakefresh uses "
            f"{STATE_VERSION}: "
            + ("upgrade lakefresh." if newer else "run `lakefresh migrate PIPELINE` to upgrade it.")
        )


def _version_of(properties: dict[str, str]) -> int | None:
    found = properties.get(VERSION_PROPERTY)
    return None if found is None else int(found)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lakefresh")
    except PackageNotFoundError:
        return "unknown"
