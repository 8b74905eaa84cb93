"""JVM dependencies the way Spark users get them: Maven coordinates of the official artifacts,
resolved from Maven Central by Spark's own resolution (Ivy, `spark.jars.packages`).

The versions are pinned here (`LINES`, one entry per supported Spark line; the installed
pyspark says which) and nowhere else; a pipeline overrides the Iceberg version with
`spark.iceberg_version` and adds coordinates with `spark.packages`.

- `lakefresh jars` (run by `scripts/setup.sh`) resolves them once: a short-lived JVM with
  `spark.jars.packages` downloads them into the cache's Ivy folder, and the files it got are
  recorded in a manifest (one per set of coordinates). Sessions then get those files in
  `spark.jars`: no resolution, no network, no Ivy report at each start. Running it again
  downloads nothing.
- Without a manifest, a session asks Spark to resolve the coordinates itself
  (`spark.jars.packages`, same Ivy folder, so nothing is downloaded twice either).
- `spark.jars: none`: the platform provides Iceberg (Databricks, EMR, a cluster image): nothing
  is resolved. `spark.jars: [paths]`: your own files.

Cache: `$LAKEFRESH_JAR_CACHE`, else `~/.cache/lakefresh/jars`.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from lakefresh.errors import SetupError


@dataclass(frozen=True)
class SparkLine:
    """A Spark release line and the official runtimes built for it (Maven Central)."""

    spark: str  # "4.1"
    scala: str  # Scala binary version of Spark's own build: 2.13 from Spark 4 on
    iceberg: str  # iceberg-spark-runtime-<spark>_<scala>
    delta: str  # delta-spark_<scala>, built against this line
    hadoop: str  # the Hadoop client pyspark ships: hadoop-aws must be the same release
    aws_sdk: str  # the AWS SDK v2 release that hadoop-aws builds against (its modules, not its bundle)


# The newest Spark 4 line for which Iceberg and Delta both publish runtimes is the default;
# Spark 3.5 stays supported. On Maven Central, Iceberg's newest
# runtime line is 4.1 (1.11.0, 1.12.0), Delta 4.2.0-4.3.1 build against Spark 4.1.0
# (Delta 4.4 moved to Spark 4.2, for which Iceberg has no runtime yet).
# Object storage (S3 and S3-compatible stores): hadoop-aws of pyspark's own Hadoop release, with
# the AWS SDK modules it needs rather than its ~600 MB SDK bundle (51 jars, 18 MB on the 4.1
# line); Iceberg's S3FileIO uses the same SDK modules. The 3.5 line's hadoop-aws 3.3.4 is built
# on SDK v1 (its own bundle); S3FileIO there still needs these v2 modules (not tested).
LINES = {
    "4.1": SparkLine("4.1", "2.13", iceberg="1.12.0", delta="4.3.1", hadoop="3.4.2", aws_sdk="2.29.52"),
    "3.5": SparkLine("3.5", "2.12", iceberg="1.10.2", delta="3.3.3", hadoop="3.3.4", aws_sdk="2.29.52"),
}
# never resolved: hadoop-aws's dependency on the whole AWS SDK (the modules above instead)
EXCLUDES = ("software.amazon.awssdk:bundle",)
DEFAULT_LINE = "4.1"
POSTGRESQL_VERSION = "42.7.4"

# The tests' servers (tests/lake/servers.py), resolved by `make test-setup`: an S3-compatible server and
# Iceberg's REST catalog server (the class behind Iceberg's own REST test fixture, published with
# classifier test-fixtures; 1.10.0 is the newest release whose test-fixtures jar Maven Central
# serves), each run in a JVM of its own.
S3PROXY_VERSION = "2.6.0"
REST_FIXTURE_ICEBERG = "1.10.0"
JETTY_VERSION = "11.0.25"  # the Jetty 11 (jakarta) the REST fixture's servlet is built on
SQLITE_JDBC_VERSION = "3.50.3.0"


def spark_line(version: str | None = None) -> SparkLine:
    """The line of the installed pyspark (or of `version`), read from its metadata: no JVM."""
    if version is None:
        try:
            version = metadata.version("pyspark")
        except metadata.PackageNotFoundError:
            version = DEFAULT_LINE
    line = ".".join(version.split(".")[:2])
    if line not in LINES:
        raise SetupError(
            f"Spark {version} is not a supported line (supported: {', '.join(sorted(LINES))}); "
            "install one of them, or provide the jars yourself with spark.jars"
        )
    return LINES[line]


# Runs in a JVM of its own: Spark resolves the coordinates, and says which files it got.
_RESOLVE = """
import json, sys
from pyspark.sql import SparkSession
session = (SparkSession.builder.master("local[1]").appName("lakefresh-jars")
    .config("spark.jars.packages", sys.argv[1]).config("spark.jars.ivy", sys.argv[2])
    .config("spark.jars.excludes", sys.argv[3]).config("spark.ui.enabled", "false").getOrCreate())
