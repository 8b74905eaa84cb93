"""A few rows given as Python values appended to an Iceberg table through Iceberg's Java API,
without a Spark job: a control table's record (the `batches` log's row of a run); and a small
control table's rows read back the same way (the `leases` table, read twice a run).

Spark's append of the same rows (`literal_rows`, then `writeTo(...).append()`) plans a query,
runs a job of one task that writes the file, and commits; here only the commit is left, which
takes most of the time in both. The rows go to the JVM as the text of one JSON document in
Iceberg's single-value form (a struct by field id, a map as its keys and values, a timestamp as
ISO text), which Iceberg parses into its own records (`SingleValueParser`) and writes as one
Parquet file with its internal writer (`InternalData`), so no value crosses Py4J on its own:
Py4J gives a Java `Long` back to Python as an `int` and passes it on as an `Integer`, which a
`long` column refuses. A read goes the other way: each data file's records read by Iceberg's
internal reader, the whole list written as one such JSON document, and its values made what
PySpark's `collect` gives (a Spark read of the same rows plans a query and runs a job).
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


class NotReadable(Exception):
    """This table's rows are not for this path (delete files, a type without a reading here, a
    runtime before Iceberg 1.9): Spark reads them."""


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


def read_rows(spark: SparkSession, table: Any, snapshot: int) -> list[dict[str, Any]]:
    """Every row of the Iceberg table `table` (Java `Table`) at `snapshot`, as PySpark's
    `collect()` gives them (`Row.asDict(recursive=True)`): a timestamp as a naive datetime in
    local time, a decimal as a Decimal, a map as a dict. NotReadable, before anything is read,
    when a file has deletes, or a column's type is not read here."""
    schema = table.schema()
    fields = json.loads(str(java_class(spark, "org.apache.iceberg.SchemaParser").toJson(schema)))["fields"]
    _readable({"type": "struct", "fields": fields})
    lists = java_class(spark, "org.apache.iceberg.relocated.com.google.common.collect.Lists")
    records = lists.newArrayList()
    try:
        internal = java_class(spark, "org.apache.iceberg.InternalData")  # Iceberg 1.9 on
        parquet = java_class(spark, "org.apache.iceberg.FileFormat").PARQUET
    except Exception as exc:
        raise NotReadable(f"Iceberg's Java API has no internal reader: {exc}") from exc
    tasks = table.newScan().useSnapshot(snapshot).planFiles()
    try:
        found = tasks.iterator()
        while found.hasNext():
            task = found.next()
            if not task.deletes().isEmpty() or str(task.file().format()) != "PARQUET":
                raise NotReadable("a data file with deletes, or not in Parquet")
            reader = internal.read(parquet, table.io().newInputFile(task.file().location()))
            rows = reader.project(schema).build()
            try:
                records.addAll(lists.newArrayList(rows))
            finally:
                rows.close()
    finally:
        tasks.close()
    types = java_class(spark, "org.apache.iceberg.types.Types$ListType")
    document = java_class(spark, "org.apache.iceberg.SingleValueParser").toJson(
        types.ofRequired(_LIST_ELEMENT_ID, schema.asStruct()), records
    )
    return [_read_struct(row, fields) for row in json.loads(str(document))]


_SIMPLE = ("string", "boolean", "int", "long", "float", "double", "date", "timestamp", "timestamptz")


def _readable(kind: Any) -> None:
    """NotReadable unless every type in `kind` (the schema's JSON form) is one `_read` reads."""
    if not isinstance(kind, dict):
        if kind not in _SIMPLE and not kind.startswith("decimal"):
            raise NotReadable(f"type {kind}")
        return
    if kind["type"] == "struct":
        inner = [f["type"] for f in kind["fields"]]
    elif kind["type"] == "list":
        inner = [kind["element"]]
    elif kind["type"] == "map":
        inner = [kind["key"], kind["value"]]
    else:
        raise NotReadable(f"type {kind['type']}")
    for each in inner:
        _readable(each)


def _read_struct(value: dict[str, Any], fields: list[dict[str, Any]]) -> dict[str, Any]:
    return {f["name"]: _read(value.get(str(f["id"])), f["type"]) for f in fields}


def _read(value: Any, kind: Any) -> Any:
    """A single-value JSON `value` of type `kind` as PySpark gives it."""
    if value is None:
        return None
    if isinstance(kind, dict):
        if kind["type"] == "struct":
            return _read_struct(value, kind["fields"])
        if kind["type"] == "list":
            return [_read(v, kind["element"]) for v in value]
        keys = [_read(k, kind["key"]) for k in value["keys"]]
        return dict(zip(keys, [_read(v, kind["value"]) for v in value["values"]], strict=True))
    if kind == "timestamptz":  # PySpark's TimestampType: a naive datetime in local time
        from pyspark.sql.types import TimestampType

        moment = dt.datetime.fromisoformat(value)
        micros = (moment - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1)
        return TimestampType().fromInternal(micros)
    if kind == "timestamp":
        return dt.datetime.fromisoformat(value)
    if kind == "date":
        return dt.date.fromisoformat(value)
    if kind.startswith("decimal"):
        return Decimal(str(value))
    if kind in ("float", "double"):
        return float(value)
    return value


def expire_snapshots(table: Any, keep: int) -> None:
    """Expire all but the newest `keep` snapshots of a small table rewritten often (its files
    too), when it holds twice as many: without a Spark job. The snapshots are counted in the
    JVM (the table metadata's list), not walked one call at a time."""
    count = table.operations().current().snapshots().size()
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
