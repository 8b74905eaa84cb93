"""Source `jdbc`: a database query, read from a watermark on through Spark's JDBC reader.

The watermark is the highest value of `watermark_column` in the target's published snapshot (or
`initial_watermark` while the target holds no row), so it moves in the same commit as the data and
can never run ahead of it or behind it. With `look_back`, the query reads that much before the
watermark again, for rows that committed late with an older value; the keyed merge absorbs the
overlap (those rows come out unchanged, U).

A run lists at most one batch. Listing asks the database for the highest value and the row count
of the query from the lower bound on; the batch is the query's rows up to that highest value,
fixed then, so rows a concurrent writer commits while the batch is read wait for the next batch.
Its id is `jdbc@<highest value>#<rows>`: a run that finds nothing new (the same highest value and
count) lists a batch already applied, and writes nothing; a late commit inside the look-back
window changes the count, so it is read even when nothing newer came.

`{{ watermark }}` in the query becomes a SQL literal: the number as it is, anything else quoted
('2025-01-31 10:00:00.5'), which the database casts to the column's type.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lakefresh.config.sources import WATERMARK_TOKEN, JdbcSourceConfig
from lakefresh.errors import SourceError
from lakefresh.lakehouse.failures import describe
from lakefresh.lakehouse.sql import quote, standard_sql_literal
from lakefresh.sources.base import BatchRef, ReadBatch, SourceContext, with_provenance

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

DRIVERS = {
    "postgresql": "org.postgresql.Driver",
    "mysql": "com.mysql.cj.jdbc.Driver",
    "mariadb": "org.mariadb.jdbc.Driver",
    "sqlserver": "com.microsoft.sqlserver.jdbc.SQLServerDriver",
    "oracle": "oracle.jdbc.OracleDriver",
    "db2": "com.ibm.db2.jcc.DB2Driver",
}


class JdbcSource:
    kind = "jdbc"

    def __init__(self, config: JdbcSourceConfig, ctx: SourceContext) -> None:
        self.config = config
        self.ctx = ctx
        self.column = config.watermark_column.strip('"`[]')  # as the target spells it

    def list_batches(self) -> list[BatchRef]:
        query = WATERMARK_TOKEN.sub(lambda _: self._lower_bound(), self.config.query)
        column = self.config.watermark_column
        stats = self._query(f"SELECT max({column}) AS hi, count(*) AS n FROM ({query}) lf_q")
        row = stats.selectExpr("CAST(hi AS STRING) AS hi", "n").first()
        if row is None or row["hi"] is None:
            return []
        upper = _literal(row["hi"], _is_number(stats.schema["hi"].dataType))
        now = datetime.now(UTC).replace(tzinfo=None)
        return [
            BatchRef(
                batch_id=f"jdbc@{row['hi']}#{row['n']}",
                position=str(row["hi"]),
                order_key=(str(row["hi"]),),
                batch_time=now,
                replay={"kind": "jdbc", "query": query, "upper": upper},
            )
        ]

    def published(self, ref: BatchRef) -> bool:
        return False  # the watermark is read from the target itself

    def read(self, ref: BatchRef, target_schema: StructType | None) -> ReadBatch:
        from pyspark.sql import functions as F

        sql = (
            f"SELECT * FROM ({ref.replay['query']}) lf_q "
            f"WHERE {self.config.watermark_column} <= {ref.replay['upper']}"
        )
        rows = self._query(sql)
        numbered = with_provenance(rows, F.lit(ref.batch_id), F.monotonically_increasing_id() + 1)
        return ReadBatch(ref, numbered)

    def _lower_bound(self) -> str:
        """The watermark (minus the look-back) as a SQL literal."""
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        backend, target = self.ctx.backend, self.ctx.target
        initial = self.config.initial_watermark
        schema = backend.schema(target) if backend.exists(target) else None
        if schema is None or self.column not in schema.fieldNames():
            return _initial_literal(initial)
        kind = schema[self.column].dataType
        highest = F.max(F.col(quote(self.column)))
        look_back = self.config.look_back
        if look_back:
            if isinstance(kind, T.TimestampType | T.TimestampNTZType | T.DateType):
                highest = highest - F.expr(f"make_dt_interval(0, 0, 0, {look_back})")
            else:
                highest = highest - F.lit(look_back)
        value = backend.read(target).select(highest.cast("string")).first()
        if value is None or value[0] is None:
            return _initial_literal(initial)
        return _literal(str(value[0]), _is_number(kind))

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


def _driver(url: str) -> str | None:
    vendor = url.split(":")[1] if url.count(":") >= 2 else ""
    return DRIVERS.get(vendor)


def _is_number(kind: object) -> bool:
    from pyspark.sql import types as T

    return isinstance(kind, T.NumericType)


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