jars = [j for j in session.sparkContext.getConf().get("spark.jars", "").split(",") if j]
print("LAKEFRESH-JARS " + json.dumps(jars))
session.stop()
"""


def iceberg_runtime(version: str | None = None, line: SparkLine | None = None) -> str:
    """The official Iceberg runtime for the installed Spark line and its Scala version."""
    line = line or spark_line()
    artifact = f"iceberg-spark-runtime-{line.spark}_{line.scala}"
    return f"org.apache.iceberg:{artifact}:{version or line.iceberg}"


def delta_runtime(version: str | None = None, line: SparkLine | None = None) -> str:
    """Delta Lake for the installed Spark line (delta-storage comes as its dependency)."""
    line = line or spark_line()
    return f"io.delta:delta-spark_{line.scala}:{version or line.delta}"


def runtimes(
    iceberg: str | None = None, delta: str | None = None, with_delta: bool = False, with_iceberg: bool = True
) -> list[str]:
    """The table formats' runtimes a session needs: Iceberg's unless no table is Iceberg, Delta
    Lake's when asked."""
    return [
        *([iceberg_runtime(iceberg)] if with_iceberg else []),
        *([delta_runtime(delta)] if with_delta else []),
    ]


def postgresql_driver(version: str | None = None) -> str:
    """PostgreSQL's JDBC driver (a `jdbc` source, or Iceberg's JDBC catalog on PostgreSQL)."""
    return f"org.postgresql:postgresql:{version or POSTGRESQL_VERSION}"


# hadoop-aws's (s3, s3-transfer-manager, sts) and S3FileIO's (kms, which its properties load; the
# JDK-based HTTP client, as it is configured in lakehouse/session.py)
OBJECT_STORE_SDK = ("s3", "s3-transfer-manager", "sts", "kms", "url-connection-client")


def object_store(line: SparkLine | None = None) -> list[str]:
    """S3 (`s3a://`, and Iceberg's S3FileIO): hadoop-aws and the AWS SDK modules it needs."""
    line = line or spark_line()
    sdk = [f"software.amazon.awssdk:{m}:{line.aws_sdk}" for m in OBJECT_STORE_SDK]
    return [f"org.apache.hadoop:hadoop-aws:{line.hadoop}", *sdk]


def s3_server() -> list[str]:
    """S3Proxy, an S3-compatible server (filesystem storage), for the tests."""
    return [f"org.gaul:s3proxy:{S3PROXY_VERSION}"]


def rest_catalog_server(line: SparkLine | None = None) -> list[str]:
    """What Iceberg's REST catalog server needs besides its two classified jars
    (`rest_catalog_server_classified`): Iceberg's core and AWS modules, Jetty, SQLite's JDBC
    driver, a log binding, the AWS SDK modules for S3FileIO."""
    line = line or spark_line()
    v = REST_FIXTURE_ICEBERG
    return [
        f"org.apache.iceberg:iceberg-core:{v}",
        f"org.apache.iceberg:iceberg-aws:{v}",
        f"org.eclipse.jetty:jetty-servlet:{JETTY_VERSION}",
        f"org.xerial:sqlite-jdbc:{SQLITE_JDBC_VERSION}",
        "org.slf4j:slf4j-simple:2.0.17",
        *[f"software.amazon.awssdk:{m}:{line.aws_sdk}" for m in ("s3", "sts", "kms")],
    ]


def rest_catalog_server_classified() -> list[str]:
    """The REST catalog server's classes: the open-api test fixture and core's test classes (its
    servlet and adapter), as group:artifact:version:classifier."""
    v = REST_FIXTURE_ICEBERG
    return [
        f"org.apache.iceberg:iceberg-open-api:{v}:test-fixtures",
        f"org.apache.iceberg:iceberg-core:{v}:tests",
    ]


