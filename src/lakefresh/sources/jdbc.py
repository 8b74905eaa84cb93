"""Source `jdbc`: a database query, read from a watermark on through Spark's JDBC reader.

The watermark is the highest value of `watermark_column` in the target's published snapshot (or
`initial_watermark` while the target holds no row), so it moves in the same commit as the data and
can never run ahead of it or behind it. With `look_back`, the query reads that much before the
watermark again, for rows that committed late with an older value; the keyed merge absorbs the
overlap (those rows come out unchanged, U).

A run lists at most one batch. Listing asks the database for the highest value and the row count
of the query from the lower bound on; the batch is the query's rows up to that highest value,
fixed then, so rows a concurrent writer commits while the batch is read wait for the next batch.
Its id is `jdbc@<highest value>#<rows>`, the rows counted after the highest value minus the
look-back up to it (a window anchored on the batch itself, not on the target's watermark): a run
that finds nothing new (the same highest value and count) lists a batch already applied, and
writes nothing; a late commit inside the look-back window changes the count, so it is read even
when nothing newer came.

A batch that was attempted and not applied (failed, or the process died) is listed again with the
boundaries and id it had, however much later the retry comes, unless the query or the target
moved since (see `JdbcSource._unfinished`).

`{{ watermark }}` in the query becomes a SQL literal: the number as it is, anything else quoted
('2025-01-31 10:00:00.5'), which the database casts to the column's type.

A time is written as a wall-clock time in the JVM's default time zone (`user.timezone`), whatever
Spark's session time zone. That is the zone in which JDBC drivers turn a database's naive times
(`timestamp`, `DATETIME`) into instants, and in which PostgreSQL's driver sets the connection's
zone: the database reads the literal as the time it stored. Written in UTC instead, on a machine
whose zone is not UTC, the watermark would be hours off, and rows written in between never read.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from lakefresh.clock import utc_now
from lakefresh.config.sources import WATERMARK_TOKEN, JdbcSourceConfig
from lakefresh.errors import SourceError
from lakefresh.lakehouse.failures import describe
from lakefresh.lakehouse.jvm import java_class
from lakefresh.lakehouse.sql import quote, sql_literal, standard_sql_literal
from lakefresh.sources.base import BatchRef, ReadBatch, SourceContext, returned_order, with_provenance
from lakefresh.state.control import ControlTables

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

# A last attempt in one of these states did not apply its batch: the next run reads it again
# (`rolled_back` and `forgotten` batches were applied, then undone on purpose)
RETRIED = ("failed", "audit_failed", "refused", "abandoned", "staged")

DRIVERS = {
    "postgresql": "org.postgresql.Driver",
    "mysql": "com.mysql.cj.jdbc.Driver",
    "mariadb": "org.mariadb.jdbc.Driver",
    "sqlserver": "com.microsoft.sqlserver.jdbc.SQLServerDriver",
    "oracle": "oracle.jdbc.OracleDriver",
    "db2": "com.ibm.db2.jcc.DB2Driver",
}
# sqlglot's dialect of each database, to tell whether a query ends in ORDER BY (`returned_order`)
DIALECTS = {
    "postgresql": "postgres",
    "mysql": "mysql",
    "mariadb": "mysql",
    "sqlserver": "tsql",
    "oracle": "oracle",
}


class JdbcSource:
    kind = "jdbc"
    config_type = JdbcSourceConfig

    def __init__(self, config: JdbcSourceConfig, ctx: SourceContext) -> None:
        self.config = config
        self.ctx = ctx
        self.column = config.watermark_column.strip('"`[]')  # as the target spells it

    def list_batches(self) -> list[BatchRef]:
        named = WATERMARK_TOKEN.search(self.config.query) is not None
        lower = self._lower_bound() if named else ""  # once, however often the query names it
        query = WATERMARK_TOKEN.sub(lambda _: lower, self.config.query)
        unfinished = self._unfinished(query)
        if unfinished is not None:
            return [unfinished]
        column = self.config.watermark_column
        stats = self._query(f"SELECT max({column}) AS hi FROM ({query}) lf_q")
        row = stats.selectExpr(f"{self._as_text('hi', stats.schema['hi'].dataType)} AS hi").first()
        if row is None or row["hi"] is None:
            return []
        number = _is_number(stats.schema["hi"].dataType)
        upper = _literal(row["hi"], number)
        look_back = self.config.look_back or 0
        since = _literal(_minus(row["hi"], look_back, number), number)
        # (hi - look_back, hi], as a `>` query from the watermark reads it; [hi, hi] without one
        window = f"{column} {'>' if look_back else '>='} {since} AND {column} <= {upper}"
        counted = self._query(f"SELECT count(*) AS n FROM ({query}) lf_q WHERE {window}").first()
        now = utc_now()
        replay: dict[str, object] = {"kind": "jdbc", "query": query, "upper": upper, "column": self.column}
        replay["on"] = self._head()  # the target's commit it was listed on (see _past_skipped)
        return [
            BatchRef(
                batch_id=f"jdbc@{row['hi']}#{counted[0] if counted else 0}",
                position=str(row["hi"]),
                order_key=(str(row["hi"]),),
                batch_time=now,
                replay=replay,
            )
        ]

    def _unfinished(self, query: str) -> BatchRef | None:
        """The table's last batch again, with the same boundaries and id, when it was attempted
        and not applied, and the query from the watermark on is still the same (neither the
        target nor the configuration moved since): a batch retried days later reads what it
        read the first time, and the rows since wait for the next batch."""
        last = ControlTables(self.ctx.backend, self.ctx.control_namespace).latest_attempt(self.ctx.target)
        if last is None or last[1] not in RETRIED or not last[0].startswith("jdbc@"):
            return None
        batch_id, _, replay_text = last
        replay = json.loads(replay_text or "{}")
        if replay.get("kind") != "jdbc" or replay.get("query") != query:
            return None
        exists = self.ctx.backend.exists(self.ctx.target)
        if exists and batch_id in self.ctx.backend.published_batches(self.ctx.target):
            return None  # applied after all (its record is completed by the runner)
        position = batch_id[len("jdbc@") :].rsplit("#", 1)[0]
        now = utc_now()
        return BatchRef(batch_id, position, (position,), now, replay=replay)

    def published(self, ref: BatchRef) -> bool:
        return False  # the watermark is read from the target itself

    def read(self, ref: BatchRef, target_schema: StructType | None) -> ReadBatch:
        from pyspark.sql import functions as F

        sql = (
            f"SELECT * FROM ({ref.replay['query']}) lf_q "
            f"WHERE {self.config.watermark_column} <= {ref.replay['upper']}"
        )
        rows = self._query(sql)
        dialect = DIALECTS.get(_vendor(self.config.url))  # else sqlglot's own, the common SQL
        numbered = with_provenance(
            rows, F.lit(ref.batch_id), returned_order(str(ref.replay["query"]), dialect)
        )
        return ReadBatch(ref, numbered)

    def _lower_bound(self) -> str:
        """The watermark (minus the look-back) as a SQL literal."""
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        backend, target = self.ctx.backend, self.ctx.target
        initial = self.config.initial_watermark
        schema = backend.schema(target) if backend.exists(target) else None
        if schema is None or self.column not in schema.fieldNames():
            return self._past_skipped(_initial_literal(initial))
        kind = schema[self.column].dataType
        highest = F.max(F.col(quote(self.column)))
        look_back = self.config.look_back
        if look_back:
            if isinstance(kind, T.TimestampType | T.TimestampNTZType | T.DateType):
                highest = highest - F.expr(f"make_dt_interval(0, 0, 0, {look_back})")
            else:
                highest = highest - F.lit(look_back)
        value = backend.read(target).select(highest.alias("hi")).selectExpr(self._as_text("hi", kind)).first()
        if value is None or value[0] is None:
            return self._past_skipped(_initial_literal(initial))
        return self._past_skipped(_literal(str(value[0]), _is_number(kind)))

    def _head(self) -> int | None:
        backend, target = self.ctx.backend, self.ctx.target
        return backend.head(target) if backend.exists(target) else None

    def _past_skipped(self, lower: str) -> str:
        """`lower`, or the end of a batch the operator skipped (`--skip-batch`) when that is
        higher: the skipped rows are never read again, by a later batch or by its look-back. A
        skip counts while the target's lineage holds the commit it was listed on (a rollback to
        before it undoes it) and the watermark column is the one it was listed with."""
        backend, target = self.ctx.backend, self.ctx.target
        log = ControlTables(backend, self.ctx.control_namespace).batches
        if not backend.exists(log):
            return lower
        found = self.ctx.spark.sql(
            f"SELECT replay FROM {backend.qualified(log)} WHERE table_name = {sql_literal(target)} "
            "AND status = 'skipped' AND startswith(batch_id, 'jdbc@')"
        ).collect()
        skips = [json.loads(r[0] or "{}") for r in found]
        skips = [s for s in skips if s.get("column") == self.column and isinstance(s.get("upper"), str)]
        if not skips:
            return lower
        ancestors = backend.lineage(target).ancestors if backend.exists(target) else frozenset()
        ends = [str(s["upper"]) for s in skips if s.get("on") is None or s["on"] in ancestors]
        same_kind = [e for e in ends if e.startswith("'") == lower.startswith("'")]
        return max([lower, *same_kind], key=_ordered)

    def _as_text(self, column: str, kind: object) -> str:
        """SQL for a watermark value as the text of its literal: a time as its wall-clock time in
        the JVM's default time zone (see the module's docstring)."""
        from pyspark.sql import types as T

        if not isinstance(kind, T.TimestampType):
            return f"CAST({column} AS STRING)"
        spark = self.ctx.spark
        session = spark.conf.get("spark.sql.session.timeZone") or "UTC"
        jvm = java_class(spark, "java.util.TimeZone").getDefault().getID()
        moved = f"from_utc_timestamp(to_utc_timestamp({column}, {sql_literal(session)}), {sql_literal(jvm)})"
        return f"CAST({moved} AS STRING)"

    def _query(self, sql: str) -> DataFrame:
        """A query run by the database; errors name the URL (never the password)."""
        config = self.config
        reader = self.ctx.spark.read.format("jdbc").option("url", config.url).option("query", sql)
        driver = config.driver or _driver(config.url)
        options: dict[str, Any] = {"driver": driver, "user": config.user, "password": config.password}
        for key, value in {**options, **config.options}.items():
            if value is not None:
                reader = reader.option(key, value)
        try:
            df = reader.load()
            df.schema  # noqa: B018 (resolving the schema runs the query's metadata round trip)
        except Exception as exc:
            raise SourceError(f"cannot query {config.url}: {describe(exc)}") from exc
        return df


def _vendor(url: str) -> str:
    return url.split(":")[1] if url.count(":") >= 2 else ""


def _driver(url: str) -> str | None:
    return DRIVERS.get(_vendor(url))


def _is_number(kind: object) -> bool:
    from pyspark.sql import types as T

    return isinstance(kind, T.NumericType)


def _minus(text: str, seconds: float, number: bool) -> str:
    """A watermark value (as Spark writes it) less a look-back: a number less the number, a time
    or a date less that many seconds."""
    if number:
        return str(Decimal(text) - Decimal(str(seconds)))
    moment = datetime.fromisoformat(text) - timedelta(seconds=seconds)
    return moment.isoformat(sep=" ")


def _ordered(literal: str) -> tuple[int, Decimal | str]:
    """A watermark literal as it compares: a number by value, a time or a text as its text."""
    if literal.startswith("'"):
        return (1, literal[1:-1].replace("''", "'"))
    return (0, Decimal(literal))


def _literal(text: str, number: bool) -> str:
    return text if number else standard_sql_literal(text)


def _initial_literal(value: object) -> str:
    if isinstance(value, bool):
        raise SourceError("initial_watermark must be a time, a number or a text, not a boolean")
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, datetime):
        return _literal(value.isoformat(sep=" "), number=False)
    return _literal(str(value), number=False)
