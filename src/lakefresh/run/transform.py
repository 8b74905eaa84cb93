"""A table's `transform`: SQL between read and stage.

The batch's readable rows are the view `batch` (with their `_lf_` provenance columns), and every
entry of `views` is registered under its alias: a table of this pipeline (refreshed before this
one) or any `namespace.table` of the catalog, as it is now. The SQL's result is what the strategy
merges and what the strategy's own checks (NULL keys...) quarantine. Rows the source could not
read skip the SQL and go to quarantine as they are. The views live only while the SQL's result is
computed (it is materialized before they are dropped).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakefresh.columns import (
    FILE_COLUMN,
    LINE_COLUMN,
    RAW_COLUMN,
    REASON_COLUMN,
    RECORD_COLUMN,
    SYSTEM_PREFIX,
)
from lakefresh.config.base import hinted
from lakefresh.errors import ConfigError
from lakefresh.strategies.materialize import materialize

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from lakefresh.config.models import PipelineConfig, TableConfig
    from lakefresh.lakehouse.backend import TableBackend

PROVENANCE_TYPES = {
    FILE_COLUMN: "string",
    RECORD_COLUMN: "long",
    LINE_COLUMN: "long",
    RAW_COLUMN: "string",
    REASON_COLUMN: "string",
}


def transformed(
    config: PipelineConfig, backend: TableBackend, table: TableConfig, rows: DataFrame
) -> DataFrame:
    """`rows` (as read, each with its quarantine reason) after the table's SQL."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    assert table.transform is not None
    spark = backend.spark
    names = [t.name for t in config.tables]
    views = {"batch": rows.filter(F.col(REASON_COLUMN).isNull())}
    for alias, source in table.transform.views.items():
        qualified = config.qualified(config.table(source)) if source in names else source
        if not backend.exists(qualified):
            raise ConfigError(
                f"table {table.name!r}: transform view {alias!r} reads {source!r}, which does not exist (yet)"
            )
        views[alias] = backend.read(qualified)
    for alias, df in views.items():
        df.createOrReplaceTempView(alias)
    try:
        result = spark.sql(table.transform.sql)
        for column, kind in PROVENANCE_TYPES.items():
            if column not in result.columns:
                result = result.withColumn(column, F.lit(None).cast(kind))
        result = materialize(result)
    except AnalysisException as exc:
        raise ConfigError(
            f"table {table.name!r}: the transform SQL fails: {analysis_text(exc, views)}"
        ) from exc
    finally:
        for alias in views:
            spark.catalog.dropTempView(alias)
    unreadable = rows.filter(F.col(REASON_COLUMN).isNotNull()).select(*PROVENANCE_TYPES)
    return result.unionByName(unreadable, allowMissingColumns=True)


def analysis_text(exc: Exception, views: dict[str, DataFrame]) -> str:
    """Spark's analysis error in one line. A column it cannot resolve is named with the near
    miss among the views' real columns (never lakefresh's own `_lf_` ones), and those columns."""
    params = getattr(exc, "getMessageParameters", lambda: None)() or {}
    name = params.get("objectName")
    kind = getattr(exc, "getCondition", getattr(exc, "getErrorClass", lambda: None))() or ""
    if not name or not kind.startswith("UNRESOLVED_COLUMN"):
        return str(exc).strip().splitlines()[0]
    column = name.replace("`", "").split(".")[-1]
    listing = "; ".join(
        f"{alias}: {', '.join(c for c in df.columns if not c.startswith(SYSTEM_PREFIX))}"
        for alias, df in views.items()
    )
    known = [c for df in views.values() for c in df.columns if not c.startswith(SYSTEM_PREFIX)]
    return hinted(f"column {name.replace('`', '')} does not exist", column, known, f"columns of {listing}")
