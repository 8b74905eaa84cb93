"""The Spark session factory: embedded local Spark by default, any cluster and catalog by config.

Precedence, lowest first: built-in defaults, the pipeline's `catalog` and `spark` sections, then the
environment:

- `LAKEFRESH_SPARK_MASTER`: the master URL (local[2], spark://host:7077, yarn...)
- `LAKEFRESH_WAREHOUSE`: the catalog's warehouse location
- `LAKEFRESH_JARS`: `maven`, `none`, or a comma-separated list of jars
- `LAKEFRESH_SPARK_CONF`: a JSON object of further Spark settings, applied last
- `SPARK_REMOTE`: a Spark Connect server (`sc://host:port`) to use instead of a driver here
- `LAKEFRESH_CLASS_ARCHIVE=0`: a local session does not map the class archive
  (`lakehouse/class_archive.py`, made by `lakefresh jars --class-archive`)
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from lakefresh.config.engine import CatalogConfig, S3Config, SparkConfig, StorageConfig
from lakefresh.errors import ConfigError, SetupError
from lakefresh.lakehouse import class_archive
from lakefresh.lakehouse import jars as jar_files
from lakefresh.lakehouse.connect import connect_session, remote_url
from lakefresh.lakehouse.jvm import keep_lookups

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
DELTA_EXTENSIONS = "io.delta.sql.DeltaSparkSessionExtension"
# Delta's catalog only works as the session catalog (delta-io/delta#3312): lakefresh's Delta tables
# are named by path (`delta.`<warehouse>/<namespace>/<table>``), so no metastore is needed.
DELTA_SETTINGS = {
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    # the log is replayed in this many tasks (default 50: seconds of scheduling per small table)
    "spark.databricks.delta.snapshotPartitions": "2",
}


def resolve_warehouse(catalog: CatalogConfig, base_dir: Path) -> str | None:
    warehouse = os.environ.get("LAKEFRESH_WAREHOUSE") or catalog.warehouse
    if warehouse is None:
        return None
    if "://" in warehouse:
        return warehouse
    path = Path(warehouse)
    return str(path if path.is_absolute() else (base_dir / path).resolve())


def jar_settings(
    spark: SparkConfig, delta: bool = False, iceberg: bool = True, s3: bool = False
) -> dict[str, str]:
    """`spark.jars` / `spark.jars.packages` for the pipeline's choice of jars (no JVM needed).

    `maven` (default): the pinned Iceberg runtime (unless not `iceberg`; Delta Lake's with `delta`) plus
    `packages`, as the files `lakefresh jars` resolved them to, else as coordinates for Spark
    to resolve (with `s3`, S3's connector too: `jars.object_store`); `none`: only `extra_jars` and
    `packages` (the platform provides Iceberg, and S3's connector); a list: those files."""
    jars_env = os.environ.get("LAKEFRESH_JARS")
    jars: str | list[str] = spark.jars
    if jars_env:
        jars = jars_env if jars_env in {"maven", "bundled", "none"} else jars_env.split(",")
    out: dict[str, str] = {}
    files: list[str] = list(jars) if isinstance(jars, list) else []
    packages = list(spark.packages)
    if jars in ("maven", "bundled"):
        runtimes = jar_files.runtimes(spark.iceberg_version, spark.delta_version, delta, iceberg)
        packages = [*runtimes, *(jar_files.object_store() if s3 else []), *packages]
        found = jar_files.resolved(packages)
        if found is not None:
            files, packages = found, []
        else:
            out["spark.jars.ivy"] = str(jar_files.ivy_dir())
            if s3:  # hadoop-aws's SDK bundle: jar_files.object_store takes its modules instead
                out["spark.jars.excludes"] = ",".join(jar_files.EXCLUDES)
    if files or spark.extra_jars:
        out["spark.jars"] = ",".join([*files, *spark.extra_jars])
    if packages:
        out["spark.jars.packages"] = ",".join(packages)
    return out


# C2 inlining less deeply than the JDK's defaults (15 levels; 2,500, 35 and 325 bytes) in a local
# session's JVM: its compiling takes a large share of such a JVM's CPU, inlining Spark's deep
# chains of small Scala calls (bench/jit_inlining.sh measures the example's first run with the
# JDK's defaults and with these).
SHALLOW_INLINING = "-XX:MaxInlineLevel=6 -XX:InlineSmallCode=500 -XX:MaxInlineSize=15 -XX:FreqInlineSize=100"


def spark_settings(
    catalog: CatalogConfig,
    spark: SparkConfig,
    base_dir: Path,
    delta: bool = False,
    iceberg: bool = True,
    archive: bool = True,
    storage: StorageConfig | None = None,
) -> dict[str, str]:
    """Every Spark setting the session is built with, as plain strings (no JVM needed); with
    `delta`, Delta Lake's too; without `iceberg` (no table is an Iceberg table), none of
    Iceberg's: no runtime, no extensions, no catalog. Without `archive`, a local driver is not
    given this machine's class archive (settings for a driver elsewhere: `lakefresh submit-args`).
    With `storage.s3`, S3's (`s3_settings`)."""
    settings: dict[str, str] = {
        "spark.master": os.environ.get("LAKEFRESH_SPARK_MASTER") or spark.master,
        "spark.app.name": spark.app_name,
        "spark.sql.extensions": ICEBERG_EXTENSIONS,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # PySpark 4 tags each DataFrame call with its Python call site for error messages (a
        # stack walk, a failed import of IPython and four Py4J round trips per call): the call
        # sites would be lakefresh's own lines, and they cost about half a batch's Python time
        "spark.python.sql.dataFrameDebugging.enabled": "false",
        "spark.sql.session.timeZone": "UTC",
        # Spark 4's default on every line: an overflow or a bad cast in a transform is an error,
        # never a silent NULL (lakefresh's own parsing uses TRY casts: lakehouse/functions.py)
        "spark.sql.ansi.enabled": "true",
        "spark.sql.shuffle.partitions": "8",
        "spark.sql.adaptive.enabled": "true",
        f"spark.sql.catalog.{catalog.name}": "org.apache.iceberg.spark.SparkCatalog",
        f"spark.sql.catalog.{catalog.name}.type": catalog.type,
        # lineage checks must see other writers' commits: no cached table metadata
        f"spark.sql.catalog.{catalog.name}.cache-enabled": "false",
    }
    warehouse = resolve_warehouse(catalog, base_dir)
    if warehouse:
        settings[f"spark.sql.catalog.{catalog.name}.warehouse"] = warehouse
    s3 = storage.s3 if storage is not None else None
    if s3 is not None:
        settings.update(s3_settings(s3, catalog.name, warehouse))
    for key, value in catalog.properties.items():
        settings[f"spark.sql.catalog.{catalog.name}.{key}"] = value
    if not iceberg:  # Delta Lake only (its tables are named by path): no Iceberg catalog
        own = f"spark.sql.catalog.{catalog.name}"
        settings = {k: v for k, v in settings.items() if k != own and not k.startswith(f"{own}.")}
        settings["spark.sql.extensions"] = DELTA_EXTENSIONS
    if delta:
        if iceberg:
            settings["spark.sql.extensions"] = f"{ICEBERG_EXTENSIONS},{DELTA_EXTENSIONS}"
        settings.update(DELTA_SETTINGS)

    settings.update(jar_settings(spark, delta, iceberg, s3=s3 is not None))

    settings.update(spark.conf)
    if s3 is not None and s3.checksums == "when_required":
        add_java_options(settings, CHECKSUMS_WHEN_REQUIRED)
    settings.update(env_conf())
    remote = remote_url(spark.remote)
    if remote:  # a Spark Connect server's session (lakehouse/connect.py): no driver here
        settings["spark.remote"] = remote
    elif settings["spark.master"].startswith("local"):
        add_local_driver_settings(settings, archive)
    return settings


def env_conf() -> dict[str, str]:
    """The settings `LAKEFRESH_SPARK_CONF` gives (a JSON object of setting -> value), which win
    over the pipeline's."""
    conf_env = os.environ.get("LAKEFRESH_SPARK_CONF")
    if not conf_env:
        return {}
    try:
        extra = json.loads(conf_env)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"LAKEFRESH_SPARK_CONF is not a JSON object: {exc}") from exc
    if not isinstance(extra, dict):
        raise ConfigError("LAKEFRESH_SPARK_CONF must be a JSON object of setting -> value")
    return {str(k): str(v) for k, v in extra.items()}


def add_local_driver_settings(settings: dict[str, str], archive: bool) -> None:
    """A local driver's JVM options and listing parallelism. The driver JVM starts after this, so
    these take effect, beside the JVM options the pipeline or the environment gives (which win: a
    log config or an inlining limit of theirs replaces ours)."""
    options = settings.get("spark.driver.extraJavaOptions", "")
    ours: list[str] = []
    log_config = Path(__file__).with_name("log4j2.properties")
    if log_config.is_file() and "log4j2.configurationFile" not in options:
        ours.append(f"-Dlog4j2.configurationFile={log_config}")  # errors only
    ours += [flag for flag in SHALLOW_INLINING.split() if f"{flag.split('=')[0]}=" not in options]
    if archive and not class_archive.managed_elsewhere(options):  # Spark's classes, when made
        ours += class_archive.options(class_archive.existing())
    settings["spark.driver.extraJavaOptions"] = " ".join([*ours, options]).strip()
    # Spark lists folders (Delta's VACUUM, a read of many files) in up to 10,000 tasks, a
    # cluster's default; on one machine, as many as it has threads, which makes a small
    # Delta table's VACUUM many times faster
    settings.setdefault(LISTING_PARALLELISM, str(local_threads(settings["spark.master"])))


LISTING_PARALLELISM = "spark.sql.sources.parallelPartitionDiscovery.parallelism"

S3FILEIO = "org.apache.iceberg.aws.s3.S3FileIO"
S3A = "org.apache.hadoop.fs.s3a.S3AFileSystem"
# the AWS SDK's checksums only where S3 requires them (SDK 2.30 on computes one for every request,
# which S3-compatible servers that predate it refuse): its system properties, read by every SDK
# client in the JVM (S3FileIO's and S3A's alike), as AWS_REQUEST_CHECKSUM_CALCULATION and
# AWS_RESPONSE_CHECKSUM_VALIDATION would be; the SDK pinned here has no such setting for its async
# multipart client, which S3A uses only for copyFromLocalFile (s3_settings turns that road off)
CHECKSUMS_WHEN_REQUIRED = (
    "-Daws.requestChecksumCalculation=when_required -Daws.responseChecksumValidation=when_required"
)


def s3_settings(s3: S3Config, catalog: str, warehouse: str | None) -> dict[str, str]:
    """An S3 store's settings: Hadoop's S3A connector (`s3a://`, and `s3://` through it, for
    Spark's file reads and Delta tables) and, with the warehouse on S3, Iceberg's S3FileIO for the
    catalog. Credentials only when the pipeline gives them: else the AWS SDK's default chain."""
    region = s3.region or ("us-east-1" if s3.endpoint else None)
    hadoop = {
        "fs.s3.impl": S3A,  # s3:// as S3A (Hadoop maps only s3a:// to it)
        "fs.s3a.path.style.access": str(s3.path_style).lower(),
        "fs.s3a.endpoint": s3.endpoint,
        "fs.s3a.endpoint.region": region,
        "fs.s3a.access.key": s3.access_key_id,
        "fs.s3a.secret.key": s3.secret_access_key,
        # a local file put with Hadoop (copyFromLocalFile) through S3A's output stream, as every
        # other write, instead of the SDK's async multipart client, whose uploads carry a
        # trailing CRC32 checksum (STREAMING-UNSIGNED-PAYLOAD-TRAILER) on the pinned SDK too
        "fs.s3a.optimized.copy.from.local.enabled": "false" if s3.checksums == "when_required" else None,
    }
    out = {f"spark.hadoop.{k}": v for k, v in hadoop.items() if v is not None}
    if warehouse and warehouse.split("://", 1)[0] in ("s3", "s3a"):
        iceberg = {
            "io-impl": S3FILEIO,
            # Iceberg 1.12's `apache` client is the SDK's Apache 5 module, newer than the SDK
            # pinned with hadoop-aws (jars.object_store): the JDK's own HTTP client instead
            "http-client.type": "urlconnection",
            "s3.endpoint": s3.endpoint,
            "s3.path-style-access": str(s3.path_style).lower(),
            "client.region": region,
            "s3.access-key-id": s3.access_key_id,
            "s3.secret-access-key": s3.secret_access_key,
        }
        out |= {f"spark.sql.catalog.{catalog}.{k}": v for k, v in iceberg.items() if v is not None}
    return out


def add_java_options(settings: dict[str, str], options: str) -> None:
    """These JVM options on the driver and the executors, after any already set."""
    for key in ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"):
        settings[key] = f"{settings.get(key, '')} {options}".strip()


def local_threads(master: str) -> int:
    """The threads of a local master (`local`: 1, `local[4]`, `local[4,2]`, `local[*]`: the
    machine's cores; `local-cluster[...]`: the machine's cores)."""
    found = re.fullmatch(r"local(?:\[(\d+|\*)(?:,\s*\d+)?\])?", master.strip())
    if found is None or found.group(1) == "*":
        return os.cpu_count() or 1
    return max(int(found.group(1) or 1), 1)


def build_session(settings: dict[str, str]) -> SparkSession:
    """Start (or join) the Spark session with these settings and check that Iceberg loaded."""
    from pyspark.sql import SparkSession

    if "spark.remote" in settings:
        session = connect_session(settings["spark.remote"], settings)
        check_sql_text(session)
        return session
    if os.environ.get("PYSPARK_GATEWAY_PORT"):
        # under spark-submit, whose --master names the cluster: the builder would override it
        settings = {k: v for k, v in settings.items() if k != "spark.master"}
    master = settings.get("spark.master", "")
    local = master.startswith("local")
    if local or _loopback(master):
        # no hostname lookup for local runs; on a loopback cluster, the executors must reach the
        # driver where they are, not at the machine's outward address
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        if not local:
            settings = {"spark.driver.host": "127.0.0.1", **settings}
    # pyspark takes the executors' Python from PYSPARK_PYTHON only when it starts the context
    # itself (spark-submit maps the setting): the pipeline's spark.pyspark.python must work too
    if "spark.pyspark.python" in settings and "PYSPARK_PYTHON" not in os.environ:
        os.environ["PYSPARK_PYTHON"] = settings["spark.pyspark.python"]
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        session = builder.getOrCreate()
    except Exception as exc:  # JVM start failures come as many types
        raise SetupError(f"cannot start Spark: {exc}") from exc
    session.sparkContext.setLogLevel(os.environ.get("LAKEFRESH_SPARK_LOG_LEVEL", "ERROR"))
    keep_lookups(session)  # PySpark's look-ups of its Java helpers, once each (lakehouse/jvm.py)
    for key, value in settings.items():
        if key.startswith("spark.sql.") and not key.startswith("spark.sql.extensions"):
            session.conf.set(key, value)  # a joined session takes runtime settings too
    if not (session.sparkContext.master or "local").startswith("local"):
        check_executor_python(session)
    check_sql_text(session)
    for key, value in settings.items():
        if key.startswith("spark.sql.catalog.") and key.endswith(".type") and value == "jdbc":
            initialize_catalog(session, key.removeprefix("spark.sql.catalog.").removesuffix(".type"))
    return session


def initialize_catalog(session: SparkSession, name: str, attempts: int = 5) -> None:
    """Iceberg's JDBC catalog creates (or upgrades) its tables in the database the first time a
    session uses it: two processes that first use a new catalog at once race there, and the one
    that loses fails ("column ... already exists"). Used here, and again after such a failure
    (Spark keeps no catalog whose initialization failed); the other process has made the tables."""
    import time

    for attempt in range(1, attempts + 1):
        try:
            session.sql(f"SHOW NAMESPACES IN `{name}`").collect()
            return
        except Exception as exc:
            if attempt == attempts or "already exists" not in str(exc):
                raise
            time.sleep(0.5 * attempt)


def check_sql_text(session: SparkSession) -> None:
    """lakefresh writes values into SQL as string literals with backslash escapes (`sql_literal`:
    control-table rows, the parsing of a batch's text): a session that reads literals without
    escapes would store other strings and match other patterns. One line instead."""
    if str(session.conf.get("spark.sql.parser.escapedStringLiterals", "false")).lower() == "true":
        raise SetupError(
            "lakefresh needs spark.sql.parser.escapedStringLiterals=false (Spark's default); this "
            "session sets it true"
        )


def _loopback(master: str) -> bool:
    """Whether a cluster master URL (spark://host:port) names this machine's loopback."""
    host = master.split("://", 1)[-1].split(":", 1)[0]
    return master.startswith("spark://") and host in ("127.0.0.1", "localhost", "::1")


def check_executor_python(session: SparkSession) -> None:
    """On a cluster: the executors must run the driver's Python version (pickled functions do
    not cross versions); else one line naming both, instead of a worker's stack trace."""
    import sys

    def version(_: object) -> tuple[int, int]:
        import sys as worker_sys

        return worker_sys.version_info[0], worker_sys.version_info[1]

    driver = sys.version_info[:2]
    try:
        found = set(session.sparkContext.parallelize([0], 1).map(version).collect())
    except Exception as exc:  # a worker that cannot even start its Python
        raise SetupError(
            f"the executors cannot run Python {driver[0]}.{driver[1]} as the driver does "
            f"({str(exc).splitlines()[0][:200]}); set spark.pyspark.python (pipeline spark.conf) or "
            "PYSPARK_PYTHON to that Python on every node"
        ) from None
    other = sorted(v for v in found if v != tuple(driver))
    if other:
        shown = ", ".join(f"{a}.{b}" for a, b in other)
        raise SetupError(
            f"the executors run Python {shown}, the driver Python {driver[0]}.{driver[1]}: set "
            "spark.pyspark.python (pipeline spark.conf) or PYSPARK_PYTHON to the driver's version "
            "on every node"
        )


def parse_schema(ddl: str) -> StructType:
    """A StructType from a DDL column list (`a int, b string`); needs a running Spark."""
    from pyspark.sql.types import StructType, _parse_datatype_string

    parsed = _parse_datatype_string(" ".join(ddl.split()))
    if not isinstance(parsed, StructType):
        raise ConfigError(f"not a column list: {ddl!r}")
    return parsed
