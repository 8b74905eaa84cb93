"""Checks of a pipeline file beyond each field's type, made without Spark: catalog types, master
URLs, partition transforms, columns named against a declared schema, references between tables;
and, for `lakefresh validate`, what only this machine can tell (source folders that are missing).

Each check says what is wrong in plain words, with the valid values and a near miss ("did you
mean ...?"). Checks that concern one field raise ValueError (pydantic puts them at the field);
checks over a table or the pipeline return `(field path, message)` pairs.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from lakefresh.columns import PROVENANCE_COLUMNS, SYSTEM_PREFIX
from lakefresh.config.base import FieldPath, hinted
from lakefresh.config.expressions import QueryColumns, query_columns
from lakefresh.errors import ConfigError

if TYPE_CHECKING:
    from lakefresh.config.models import LookupConfig, PipelineConfig, TableConfig

Problems = list[tuple[FieldPath, str]]

# --- catalog and master ------------------------------------------------------------------------

# The `type`s Iceberg 1.10's SparkCatalog builds (CatalogUtil); it lower-cases them first.
CATALOG_TYPES = ("bigquery", "glue", "hadoop", "hive", "jdbc", "nessie", "rest")


def check_catalog_type(value: str) -> str:
    if value.lower() not in CATALOG_TYPES:
        listing = f"valid types: {', '.join(CATALOG_TYPES)}"
        raise ValueError(hinted(f"unknown catalog type {value!r}", value, CATALOG_TYPES, listing))
    return value


MASTER_FORMS = (
    "valid forms: local, local[N], local[*], local[N,F], local-cluster[N,C,M], spark://HOST:PORT "
    "(several masters: spark://HOST1:PORT1,HOST2:PORT2), yarn, k8s://..., mesos://..."
)
_LOCAL = re.compile(r"local\[([0-9]+|\*)(\s*,\s*[0-9]+)?\]")
_LOCAL_CLUSTER = re.compile(r"local-cluster\[\s*[0-9]+\s*,\s*[0-9]+\s*,\s*[0-9]+\s*\]")
_HOST_PORT = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?):[0-9]{1,5}")


def master_problem(url: str) -> str | None:
    """What is wrong with a Spark master URL (as Spark 3.5 parses it), or None."""
    if url in ("local", "yarn") or _LOCAL_CLUSTER.fullmatch(url):
        return None
    local = _LOCAL.fullmatch(url)
    if local:
        threads = local.group(1)
        return (
            None
            if threads == "*" or int(threads) > 0
            else f"{url!r} runs no thread; use local[N] with N >= 1"
        )
    if url.startswith("spark://"):
        bad = [h for h in url.removeprefix("spark://").split(",") if not _HOST_PORT.fullmatch(h)]
        if bad:
            example = "e.g. spark://master:7077"
            return f"{url!r}: spark:// takes HOST:PORT for each master, {example} (got {bad[0]!r})"
        return None
    if any(url.startswith(s) and len(url) > len(s) for s in ("k8s://", "mesos://")):
        return None
    if url in ("yarn-client", "yarn-cluster"):
        return f"{url!r} is gone since Spark 2: use yarn (and spark.submit.deployMode for the mode)"
    return f"not a Spark master URL: {url!r}"


def check_master(url: str) -> str:
    problem = master_problem(url)
    if problem:
        near = [url.lower()] if master_problem(url.lower()) is None else ["local", "local[*]", "yarn"]
        generic = problem.startswith("not a Spark master URL")
        raise ValueError(hinted(problem, url, near if generic else [], MASTER_FORMS))
    return url


# --- partition transforms ----------------------------------------------------------------------

# What Iceberg 1.10 turns into a partition field (Spark3Util.toPartitionSpec); names in any case.
ONE_COLUMN_TRANSFORMS = ("identity", "years", "year", "months", "month", "days", "date", "hours", "hour")
WIDTH_TRANSFORMS = ("bucket", "truncate")
TRANSFORMS = (*ONE_COLUMN_TRANSFORMS, "date_hour", *WIDTH_TRANSFORMS)
PARTITION_FORMS = (
    "valid: a column, years(col), months(col), days(col), hours(col), bucket(N, col), "
    "truncate(N, col) (also identity, year, month, date, hour, date_hour)"
)
_NAME = r"(?:[A-Za-z_][A-Za-z0-9_]*|`[^`]+`)"
_COLUMN = re.compile(rf"\s*({_NAME}(?:\.{_NAME})*)\s*")
_APPLIED = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*\((.*)\)\s*", re.S)


def partition_column(text: str) -> str:
    """The column a partition transform reads (its top-level name); ValueError in plain words
    when Spark and Iceberg would refuse it."""
    column = _COLUMN.fullmatch(text)
    if column:
        return _top(column.group(1))
    applied = _APPLIED.fullmatch(text)
    if not applied:
        raise ValueError(f"{text!r} is not a partition transform; {PARTITION_FORMS}")
    name, args = applied.group(1), [a.strip() for a in applied.group(2).split(",")]
    lower = name.lower()
    if lower not in TRANSFORMS:
        raise ValueError(hinted(f"unknown partition transform {name!r}", name, TRANSFORMS, PARTITION_FORMS))
    if lower not in WIDTH_TRANSFORMS:
        column = _COLUMN.fullmatch(args[0]) if len(args) == 1 else None
        if column is None:
            raise ValueError(f"{name}() takes one column, e.g. {lower}(created_at); got {text!r}")
        return _top(column.group(1))
    if len(args) == 2:
        width, named = args
        if lower == "truncate" and not width.isdigit():
            width, named = named, width  # Iceberg also takes truncate(col, N)
        column = _COLUMN.fullmatch(named)
        if width.isdigit() and column:
            if int(width) < 1:
                raise ValueError(f"{name}() needs a number of at least 1, got {text!r}")
            return _top(column.group(1))
    raise ValueError(f"{name}() takes a number and a column, e.g. {lower}(16, id); got {text!r}")


_SORT_TERM = re.compile(
    r"(?P<expr>.+?)(?:\s+(?P<direction>asc|desc))?(?:\s+nulls\s+(?P<nulls>first|last))?\s*", re.I | re.S
)


def sort_term(text: str) -> str:
    """A `sort_by` item (`col`, `col DESC`, `days(ts) ASC NULLS LAST`...) as Iceberg describes a
    sort field: `expr ASC NULLS FIRST`. Nulls go first in ascending and last in descending order
    unless said otherwise, as in Iceberg and Spark. ValueError in plain words."""
    match = _SORT_TERM.fullmatch(text.strip())
    if match is None or not match.group("expr").strip():
        raise ValueError(f"{text!r} is not a sort term; e.g. id, updated_at DESC, days(ts) ASC NULLS LAST")
    expr = match.group("expr").strip()
    try:
        partition_column(expr)
    except ValueError as exc:
        raise ValueError(str(exc).replace("partition transform", "sort term")) from None
    direction = (match.group("direction") or "asc").upper()
    nulls = (match.group("nulls") or ("first" if direction == "ASC" else "last")).upper()
    expr = re.sub(r"\s*,\s*", ", ", expr)
    return f"{expr} {direction} NULLS {nulls}"


def _top(column: str) -> str:
    first = re.match(_NAME, column)
    assert first is not None
    return first.group(0).strip("`")


# --- columns against a declared schema -------------------------------------------------------


# Columns a strategy adds to its target (besides `_lf_` ones), by the field that names them.
def batch_columns(table: TableConfig) -> list[str] | None:
    """The columns a table's batches are declared to have, after its transform; None when they
    are known only once a batch is read (no `schema`, a table or query source, a transform that
    reads other views or that names a column the batch lacks)."""
    if table.transform is None:
        return table.source.declared_columns
    found = transform_columns(table)
    return None if found is None or found.unknown else found.output


def transform_columns(table: TableConfig) -> QueryColumns | None:
    """The transform's SQL resolved against the view `batch` (the declared schema, and the
    provenance columns lakefresh adds); None without a transform, or when its columns are known
    only once a batch is read."""
    declared = table.source.declared_columns
    if table.transform is None or declared is None:
        return None
    return query_columns(table.transform.sql, {"batch": [*declared, *PROVENANCE_COLUMNS]})


def transform_problems(table: TableConfig) -> Problems:
    """A column the transform names that the batch does not have (its declared schema), with
    the near miss among the columns it has (never lakefresh's own `_lf_` ones)."""
    found = transform_columns(table)
    if found is None or found.unknown is None:
        return []
    declared = table.source.declared_columns or []
    message = f"the SQL names column {found.unknown!r}, which the view batch does not have"
    listing = f"batch's columns (the source's schema): {', '.join(declared)}"
    return [(("transform", "sql"), hinted(message, found.unknown, declared, listing))]


def unknown_columns(tables: list[TableConfig]) -> list[str]:
    """Tables whose columns `validate` cannot know (they are checked when a batch is read),
    one line each: what `lakefresh validate` warns of."""
    lines = []
    for position, table, parent in table_positions(tables):
        where = f"tables[{position}] ({table.name})"
        if parent is not None:  # a history table: its table's line says it
            continue
        if table.source.declared_columns is None:
            lines.append(
                f"{where}: its source declares no schema: its columns (keys, transform) are "
                "known, and checked, only when a batch is read"
            )
        elif table.transform is not None and transform_columns(table) is None:
            lines.append(
                f"{where}.transform.sql: reads views or tables whose columns are known only "
                "when it runs: its columns are checked then"
            )
    return lines


def unleased_on_a_file_catalog(config: PipelineConfig) -> list[str]:
    """A pipeline that takes no run lease while Iceberg tables of it are in a `hadoop` catalog,
    whose commits (a check, then a rename) are not atomic between processes: two runs at once
    could both commit on one head there. What `lakefresh validate` warns of."""
    iceberg = config.catalog.control_format == "iceberg" or any(
        config.format_of(t) == "iceberg" for t in config.tables
    )
    if config.run.lease or config.catalog.type.lower() != "hadoop" or not iceberg:
        return []
    return [
        "run.lease: false with the hadoop catalog: two runs at once could apply a batch twice, its "
        "commits are not atomic between processes; keep the lease, or share a catalog with atomic "
        "commits (jdbc, hive, rest, glue, nessie)"
    ]


def column_problems(table: TableConfig) -> Problems:
    """Columns the strategy, the lookups and the partitioning name that the declared schema
    lacks (`_lf_` columns, which lakefresh adds, are never flagged)."""
    declared = batch_columns(table)
    if declared is None:
        return []
    problems: Problems = []
    declared = [c for c in declared if not c.startswith(SYSTEM_PREFIX)]  # never offered
    made = "the transform's columns" if table.transform is not None else "the source's schema"
    listing = f"{'transform' if table.transform is not None else 'schema'} columns: {', '.join(declared)}"

    def check(path: FieldPath, column: str, known: list[str]) -> None:
        if column not in known and not column.startswith(SYSTEM_PREFIX):
            message = f"column {column!r} is not in {made}"
            problems.append((path, hinted(message, column, known, listing)))

    for path, column in table.strategy.column_fields():
        check(("strategy", *path), column, declared)
    looked_up: list[str] = []  # a lookup may read the surrogate key an earlier lookup added
    for i, lookup in enumerate(table.lookups):
        for fact_column in lookup.keys:
            check(("lookups", i, "keys", fact_column), fact_column, [*declared, *looked_up])
        if lookup.at:
            check(("lookups", i, "at"), lookup.at, [*declared, *looked_up])
        looked_up += [lookup.surrogate_key] if lookup.surrogate_key else []
    if any(lookup.surrogate_key is None for lookup in table.lookups):
        return problems  # a surrogate key named by its dimension: the target's columns are not all known here
    target = {c.lower() for c in [*declared, *table.strategy.added_columns(), *looked_up]}
    for i, transform in enumerate(table.partition_by):
        column = partition_column(transform)
        if column.lower() not in target and not column.startswith(SYSTEM_PREFIX):
            message = f"partition column {column!r} is not in {made}"
            problems.append((("partition_by", i), hinted(message, column, declared, listing)))
    for i, term in enumerate(table.sort_by):
        column = partition_column(term.rsplit(" ", 3)[0])
        if column.lower() not in target and not column.startswith(SYSTEM_PREFIX):
            message = f"sort column {column!r} is not in {made}"
            problems.append((("sort_by", i), hinted(message, column, declared, listing)))
    return problems


# --- references between tables -----------------------------------------------------------------


def reference_problems(tables: list[TableConfig]) -> Problems:
    """Repeated table names, unknown `depends_on` tables, lookups of what is not a dimension."""
    names = [t.name for t in tables]
    listing = f"tables: {', '.join(dict.fromkeys(names))}"
    problems: Problems = []
    for i, table in enumerate(tables):
        if table.name in names[:i]:
            problems.append((("tables", i, "name"), f"table name {table.name!r} is used more than once"))
        for j, dependency in enumerate(table.depends_on):
            if dependency not in names:
                message = hinted(f"unknown table {dependency!r}", dependency, names, listing)
                problems.append((("tables", i, "depends_on", j), message))
        for j, lookup in enumerate(table.lookups):
            found = lookup_problems(lookup, {t.name: t for t in tables}, listing)
            problems += [(("tables", i, "lookups", j, *path), message) for path, message in found]
        for j, rule in enumerate(table.rules):  # a catalog table is named with its namespace
            other = rule.relationships.to if rule.relationships else None
            if other is not None and other not in names and "." not in other:
                message = hinted(f"unknown table {other!r} (or give namespace.table)", other, names, listing)
                problems.append((("tables", i, "rules", j, "relationships", "to"), message))
    return problems


def lookup_problems(lookup: LookupConfig, tables: dict[str, TableConfig], listing: str) -> Problems:
    dimension = tables.get(lookup.dimension)
    if dimension is None:
        message = f"no such table in the pipeline: {lookup.dimension!r}"
        return [(("dimension",), hinted(message, lookup.dimension, list(tables), listing))]
    strategy = dimension.strategy
    if not strategy.dimension:
        from lakefresh.config.strategies import DIMENSION_KINDS

        kinds = ", ".join(DIMENSION_KINDS)
        return [(("dimension",), f"the dimension must be a {kinds} table, not {strategy.kind!r}")]
    if strategy.surrogate() is None:
        return [(("dimension",), "the dimension has no surrogate_key; give its strategy one")]
    keys = strategy.key_columns()
    problems: Problems = []
    if sorted(lookup.keys.values()) != sorted(keys):
        problems.append((("keys",), f"`keys` must map a fact column to each of {keys}, got {lookup.keys}"))
    if lookup.at and strategy.validity_columns() is None:
        problems.append((("at",), f"`at` is only for scd2 dimensions, not {strategy.kind!r}"))
    return problems


def check_table_names(tables: list[TableConfig], requested: list[str]) -> None:
    """Tables asked for by name (`run --table NAME`) must be tables of the pipeline."""
    names = [t.name for t in tables]
    unknown = [n for n in requested if n not in names]
    if unknown:
        listing = f"tables: {', '.join(names)}"
        raise ConfigError("; ".join(hinted(f"unknown table {n!r}", n, names, listing) for n in unknown))


# --- what only this machine can tell (`lakefresh validate`) --------------------------------------


def table_positions(tables: list[TableConfig]) -> list[tuple[int, TableConfig, str | None]]:
    """Each table with its position in the file as written, and for a `<name>_history` table
    that `history: true` brought, the name of the table that brought it."""
    out: list[tuple[int, TableConfig, str | None]] = []
    position = -1
    for table in tables:
        previous = out[-1] if out else None
        if (
            previous is not None
            and previous[2] is None
            and previous[1].strategy.keeps_history()
            and table.name == f"{previous[1].name}_history"
        ):
            out.append((position, table, previous[1].name))
        else:
            position += 1
            out.append((position, table, None))
    return out


def local_problems(tables: list[TableConfig], pipeline_file: Path) -> list[str]:
    """Source folders that do not exist here (URIs such as s3a:// cannot be checked from here and
    are skipped), and a malformed LAKEFRESH_SPARK_MASTER."""
    base = str(pipeline_file.resolve().parent)
    lines = []
    for position, table, parent in table_positions(tables):
        path = table.source.location
        if parent is not None or path is None or "://" in path:
            continue
        if table.source.change_feed:  # a table this pipeline may create first
            continue
        resolved = path if path.startswith("/") else f"{base.rstrip('/')}/{path}"  # as sources do
        if not os.path.exists(resolved):
            what = "source folder" if table.source.kind == "files" else "Synapse Link export"
            lines.append(f"tables[{position}] ({table.name}).source.path: {what} {resolved} does not exist")
    master = os.environ.get("LAKEFRESH_SPARK_MASTER")
    if master:
        try:
            check_master(master)
        except ValueError as exc:
            lines.append(f"LAKEFRESH_SPARK_MASTER (overrides spark.master): {exc}")
    return lines


# a query that reads the watermark's own rows again: `>= {{ watermark }}`
READS_WATERMARK_AGAIN = re.compile(r">=\s*\{\{\s*watermark\s*\}\}")


def overlap_problems(table: TableConfig) -> Problems:
    """A `jdbc` source that reads rows again (`look_back`, or `>=` the watermark) into an
    `append` target, which would store each of them once per read: a keyed strategy, or a range
    one, takes the overlap as rows it already holds."""
    source = table.source
    if getattr(source, "kind", None) != "jdbc" or table.strategy.kind not in ("append", "none"):
        return []
    again = bool(getattr(source, "look_back", None))  # 0: no look-back
    field = "look_back" if again else "query"
    if not again and not READS_WATERMARK_AGAIN.search(getattr(source, "query", "")):
        return []
    return [
        (
            ("source", field),
            "reads rows it has read before (look_back, or >= {{ watermark }}), which an append "
            "target would store again: use strategy kind key (with the table's keys), or a range "
            "strategy (timestamp, sequence) over the watermark column",
        )
    ]


def feed_problems(table: TableConfig) -> Problems:
    """A change feed (`table_changes`, `delta_changes`) into an `append` target with no
    transform: its DELETE changes would be appended as rows like its inserts, the change type
    being a `_lf_` column, which is not stored."""
    if not table.source.change_feed:
        return []
    if table.strategy.kind not in ("append", "none") or table.transform is not None:
        return []
    return [
        (
            ("strategy", "kind"),
            "an append target of a change feed would store its deletes as rows like its inserts: "
            "keep the change type with a transform (sql: SELECT *, _lf_change_type AS op FROM "
            "batch), or use strategy kind key (deletes delete) or scd2 (deletes close a version)",
        )
    ]