MAVEN_CENTRAL = "https://repo1.maven.org/maven2"


def fetch_classified(coordinate: str) -> str:
    """One jar with a classifier (group:artifact:version:classifier), which Spark's resolution
    cannot name: downloaded once from Maven Central into the cache, checked against its SHA-1."""
    import urllib.request

    group, artifact, version, classifier = coordinate.split(":")
    name = f"{artifact}-{version}-{classifier}.jar"
    target = cache_dir() / "classified" / name
    if target.is_file():
        return str(target)
    url = f"{MAVEN_CENTRAL}/{group.replace('.', '/')}/{artifact}/{version}/{name}"
    try:
        with urllib.request.urlopen(url, timeout=120) as response:
            body = response.read()
        with urllib.request.urlopen(f"{url}.sha1", timeout=60) as response:
            expected = response.read().decode().split()[0].strip()
    except OSError as exc:
        raise SetupError(f"could not download {coordinate} from Maven Central: {exc}") from exc
    if hashlib.sha1(body).hexdigest() != expected:
        raise SetupError(f"{url}: its SHA-1 does not match Maven Central's")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("wb", dir=target.parent, delete=False) as out:
        out.write(body)
    os.replace(out.name, target)
    return str(target)


def cache_dir() -> Path:
    configured = os.environ.get("LAKEFRESH_JAR_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "lakefresh" / "jars"


def ivy_dir() -> Path:
    """Spark's Ivy folder for lakefresh's resolutions (its `jars/` holds the files)."""
    return cache_dir() / "ivy"


def _manifest(coordinates: list[str]) -> Path:
    key = hashlib.sha256(",".join(sorted(coordinates)).encode()).hexdigest()[:16]
    return cache_dir() / f"resolved-{key}.json"


def resolved(coordinates: list[str]) -> list[str] | None:
    """The files these coordinates were resolved to, if `resolve` ran and they are all there."""
    manifest = _manifest(coordinates)
    if not manifest.is_file():
        return None
    files = json.loads(manifest.read_text(encoding="utf-8"))["jars"]
    return files if all(Path(f).is_file() for f in files) else None


def resolve(coordinates: list[str], force: bool = False) -> list[str]:
    """Resolve coordinates (and their dependencies) from Maven Central once; return the files."""
    if not force and (files := resolved(coordinates)) is not None:
        return files
    proc = subprocess.run(
        [sys.executable, "-c", _RESOLVE, ",".join(coordinates), str(ivy_dir()), ",".join(EXCLUDES)],
        capture_output=True,
        text=True,
        check=False,
        timeout=1800,
    )
    line = next((x for x in proc.stdout.splitlines() if x.startswith("LAKEFRESH-JARS ")), None)
    if proc.returncode != 0 or line is None:
        problem = [x for x in proc.stderr.splitlines() if "::" in x or "Exception" in x or "rror" in x]
        raise SetupError(
            f"could not resolve {', '.join(coordinates)} from Maven Central: "
            + (" ".join(problem[-4:]) or proc.stderr.strip()[-500:])
            + ". Provide the jars yourself with spark.jars (a list of files) or spark.jars: none."
        )
    files = [j.removeprefix("file://").removeprefix("file:") for j in json.loads(line.split(" ", 1)[1])]
    manifest = _manifest(coordinates)
    manifest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=manifest.parent, delete=False, encoding="utf-8") as out:
        json.dump({"coordinates": coordinates, "jars": files}, out)
    os.replace(out.name, manifest)  # atomic: never a half-written manifest
    return files


def main(argv: list[str] | None = None) -> int:
    """`python -m lakefresh.lakehouse.jars [--force] [COORDINATE ...]`: resolve and print;
    `--test-servers`: the tests' S3 and REST catalog servers instead."""
    args = sys.argv[1:] if argv is None else argv
    coordinates = [a for a in args if not a.startswith("--")] or [iceberg_runtime()]
    try:
        if "--test-servers" in args:  # the tests' S3 and REST catalog servers (tests/lake/)
            for group in (s3_server(), rest_catalog_server()):
                print("\n".join(resolve(group, force="--force" in args)))
            print("\n".join(fetch_classified(c) for c in rest_catalog_server_classified()))
            return 0
        for jar in resolve(coordinates, force="--force" in args):
            print(jar)
    except SetupError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
