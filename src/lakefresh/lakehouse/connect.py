"""Spark Connect: a session whose driver is a server elsewhere, reached over gRPC (`sc://host:port`).

The client has no JVM: nothing lakefresh does may go through Py4J there. Each place that uses
the JVM in a classic session (Iceberg's catalog and snapshots, Hadoop's file system, Delta's
log and API, checkpoint release) has a road that does the same job with what a Connect session
offers (SQL, Iceberg's metadata tables and procedures, DataFrame write options, Arrow's file
systems, Delta's log read by delta-rs on this side), chosen by the session's kind (`is_connect`),
never by a setting of its own: `iceberg_backend` (lakehouse/iceberg/sql.py), `delta_backend`
(lakehouse/delta/sql.py), `storage_for` (lakehouse/storage.py).

Of the settings lakefresh builds a session with, a Connect client can set only the runtime SQL
settings (the catalog, the time zone, ANSI mode...); the others (the jars, the SQL extensions,
the master, the driver's JVM) are the server's, given when it starts: `server_settings` names
them, and `lakefresh validate` says so.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from lakefresh.errors import SetupError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# settings under spark.sql. that only a starting driver reads
_STATIC_SQL = (
    "spark.sql.extensions",
    "spark.sql.catalog.spark_catalog",
    "spark.sql.warehouse.dir",
    "spark.sql.catalogImplementation",
)
# the client's own: where the server is
_CLIENT = ("spark.remote",)
DELTA_LOG_NOTE = (
    "reads its Delta tables' logs on this side too (the `deltalake` package), so this process must "
    "reach their storage as the server does: local paths, or an object store with its credentials "
    "in the environment (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID...)"
)
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


def remote_url(configured: str | None) -> str | None:
    """The Spark Connect server to use: SPARK_REMOTE (as pyspark reads it) wins over the
    pipeline's `spark.remote`; None: a classic session."""
    return os.environ.get("SPARK_REMOTE") or configured


def is_connect(spark: SparkSession) -> bool:
    """Whether `spark` is a Spark Connect session (no JVM on this side)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def runtime_setting(key: str) -> bool:
    """Whether a Connect client may set `key` on its session (a runtime SQL setting)."""
    return key.startswith("spark.sql.") and not key.startswith(_STATIC_SQL)


def server_settings(settings: dict[str, str]) -> dict[str, str]:
    """The settings a Connect server must have been started with (a client cannot set them)."""
    return {k: v for k, v in settings.items() if not runtime_setting(k) and k not in _CLIENT}


def connect_session(url: str, settings: dict[str, str]) -> SparkSession:
    """A Spark Connect session on `url`, given the runtime settings of `settings` (the rest are
    the server's: `server_settings`)."""
    import warnings

    from pyspark.sql import SparkSession

    # a classic driver logs this where lakefresh's log settings keep it quiet; a Connect client
    # warns in Python. lakefresh numbers small sets (a batch's, a change set's) in one window.
    warnings.filterwarnings("ignore", message="WARN WindowExpression: No Partition Defined")
    try:
        import pyspark.sql.connect.session  # noqa: F401
    except ImportError as exc:  # pyspark without its connect extra (grpcio, pandas, pyarrow)
        raise SetupError(
            f"Spark Connect needs pyspark's connect extra: pip install 'pyspark[connect]' ({exc})"
        ) from None
    try:
        # through the classic builder: it puts pyspark in Connect mode, where its functions
        # build Connect's columns
        session = SparkSession.builder.remote(url).getOrCreate()
        for key, value in settings.items():
            if runtime_setting(key):
                session.conf.set(key, value)
    except Exception as exc:  # gRPC failures come as many types
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SetupError(f"cannot reach the Spark Connect server at {url}: {first[:300]}") from exc
    return session


def connect_notes(remote: str | None, delta: bool) -> list[str]:
    """What `validate` says of a pipeline that runs through the Spark Connect server `remote`
    (nothing when None): what the server must have started with, and, with Delta tables (`delta`),
    that this process reads their logs itself (lakehouse/delta/rs_log.py)."""
    if not remote:
        return []
    notes = [
        f"runs through the Spark Connect server at {remote}, which must have started with the jars "
        "and SQL extensions of this pipeline's tables (`lakefresh submit-args PIPELINE "
        "--connect-server` prints them)"
    ]
    if delta:
        notes.append(DELTA_LOG_NOTE)
    return notes
