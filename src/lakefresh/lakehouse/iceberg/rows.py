"""A few rows given as Python values appended to an Iceberg table through Iceberg's Java API,
without a Spark job: a control table's record (the `batches` log's row of a run).

Spark's append of the same rows (`literal_rows`, then `writeTo(...).append()`) plans a query,
runs a job of one task that writes the file, and commits; here only the commit is left, which
takes most of the time in both. The rows go to the JVM as the text of one JSON document in
Iceberg's single-value form (a struct by field id, a map as its keys and values, a timestamp as
ISO text), which Iceberg parses into its own records (`SingleValueParser`) and writes as one
Parquet file with its internal writer (`InternalData`), so no value crosses Py4J on its own:
Py4J gives a Java `Long` back to Python as an `int` and passes it on as an `Integer`, which a
`long` column refuses.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import time
import uuid
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from lakefresh.errors import StateError
from lakefresh.lakehouse.failures import chain
from lakefresh.lakehouse.jvm import java_class
from lakefresh.lakehouse.literals import as_datetime

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# An element id for the list type the rows are parsed as (Iceberg only reads it back in errors)
_LIST_ELEMENT_ID = 2_147_483_000


class NotWritable(Exception):
    """These rows or this table are not for this path (a partitioned table, a value that has
    no single-value JSON form): Spark's append writes them."""


def append_rows(
    spark: SparkSession,
    table: Any,
    rows: list[dict[str, Any]],
    unless: tuple[int | None, str, str] | None = None,
) -> None:
    """Append `rows` (dicts by column name; a missing key is NULL) to the Iceberg table `table`
    (Iceberg's Java `Table`, loaded fresh) in one commit. NotWritable before anything is
    written when the table is partitioned, a value has no JSON form (NaN, infinity, a map's
    NULL value) or Iceberg's Java API cannot take the rows (a runtime before Iceberg 1.9).
    With `unless` (snapshot, column, value), Iceberg refuses the commit (ValidationException)
    if a data file that may hold that value in that column was added since that snapshot."""
    if not rows:
        return
    data, path = _data_file(spark, table, rows)
    try:
        _commit(spark, table, data, unless)
    except Exception as exc:
        _drop_unless_unknown(table, path, exc)
        raise


def replace_rows(spark: SparkSession, table: Any, rows: list[dict[str, Any]], since: int | None) -> None:
    """Replace every row of the Iceberg table `table` (Java `Table`, loaded fresh) with `rows`,
    in one commit that deletes the data files of snapshot `since` (the one the caller read; None:
    the table had none) and adds one file: a compare-and-swap. Iceberg refuses the commit
    (ValidationException) if any data file was added or deleted after `since`, so of two writers
    that read the same snapshot one commits and the other is refused. NotWritable as for
    :func:`append_rows`."""
    data, path = _data_file(spark, table, rows) if rows else (None, None)
    expressions = java_class(spark, "org.apache.iceberg.expressions.Expressions")
    write = table.newOverwrite()
    if since is not None:
        tasks = table.newScan().useSnapshot(since).planFiles()
        try:
            files = tasks.iterator()
            while files.hasNext():
                write = write.deleteFile(files.next().file())
        finally:
            tasks.close()
        write = write.validateFromSnapshot(since)
    elif data is None:
        return  # nothing read, nothing to write
    if data is not None:
        write = write.addFile(data)
    write = write.conflictDetectionFilter(expressions.alwaysTrue()).validateNoConflictingData()
    try:
        write.validateNoConflictingDeletes().commit()
    except Exception as exc:
        if path is not None:
            _drop_unless_unknown(table, path, exc)
        raise


def expire_snapshots(table: Any, keep: int) -> None:
    """Expire all but the newest `keep` snapshots of a small table rewritten often (its files
    too), when it holds twice as many: without a Spark job."""
    count = sum(1 for _ in table.snapshots())
    if count > 2 * keep:
        table.expireSnapshots().retainLast(keep).expireOlderThan(int(time.time() * 1000)).commit()


