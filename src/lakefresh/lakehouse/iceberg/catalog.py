"""A table's facts from Iceberg's own catalog, through Java, without Spark's SQL layer.

A batch asks its target whether it exists, for its head, its schema and its properties several
times. Through Spark these are a name parsed and resolved (`spark.catalog.tableExists`),
an analyzed plan (`spark.table(...).schema`) or a command run as a query (`SHOW
TBLPROPERTIES`). Iceberg's catalog answers the same from the table's metadata, several times
faster than any of them: the catalog
object and each table's identifiers are looked up once, and a table is loaded fresh each time.
A session lakefresh builds caches no table (`cache-enabled=false`, lakehouse/session.py), but
Iceberg's own default caches each for 30 s: a platform's session, or `catalog.properties` that
turn the cache on, would answer lineage questions from a table loaded before another writer's
commit. So when the catalog caches (`CachingCatalog`), the table is dropped from its cache
before each look-up (Spark's statements then load it fresh too).

A catalog that is not Iceberg's (`HasIcebergCatalog`) is asked through Spark, as before.

`properties` differs from SHOW TBLPROPERTIES in one way, on purpose: Spark redacts a property
whose key or value looks like a secret (`spark.sql.redaction.options.regex`: `url`, `token`...),
so a sort order on a column named `url` read back redacted, never equal to the order asked for,
and was set again at every run (`IcebergBackend.order`). Table properties hold no credentials
here (those are in the catalog's configuration).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from py4j.java_gateway import is_instance_of
from py4j.protocol import Py4JJavaError

from lakefresh.lakehouse.jvm import java_class, make_active
from lakefresh.lakehouse.sql import qualified_name

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType


class IcebergCatalog:
    """The Iceberg catalog behind one of the session's Spark catalogs."""

    def __init__(self, spark: SparkSession, catalog: str) -> None:
        self.spark = spark
        self.catalog = catalog
        self._spark_catalog: Any = None
        self._java: Any = None  # Iceberg's catalog; False when the catalog is not Iceberg's
        self._identifiers: dict[str, tuple[Any, Any]] = {}  # Iceberg's and Spark's, per table
        self._mapper: Any = None
        self._reserved: frozenset[str] | None = None
        self._plain = False  # the Spark catalog is Iceberg's `SparkCatalog` (not a session catalog)
        self._caching = False  # Iceberg's catalog keeps the tables it loads (`cache-enabled`)

    def _iceberg(self) -> Any:
        """Iceberg's catalog, or None when the Spark catalog is not an Iceberg one."""
        if self._java is None:
            make_active(self.spark)  # the catalog is loaded with the active session's settings
            manager = self.spark._jsparkSession.sessionState().catalogManager()
            self._spark_catalog = manager.catalog(self.catalog)
            gateway = self.spark.sparkContext._gateway
            has = "org.apache.iceberg.spark.source.HasIcebergCatalog"
            self._java = False
            plain = "org.apache.iceberg.spark.SparkCatalog"
            self._plain = is_instance_of(gateway, self._spark_catalog, plain)
            if is_instance_of(gateway, self._spark_catalog, has):
                try:
                    self._java = self._spark_catalog.icebergCatalog()
                except Py4JJavaError:  # a session catalog not set up as Iceberg's
                    self._java = False
                caching = "org.apache.iceberg.CachingCatalog"
                self._caching = bool(self._java) and is_instance_of(gateway, self._java, caching)
        return self._java or None

    def _fresh(self, table: str) -> tuple[Any, Any]:
        """The table's identifiers, the table dropped from the catalog's cache if it keeps one."""
        found = self._identifier(table)
        if self._caching:
            self._java.invalidateTable(found[0])
        return found

    def _identifier(self, table: str) -> tuple[Any, Any]:
        found = self._identifiers.get(table)
        if found is None:
            parts = table.split(".")
            gateway = self.spark.sparkContext._gateway
            assert gateway is not None
            namespace = gateway.new_array(gateway.jvm.java.lang.String, len(parts) - 1)
            for index, part in enumerate(parts[:-1]):
                namespace[index] = part
            iceberg = java_class(self.spark, "org.apache.iceberg.catalog.TableIdentifier")
            spark = java_class(self.spark, "org.apache.spark.sql.connector.catalog.Identifier")
            names = java_class(self.spark, "org.apache.iceberg.catalog.Namespace")
            found = (iceberg.of(names.of(namespace), parts[-1]), spark.of(namespace, parts[-1]))
            self._identifiers[table] = found
        return found

    def exists(self, table: str) -> bool:
        """Asked of Iceberg's catalog when the Spark catalog is Iceberg's own `SparkCatalog`;
        otherwise through Spark (a `SparkSessionCatalog` also holds tables that are not
        Iceberg's). Not the Spark catalog's `tableExists`: on Spark 3.5 Py4J cannot call it."""
        if self._iceberg() is None or not self._plain:
            if self._caching:
                self._fresh(table)
            return bool(self.spark.catalog.tableExists(f"{self.catalog}.{table}"))
        return bool(self._java.tableExists(self._fresh(table)[0]))

    def load(self, table: str) -> Any:
        """The table through Iceberg's Java API, loaded fresh: lineage questions are answered
        from its metadata in milliseconds, without a Spark job."""
        iceberg = self._iceberg()
        if iceberg is None:
            spark3 = java_class(self.spark, "org.apache.iceberg.spark.Spark3Util")
            return spark3.loadIcebergTable(self.spark._jsparkSession, f"{self.catalog}.{table}")
        return iceberg.loadTable(self._fresh(table)[0])

    def schema(self, table: str) -> StructType:
        """The table's schema as Spark reads it (Iceberg's `SparkSchemaUtil`, as its Spark table)."""
        from pyspark.sql.types import StructType

        util = java_class(self.spark, "org.apache.iceberg.spark.SparkSchemaUtil")
        return StructType.fromJson(json.loads(util.convert(self.load(table).schema()).json()))

    def properties(self, table: str) -> dict[str, str]:
        """What SHOW TBLPROPERTIES shows, unredacted (the module's doc): the properties of
        Iceberg's Spark table (the table's own, with its format, current snapshot and sort
        order), without those Spark reserves (`CatalogV2Util.TABLE_RESERVED_PROPERTIES`)."""
        if self._iceberg() is None:
            name = qualified_name(self.catalog, *table.split("."))
            rows = self.spark.sql(f"SHOW TBLPROPERTIES {name}").collect()
            return {r["key"]: r["value"] for r in rows}
        if self._mapper is None:  # Iceberg's own JSON mapper, as log.snapshot_info's
            self._mapper = java_class(self.spark, "org.apache.iceberg.util.JsonUtil").mapper()
            util = java_class(self.spark, "org.apache.spark.sql.connector.catalog.CatalogV2Util")
            self._reserved = frozenset(str(util.TABLE_RESERVED_PROPERTIES().mkString("\n")).split("\n"))
        found = self._spark_catalog.loadTable(self._fresh(table)[1]).properties()
        shown: dict[str, str] = json.loads(self._mapper.writeValueAsString(found))
        return {k: v for k, v in shown.items() if k not in (self._reserved or ())}
