"""Where a pipeline runs: its catalog, its Spark session and how its runs share their targets.
No pyspark here."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from lakefresh.config.base import IDENTIFIER, Duration, Model, parse_duration
from lakefresh.config.checks import check_catalog_type, check_master

TableFormat = Literal["iceberg", "delta"]


class CatalogConfig(Model):
    """The Iceberg catalog that holds targets and the `lakefresh` control namespace."""

    name: str = Field("lakefresh_catalog", description="Spark catalog name, as used in SQL.")
    type: str = Field(
        "hadoop",
        description="Iceberg catalog type: hadoop (a warehouse folder), hive, rest, jdbc, glue, "
        "nessie... Passed to Spark as spark.sql.catalog.<name>.type.",
    )
    warehouse: str | None = Field(
        "./warehouse",
        description="Warehouse location; relative paths are taken from the pipeline file's folder.",
    )
    properties: dict[str, str] = Field(
        default_factory=dict,
        description="Further catalog properties (uri, credentials, io-impl...), "
        "set as spark.sql.catalog.<name>.<key>.",
    )
    control_namespace: str = Field("lakefresh", description="Namespace of the control tables.")
    format: TableFormat = Field(
        "iceberg",
        description="The targets' table format unless a table says otherwise: iceberg, or delta "
        "(Delta Lake tables at <warehouse>/<namespace>/<table>).",
    )
    control_format: TableFormat = Field(
        "iceberg",
        description="The control tables' format: iceberg (tables of this catalog), or delta (at "
        "<warehouse>/<control_namespace>/<table>). With delta here and every target Delta, the "
        "pipeline needs no Iceberg at all (a platform that provides only Delta Lake).",
    )

    @field_validator("name", "control_namespace")
    @classmethod
    def _identifier(cls, value: str) -> str:
        if not IDENTIFIER.match(value):
            raise ValueError(f"must be a plain identifier (letters, digits, _), got {value!r}")
        return value

    @field_validator("type")
    @classmethod
    def _type(cls, value: str) -> str:
        return check_catalog_type(value)


ChecksumMode = Literal["when_supported", "when_required"]


class S3Config(Model):
    """Amazon S3 or an S3-compatible store (MinIO, Ceph, S3Proxy...): for Iceberg's own file IO
    (S3FileIO, when the warehouse is on `s3://` or `s3a://`) and for Spark's file reads and Delta
    tables (`s3a://`, and `s3://` mapped to the same connector)."""

    endpoint: str | None = Field(
        None,
        description="URL of an S3-compatible server (http://127.0.0.1:9000); unset: AWS's own, by region.",
    )
    region: str | None = Field(
        None,
        description="The bucket's region; unset: from the environment (AWS_REGION), or us-east-1 "
        "with an `endpoint`.",
    )
    path_style: bool = Field(
        False,
        description="Address buckets in the path (http://host/bucket/key), as most S3-compatible "
        "servers need, instead of as a host name (bucket.host).",
    )
    access_key_id: str | None = Field(
        None,
        description="Unset (recommended): the AWS SDK's default chain (AWS_ACCESS_KEY_ID and "
        "AWS_SECRET_ACCESS_KEY, a profile, an instance or pod role).",
    )
    secret_access_key: str | None = Field(
        None, description="With access_key_id; give it from the environment ({{ env.X }})."
    )
    checksums: ChecksumMode = Field(
        "when_supported",
        description="when_supported: the AWS SDK's default (2.30 on), a checksum on every request; "
        "when_required: only where S3 requires one, as S3-compatible servers that refuse the "
        "SDK's newer checksums need ('x-amz-content-sha256' does not match); Hadoop's puts of "
        "local files then go through S3A's output stream, not the SDK's async multipart client.",
    )


class StorageConfig(Model):
    """Where files live besides the local disk; settings by kind of store."""

    s3: S3Config | None = Field(None, description="Amazon S3 or an S3-compatible store.")


class SparkConfig(Model):
    """How the Spark session is made. Everything here can also come from the environment."""

    master: str = Field("local[*]", description="Spark master URL: local[*], spark://..., yarn, k8s://...")
    remote: str | None = Field(
        None,
        description="A Spark Connect server to run on instead of a driver of lakefresh's own "
        "(sc://host:port, as SPARK_REMOTE gives it, which wins): no JVM on this side. The server "
        "holds the jars and the SQL extensions (`lakefresh submit-args` prints them); `master` "
        "and the driver's settings are the server's then.",
    )
    app_name: str = Field("lakefresh", description="Spark application name.")
    jars: Literal["maven", "bundled", "none"] | list[str] = Field(
        "maven",
        description="maven: the official Iceberg runtime (and `packages`) from Maven Central, "
        "resolved once by `lakefresh jars` (or by Spark at start); `bundled` is an older name for "
        "it; none: the platform already provides Iceberg; or a list of jar paths/URLs of your own.",
    )
    iceberg_version: str | None = Field(
        None, description="Another Iceberg release than the pinned one (with `jars: maven`)."
    )
    extra_jars: list[str] = Field(
        default_factory=list,
        description="Jar files added besides `jars`, e.g. a JDBC driver your platform ships.",
    )
    packages: list[str] = Field(
        default_factory=list,
        description="Maven coordinates resolved with the Iceberg runtime, e.g. a JDBC driver "
        "(org.postgresql:postgresql:42.7.4).",
    )
    delta_version: str | None = Field(
        None, description="Another Delta Lake release than the pinned one (with `jars: maven`)."
    )
    conf: dict[str, str] = Field(default_factory=dict, description="Any further Spark settings.")

    @field_validator("master")
    @classmethod
    def _master(cls, value: str) -> str:
        return check_master(value)

    @field_validator("remote")
    @classmethod
    def _remote(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("sc://"):
            raise ValueError(f"not a Spark Connect URL: {value!r} (valid: sc://host:port, with /;params)")
        return value


class RunConfig(Model):
    """How runs of the pipeline share their targets: the lease a run takes on every table it
    writes, so that a second run of them (of this pipeline or another) waits or stops."""

    lease: bool = Field(
        True,
        description="Take a lease on the tables a run (or a verb that rewrites them) writes. Off: "
        "overlapping runs still apply nothing twice on a catalog whose commits are atomic between "
        "processes (not the `hadoop` catalog), but the later one fails where they meet.",
    )
    lease_ttl: Duration = Field(
        120.0,
        description="How long a lease lasts unless renewed (90s, 2m, 1h): the run renews it every "
        "quarter of this while it lives, and a run that was killed holds its tables this long.",
    )

    @field_validator("lease_ttl", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        return parse_duration(value)

    @field_validator("lease_ttl")
    @classmethod
    def _a_second_at_least(cls, value: float) -> float:
        if value < 1:
            raise ValueError(f"must be at least 1s, got {value}s")
        return value