def _data_file(spark: SparkSession, table: Any, rows: list[dict[str, Any]]) -> tuple[Any, str]:
    """`rows` written as one Parquet data file of the table (not yet committed): the file and
    its path."""
    if not table.spec().isUnpartitioned():
        raise NotWritable("a partitioned table")
    schema = table.schema()
    fields = json.loads(str(java_class(spark, "org.apache.iceberg.SchemaParser").toJson(schema)))["fields"]
    document = json.dumps([_struct(row, fields) for row in rows], allow_nan=False)
    path = table.locationProvider().newDataLocation(f"{uuid.uuid4()}-lakefresh.parquet")
    try:  # nothing is written yet: whatever fails here is Spark's to write
        types = java_class(spark, "org.apache.iceberg.types.Types$ListType")
        records = java_class(spark, "org.apache.iceberg.SingleValueParser").fromJson(
            types.ofRequired(_LIST_ELEMENT_ID, schema.asStruct()), document
        )
        parquet = java_class(spark, "org.apache.iceberg.FileFormat").PARQUET
        internal = java_class(spark, "org.apache.iceberg.InternalData")  # Iceberg 1.9 on
        appender = internal.write(parquet, table.io().newOutputFile(path)).schema(schema).build()
    except Exception as exc:
        raise NotWritable(f"Iceberg's Java API refused the rows: {exc}") from exc
    try:
        try:
            appender.addAll(records)
        finally:
            appender.close()
        data = (
            java_class(spark, "org.apache.iceberg.DataFiles")
            .builder(table.spec())
            .withPath(path)
            .withFormat(parquet)
            .withFileSizeInBytes(appender.length())
            .withMetrics(appender.metrics())
            .build()
        )
    except Exception as exc:
        _drop_unless_unknown(table, path, exc)
        raise
    return data, path


def _drop_unless_unknown(table: Any, path: str, exc: BaseException) -> None:
    """Delete the file written for a commit that surely failed (not one whose outcome is unknown)."""
    if not any(x.name == "CommitStateUnknownException" for x in chain(exc)):
        with contextlib.suppress(Exception):  # best effort: the write's own failure is what counts
            table.io().deleteFile(path)


def _commit(spark: SparkSession, table: Any, data: Any, unless: tuple[int | None, str, str] | None) -> None:
    if unless is None:
        table.newAppend().appendFile(data).commit()
        return
    snapshot, column, value = unless
    expressions = java_class(spark, "org.apache.iceberg.expressions.Expressions")
    write = table.newOverwrite().addFile(data).conflictDetectionFilter(expressions.equal(column, value))
    if snapshot is not None:
        write = write.validateFromSnapshot(snapshot)
    write.validateNoConflictingData().commit()


def _struct(row: dict[str, Any], fields: list[dict[str, Any]]) -> dict[str, Any]:
    """A struct in single-value JSON: by field id, every field (NULL when `row` has none). A
    NULL in a required field is refused here: Iceberg's writer would fail on it mid-file, with
    a NullPointerException that names nothing."""
    out = {}
    for f in fields:
        value = row.get(f["name"])
        if value is None and f["required"]:
            raise StateError(f"column {f['name']!r} is NOT NULL, and a row to append has no value for it")
        out[str(f["id"])] = _value(value, f["type"])
    return out


def _value(value: Any, kind: Any) -> Any:
    """`value` in Iceberg's single-value JSON form for type `kind` (the schema's JSON form)."""
    if value is None:
        return None
    if isinstance(kind, dict):
        if kind["type"] == "struct":
            return _struct(value, kind["fields"])
        if kind["type"] == "list":
            return [_value(v, kind["element"]) for v in value]
        if kind["type"] == "map":
            if any(v is None for v in value.values()):  # Iceberg's parser refuses a NULL value
                raise NotWritable("a map with a NULL value")
            return {
                "keys": [_value(k, kind["key"]) for k in value],
                "values": [_value(v, kind["value"]) for v in value.values()],
            }
        raise NotWritable(f"type {kind['type']}")
    if kind == "timestamptz":  # as PySpark's TimestampType reads a naive datetime (local time)
        from pyspark.sql.types import TimestampType

        micros = int(TimestampType().toInternal(as_datetime(value)))
        return (dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=micros)).isoformat()
    if kind == "timestamp":
        return as_datetime(value).replace(tzinfo=None).isoformat()
    if kind == "date":
        return as_datetime(value).date().isoformat()
    if kind == "string":
        return str(value)
    if kind == "boolean":
        return bool(value)
    if kind in ("int", "long"):
        return int(value)
    if kind == "binary":
        return bytes(value).hex()
    if kind in ("float", "double"):
        if not math.isfinite(value):
            raise NotWritable("a value that is not a finite number")
        return float(value)
    if kind.startswith("decimal"):  # decimal(p, s): the value at exactly that scale
        scale = int(kind.rstrip(")").split(",")[1])
        return str(Decimal(str(value)).quantize(Decimal(1).scaleb(-scale)))
    raise NotWritable(f"type {kind}")
