"""A class-data archive of Spark's classes for the JVMs lakefresh starts (the JDK's AppCDS).

A JVM that starts Spark loads, verifies and links some 15,000 classes from Spark's jars: of a cold
local session's start and first query, about half the CPU (15-16 CPU-s, 13 s on 2 cores; with
the archive 8 CPU-s, 6 s, measured 2026-11-27). An archive written by one such JVM at its exit
(`-XX:ArchiveClassesAtExit`) is mapped by every later JVM of the same JDK and Spark install
(`-XX:SharedArchiveFile`): every `lakefresh run` and verb that starts a local session, and every
JVM a test starts. A JVM whose JDK or class path differs ignores the archive and loads its
classes as before; its notice of that (on stdout) is silenced.

`lakefresh jars --class-archive` makes it (a small local job in a process of its own, about 50 s,
about 170 MB), once per JDK and Spark install, in `$LAKEFRESH_JVM_CACHE` (else
~/.cache/lakefresh/jvm), written aside and renamed into place, and only when the disk has 2 GB
free. Local sessions map it when it is there (`lakehouse/session.py`); LAKEFRESH_CLASS_ARCHIVE=0
turns that off. The Iceberg, Delta and JDBC jars are not in it: Spark loads them with a class
loader of its own, which an archive does not hold.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

# the free space an archive is made in only when the disk has it (the archive: about 170 MB)
ROOM = 2 * 1024**3

# what a JVM given the archive says about it on stdout when it cannot use it: nothing
QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")

# the job's JVM lives for seconds: C1 alone compiles for it (the archive holds classes, not code)
JOB_JVM = "-XX:TieredStopAtLevel=1"

# the work whose classes are archived: a local session, a query with a shuffle, a CSV and a
# Parquet write and read
WORKLOAD = """
import shutil, tempfile
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
out = tempfile.mkdtemp()
df = spark.range(1000).selectExpr("id", "cast(id % 7 as string) AS k", "current_timestamp() AS ts")
df.groupBy("k").count().join(df, "k").write.mode("overwrite").parquet(out + "/p")
df.write.mode("overwrite").option("header", True).csv(out + "/c")
spark.read.parquet(out + "/p").count()
spark.read.option("header", True).csv(out + "/c").where("id > 3").collect()
spark.sql("SELECT k, max(id) FROM VALUES ('a', 1) AS t(k, id) GROUP BY k").collect()
jvm = spark.sparkContext._gateway.proc
spark.stop()
jvm.stdin.close()  # the JVM's signal to exit; it writes the archive as it does
jvm.wait(timeout=300)
shutil.rmtree(out, ignore_errors=True)
"""


def folder() -> Path:
    configured = os.environ.get("LAKEFRESH_JVM_CACHE")
    if configured:
        return Path(configured)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lakefresh" / "jvm"


def _java() -> Path | None:
    """The java that Spark starts: $JAVA_HOME's, else the first on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).is_file() else None


def _key() -> str | None:
    """The JDK and Spark install an archive is good for, from files only (no JVM, no process):
    the java binary and its JVM library (a JDK update replaces it), pyspark's version and its
    jars folder (a reinstall touches it)."""
    try:
        import pyspark

        java = _java()
        if java is None:
            return None
        libjvm = next(java.parent.parent.glob("lib/*/libjvm.*"), None)
        jars = Path(pyspark.__file__).parent / "jars"
        marks = [pyspark.__version__, str(jars), str(java)]
        for path in (libjvm, jars):
            if path is not None:
                found = path.stat()
                marks.append(f"{path}:{found.st_size}:{found.st_mtime_ns}")
        return hashlib.sha256("\n".join(marks).encode()).hexdigest()[:16]
    except (OSError, ImportError):
        return None


def archive_path() -> Path | None:
    key = _key()
    return None if key is None else folder() / f"spark-{key}.jsa"


def existing() -> Path | None:
    """The archive for this JDK and Spark install when it was made and is wanted; else None."""
    if os.environ.get("LAKEFRESH_CLASS_ARCHIVE") == "0":
        return None
    path = archive_path()
    return path if path is not None and path.is_file() else None


def make(force: bool = False) -> Path | None:
    """Make the archive for this JDK and Spark install (at once when it is there already, unless
    `force`); None when it cannot be made: no java, under 2 GB free, or the job failed."""
    path = archive_path()
    if path is None:
        return None
    if path.is_file() and not force:
        return path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if shutil.disk_usage(path.parent).free < ROOM:
            return None  # the warehouse needs the room more
    except OSError:
        return None
    aside = path.parent / f"{path.stem}.{os.getpid()}.tmp"  # two processes may make it at once
    try:
        env = {**os.environ, "JDK_JAVA_OPTIONS": f"{JOB_JVM} -XX:ArchiveClassesAtExit={aside}"}
        subprocess.run(
            [sys.executable, "-c", WORKLOAD],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=600,
            check=True,
        )
        if not aside.is_file() or aside.stat().st_size == 0:
            return None
        os.replace(aside, path)
        return path
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        aside.unlink(missing_ok=True)  # a failed or cut-short archive is not left behind


def options(archive: Path | None) -> list[str]:
    """The JVM options that map `archive` (none without one)."""
    return [f"-XX:SharedArchiveFile={archive}", *QUIET] if archive else []
