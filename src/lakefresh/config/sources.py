"""Source configs, one model per `kind`, joined as a discriminated union."""

from __future__ import annotations

import re
from datetime import datetime
from typing import ClassVar, Literal, get_args

from pydantic import Field, field_validator, model_validator

from lakefresh.config.base import Duration, Model, parse_duration
from lakefresh.config.types import VALID_TYPES, type_problem


class SourceBase(Model):
    """What every source kind's config declares. The rest of lakefresh asks these, never a
    kind's name: adding a kind touches its config model, its source class (sources/) and their
    tests."""

    # reads another table's changes, its positions kept in the `loads` control table
    change_feed: ClassVar[bool] = False
    # every batch it listed can be read again, as it was (a full refresh, a reload)
    retains_batches: ClassVar[bool] = True
    # a batch is files, so that `replay` can apply a corrected copy of one
    replays_files: ClassVar[bool] = False
    # it reads a Delta table's log (a Spark Connect client reads it itself: `validate` says so)
    reads_delta_log: ClassVar[bool] = False

    @classmethod
    def kinds(cls) -> tuple[str, ...]:
        """The `kind` values that select this model."""
        return tuple(get_args(cls.model_fields["kind"].annotation))

    @property
    def location(self) -> str | None:
        """The folder or table location it reads (relative to the pipeline file, or a URI);
        None for a catalog table or a database."""
        return None

    @property
    def read_table(self) -> str | None:
        """The catalog table (`namespace.table`) it reads, if any."""
        return None

    @property
    def timed_by_rows(self) -> bool:
        """Whether a batch's time is known only once its rows are read."""
        return False

    @property
    def declared_columns(self) -> list[str] | None:
        """The columns the config declares, to check keys against before Spark starts; None
        when they are known only when a batch is read (a table, a query, each folder's
        model.json)."""
        return None


class CsvOptions(Model):
    """How CSV files are parsed. Parsing is strict: bad rows go to quarantine."""

    header: bool = Field(True, description="The first line names the columns.")
    delimiter: str = Field(",", description="Field separator (one character).")
    quote: str = Field('"', description="Quote character.")
    escape: str = Field('"', description='Escape character inside quotes ("" by default, RFC 4180).')
    encoding: str = Field(
        "UTF-8",
        description="File encoding: UTF-8, UTF-16, UTF-32 (a byte order mark gives the byte order "
        "and is dropped), UTF-16LE, ISO-8859-1, windows-1252... Bytes that are not valid in it "
        "quarantine their row.",
    )
    null_value: str = Field("", description="The text that stands for NULL.")
    timestamp_format: str | None = Field(None, description="Spark datetime pattern for timestamps.")
    date_format: str | None = Field(None, description="Spark datetime pattern for dates.")

    @field_validator("delimiter", "quote", "escape")
    @classmethod
    def _one_char(cls, value: str) -> str:
        if len(value) != 1:
            raise ValueError(f"must be exactly one character, got {value!r}")
        return value

    @field_validator("encoding")
    @classmethod
    def _text_encoding(cls, value: str) -> str:
        try:
            "".encode(value)  # also refuses codecs that are not text encodings (rot13, base64)
        except LookupError:
            raise ValueError(
                f"unknown encoding {value!r}; e.g. UTF-8, UTF-16, UTF-32, ISO-8859-1, windows-1252"
            ) from None
        return value


class BatchTimeConfig(Model):
    """Where a `files` batch's time comes from, besides its files' modification time
    (sources/batch_times.py). Give one of name, metadata or column."""

    name: str | None = Field(
        None,
        description="A regular expression over the batch's file (or folder) name with a group "
        "named time, e.g. 'export_(?P<time>[0-9T:.-]+Z)[.]csv'.",
    )
    metadata: str | None = Field(
        None,
        description="A JSON file beside the batch ({batch}: its name, {stem}: without extension; "
        "with layout: folder, inside it), e.g. '{stem}.meta.json'. The batch waits until it is there.",
    )
    field: str = Field("batch_time", description="The metadata file's field holding the time.")
    column: str | None = Field(
        None,
        description="A timestamp, date or ISO-text column of the batch: its largest value is the "
        "batch's time (a batch with no value keeps its files' time).",
    )
    format: str | None = Field(
        None,
        description="A datetime.strptime format for the name's or the field's text (microseconds: "
        "%f); default ISO 8601. An offset converts to UTC; a time without one is UTC.",
    )

    @model_validator(mode="after")
    def _one_source(self) -> BatchTimeConfig:
        given = [n for n in ("name", "metadata", "column") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError(f"give one of name, metadata or column, got {given or 'none'}")
        if self.name is not None:
            try:
                groups = re.compile(self.name).groupindex
            except re.error as exc:
                raise ValueError(f"name {self.name!r} is not a regular expression: {exc}") from None
            if "time" not in groups:
                raise ValueError(f"name {self.name!r} needs a group named time: (?P<time>...)")
        return self


class FilesSourceConfig(SourceBase):
    """A folder where each batch is a file, or a subfolder of files."""

    kind: Literal["files"]
    replays_files: ClassVar[bool] = True
    path: str = Field(description="The folder that batches land in; relative to the pipeline file.")
    format: Literal["csv", "parquet", "json"] = Field(description="File format; json is JSON lines.")
    layout: Literal["file", "folder"] = Field(
        "file", description="file: every matching file is a batch; folder: every subfolder is one."
    )
    pattern: str | None = Field(
        None,
        description="Glob of the files that make up batches; default *.csv, *.parquet or *.json*.",
    )
    order_by: Literal["name", "modified", "batch_time", "version"] = Field(
        "name",
        description="Batch order: by name, by modification time (then name), by batch_time (its "
        "name or metadata; then name), or by the integer version in the name (see version).",
    )
    batch_time: BatchTimeConfig | None = Field(
        None,
        description="The batch's time from its name, a metadata file or a column, exactly "
        "(microseconds), instead of its files' newest modification time.",
    )
    version: str | None = Field(
        None,
        description="With order_by: version, a regular expression whose first group is the "
        "batch's integer version in its name, e.g. 'snapshot_([0-9]+)'.",
    )
    completion_marker: str | None = Field(
        "_SUCCESS",
        description="With layout: folder, a subfolder is taken only once this file is in it; "
        "null takes every subfolder at once.",
    )
    min_file_age: Duration = Field(
        0.0,
        description="A batch whose newest file was modified less than this long before the "
        "listing waits (it may still be written in place), and so does every batch after it: "
        "90s, 5m, 1h. 0 takes every file at once (writers that rename complete files in).",
    )
    schema_: dict[str, str] | None = Field(
        None,
        alias="schema",
        description="Column name to Spark type (string, int, bigint, double, decimal(10,2), date, "
        "timestamp, boolean...). Omitted: the target's types, else inferred from the batch.",
    )
    timezone: str = Field(
        "UTC",
        description="The IANA time zone of timestamps written without an offset (2025-03-09 "
        "10:00:00), e.g. Europe/Amsterdam; text with an offset or Z keeps it. Spark's session "
        "time zone plays no part.",
    )
    csv: CsvOptions = Field(default_factory=CsvOptions)  # type: ignore[arg-type]

    @field_validator("min_file_age", mode="before")
    @classmethod
    def _age(cls, value: object) -> float:
        zero = re.fullmatch(r"\s*0+(\.0*)?\s*(ms|s|m|h|d)?\s*", str(value))
        return 0.0 if zero else parse_duration(value)  # type: ignore[arg-type]

    @field_validator("timezone")
    @classmethod
    def _iana_zone(cls, value: str) -> str:
        from zoneinfo import ZoneInfo

        try:
            if value in {"localtime", "posixrules", "Factory"}:  # files of the system, not zones
                raise KeyError(value)
            ZoneInfo(value)
        except (ValueError, KeyError):  # ZoneInfoNotFoundError is a KeyError
            raise ValueError(
                f"unknown time zone {value!r}; give an IANA name such as UTC, Europe/Amsterdam, "
                "America/New_York"
            ) from None
        return value

    @field_validator("schema_")
    @classmethod
    def _types(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        for column, type_ in (value or {}).items():
            problem = type_problem(type_)
            if problem:
                said = problem if problem.startswith("unknown type") else f"type {type_!r}: {problem}"
                raise ValueError(f"column {column!r} has {said}; valid types: {VALID_TYPES}")
        return value

    @model_validator(mode="after")
    def _marker_only_for_folders(self) -> FilesSourceConfig:
        if self.format != "csv" and "csv" in self.model_fields_set:
            raise ValueError(f"csv options are only for format: csv, not {self.format}")
        if self.order_by == "version" and self.version is None:
            raise ValueError("order_by: version needs version: a regular expression with one group")
        if self.version is not None:
            try:
                if re.compile(self.version).groups < 1:
                    raise ValueError(f"version {self.version!r} needs a group: ([0-9]+)")
            except re.error as exc:
                raise ValueError(f"version {self.version!r} is not a regular expression: {exc}") from None
        timed = self.batch_time is not None and self.batch_time.column is None
        if self.order_by == "batch_time" and not timed:
            raise ValueError("order_by: batch_time needs batch_time: {name: ...} or {metadata: ...}")
        return self

    @property
    def declared_columns(self) -> list[str] | None:
        return list(self.schema_) if self.schema_ else None

    @property
    def location(self) -> str | None:
        return self.path

    @property
    def timed_by_rows(self) -> bool:
        return self.batch_time is not None and self.batch_time.column is not None

    @property
    def file_pattern(self) -> str:
        return self.pattern or {"csv": "*.csv", "parquet": "*.parquet", "json": "*.json*"}[self.format]


class TableSnapshotSourceConfig(SourceBase):
    """A full read of a catalog table, or of a SQL query, as one batch."""

    kind: Literal["table_snapshot"]
    table: str | None = Field(
        None,
        description="`namespace.table` of the catalog: one batch per snapshot of it (a run with no "
        "new snapshot reads nothing).",
    )
    query: str | None = Field(
        None, description="A SQL query over the catalog instead: every run reads it as a new batch."
    )

    @property
    def read_table(self) -> str | None:
        return self.table

    @model_validator(mode="after")
    def _one_of(self) -> TableSnapshotSourceConfig:
        if (self.table is None) == (self.query is None):
            raise ValueError("give exactly one of `table` or `query`")
        return self


class ChangeFeedBase(SourceBase):
    """What every change-feed source with a load log has."""

    change_feed: ClassVar[bool] = True
    retains_batches: ClassVar[bool] = False  # a change feed starts again: lakefresh reset-load

    keys: list[str] = Field(
        default_factory=list,
        description="Identifier columns: a delete and an insert of one key in a commit become an "
        "update; needed for `dedupe`. Default: the table's identifier fields.",
    )
    load_id: str | None = Field(
        None,
        description="Names this reader in the `loads` log, so several pipelines read one table "
        "independently. Default: the target table's name.",
    )
    dedupe: bool = Field(False, description="Keep only the last change of each key in a load.")

    @model_validator(mode="after")
    def _dedupe_needs_keys(self) -> ChangeFeedBase:
        if self.dedupe and not self.keys:
            raise ValueError("dedupe: true needs `keys`")
        return self


class TableChangesSourceConfig(ChangeFeedBase):
    """Another Iceberg table's changes between snapshots (its changelog), with a load log."""

    kind: Literal["table_changes"]
    table: str = Field(description="`namespace.table` of the catalog whose changes are read.")

    @property
    def read_table(self) -> str | None:
        return self.table


class DeltaChangesSourceConfig(ChangeFeedBase):
    """A Delta table's change data feed between versions, with a load log."""

    kind: Literal["delta_changes"]
    reads_delta_log: ClassVar[bool] = True
    path: str = Field(
        description="The Delta table's location: relative to the pipeline file, or a URI Spark "
        "reads (s3a://..., abfss://...). Its change data feed must be on "
        "(delta.enableChangeDataFeed)."
    )

    @property
    def location(self) -> str | None:
        return self.path


class SynapseLinkSourceConfig(SourceBase):
    """An Azure Synapse Link "Incremental CSV" export: one entity of its timestamped folders."""

    kind: Literal["synapse_link"]
    path: str = Field(
        description="The export's root (the container): timestamped folders and Changelog/; "
        "relative to the pipeline file, or a URI Spark reads (abfss://...)."
    )
    entity: str = Field(description="The entity (table) to read, as model.json names it.")
    mode: Literal["streaming", "backfill"] = Field(
        "streaming",
        description="streaming: each complete folder of the look-back window is a batch; "
        "backfill: every complete folder from backfill_start_date is one batch "
        "(`lakefresh backfill` runs a table in this mode once).",
    )
    look_back_interval: Duration = Field(
        86400.0,
        description="Streaming reads folders from (changelog.info's time - this) on: 90s, 5m, 1h, 2d. "
        "A table fed before whose next folder is older fails instead of skipping it.",
    )
    backfill_start_date: datetime | None = Field(
        None, description="Backfill reads folders from this time (UTC) on; default: the first."
    )
    model_grace_period: Duration = Field(
        3600.0,
        description="How long a finished folder (older than the one changelog.info names) may "
        "lack its model.json: until then it and the folders after it wait; after it the run "
        "fails naming the folder (never skipped in silence). 90s, 5m, 1h, 2d.",
    )
    backfill_behavior: Literal["overwrite", "merge"] = Field(
        "overwrite",
        description="overwrite: build the table anew in a temporary table, then replace the live "
        "one in one commit; merge: merge the backfilled rows into the live table.",
    )

    @property
    def location(self) -> str | None:
        return self.path

    @field_validator("look_back_interval", "model_grace_period", mode="before")
    @classmethod
    def _duration(cls, value: object) -> float:
        return parse_duration(value)  # type: ignore[arg-type]

    @field_validator("backfill_start_date")
    @classmethod
    def _naive_utc(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is not None:
            from datetime import UTC

            value = value.astimezone(UTC).replace(tzinfo=None)
        return value


WATERMARK_TOKEN = re.compile(r"\{\{\s*watermark\s*\}\}")


class JdbcSourceConfig(SourceBase):
    """A database query read through Spark's JDBC reader, from a watermark on."""

    kind: Literal["jdbc"]
    retains_batches: ClassVar[bool] = False  # a query reads what the database holds now
    url: str = Field(description="JDBC URL, e.g. jdbc:postgresql://db:5432/shop.")
    query: str = Field(
        description="SQL in the database's dialect with the token {{ watermark }}, e.g. "
        "SELECT * FROM orders WHERE modified_at > {{ watermark }}."
    )
    watermark_column: str = Field(
        description="The query's column the watermark is over: its highest value in the target is "
        "the watermark (spell it as the database needs it in SQL)."
    )
    initial_watermark: datetime | int | float | str = Field(
        description="The watermark while the target holds no row, e.g. 1970-01-01 00:00:00 or 0."
    )
    look_back: Duration | None = Field(
        None,
        description="Read this much before the watermark again, for late commits: a duration "
        "(10m) for timestamp columns, a number for numeric ones. The keyed merge absorbs the overlap.",
    )
    user: str | None = Field(None, description="Database user (e.g. {{ env.PGUSER }}).")
    password: str | None = Field(None, description="Its password (e.g. {{ env.PGPASSWORD }}).")
    driver: str | None = Field(
        None, description="JDBC driver class; default from the URL (postgresql, mysql, sqlserver...)."
    )
    options: dict[str, str] = Field(
        default_factory=dict, description="Further Spark JDBC options, e.g. fetchsize: '10000'."
    )

    @field_validator("query")
    @classmethod
    def _has_token(cls, value: str) -> str:
        if not WATERMARK_TOKEN.search(value):
            raise ValueError(
                "the query must use the token {{ watermark }}, e.g. WHERE modified_at > {{ watermark }}"
            )
        return value

    @field_validator("look_back", mode="before")
    @classmethod
    def _look_back(cls, value: object) -> float | None:
        if value is None or isinstance(value, int | float):
            return value
        return parse_duration(str(value))

    @field_validator("url")
    @classmethod
    def _jdbc_url(cls, value: str) -> str:
        if not value.startswith("jdbc:"):
            raise ValueError(f"must be a JDBC URL starting with jdbc:, got {value!r}")
        return value


SourceConfig = (
    FilesSourceConfig
    | TableSnapshotSourceConfig
    | TableChangesSourceConfig
    | DeltaChangesSourceConfig
    | SynapseLinkSourceConfig
    | JdbcSourceConfig
)
SOURCE_KINDS = tuple(kind for model in get_args(SourceConfig) for kind in model.kinds())
