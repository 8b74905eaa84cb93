"""A class-data archive of Spark's classes for the JVMs the tests start (JDK's AppCDS).

A JVM that starts Spark loads, verifies and links some 15,000 classes from Spark's jars: of a cold
local session's start and first query, about half the CPU (15-16 CPU-s, 13 s on 2 cores; with
the archive 8 CPU-s, 6 s, measured 2026-11-27). An archive written by one such JVM at its exit
(`-XX:ArchiveClassesAtExit`) is mapped by every later JVM of the same JDK and class path
(`-XX:SharedArchiveFile`): the shared session, and every JVM of seconds to minutes that a test
starts (a killed `lakefresh run`, spark-submit, the cluster's master, workers, drivers and
executors). A JVM whose class path or JDK differs ignores it and loads its classes as before;
its notice of that (on stdout) is silenced, since some tests read a process's stdout.

The archive is made once per JDK and Spark install, in ~/.cache/lakefresh/jvm (about 170 MB),
by a small local job in a process of its own, written aside and renamed into place (two test
runs may make it at once), only when the disk has 2 GB free. When it cannot be made, the JVMs
start as they did without it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

# Every JVM the tests start in a process of its own lives for seconds to a few minutes and compiles
# Spark's code from cold: C1 alone compiles it for about 40 % less CPU than C1 and C2 together
# (one crash drill, 100 CPU-s down to 60, measured 2026-11-26). The shared session lives for the
# whole run, where C2's faster code pays back, so it is started without this (tests/conftest.py).
SHORT_LIVED_JVM = "-XX:TieredStopAtLevel=1"

# the free space an archive is made in only when the disk has it (the archive: about 170 MB)
ROOM = 2 * 1024**3

# what a JVM given the archive says about it on stdout when it cannot use it: nothing
QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")

# the work whose classes are archived: a local session, a query with a shuffle, a CSV and a
# Parquet write and read (Iceberg's and Delta's classes come from --packages jars, loaded by
# Spark's own class loader, which the archive does not hold)
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


def _key() -> str:
    """The JDK and Spark install an archive is good for."""
    import pyspark

    java = shutil.which("java") or ""
    home = os.environ.get("JAVA_HOME", "")
    plain = {k: v for k, v in os.environ.items() if k != "JDK_JAVA_OPTIONS"}  # "Picked up ..." aside
    found = ""
    if java:
        version = subprocess.run([java, "-version"], capture_output=True, text=True, env=plain, timeout=60)
        found = version.stderr
    text = "\n".join([pyspark.__version__, str(Path(pyspark.__file__).parent), home, found])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def class_archive() -> Path | None:
    """The archive for this JDK and Spark install, made now if missing; None when it cannot be
    made, or LAKEFRESH_TEST_CLASS_ARCHIVE is 0 (a run with no JVM but its shared session, where
    making it would cost more than it saves)."""
    if os.environ.get("LAKEFRESH_TEST_CLASS_ARCHIVE") == "0":
        return None
    try:
        folder = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "lakefresh" / "jvm"
        archive = folder / f"spark-{_key()}.jsa"
        if archive.is_file():
            return archive
        folder.mkdir(parents=True, exist_ok=True)
        if shutil.disk_usage(folder).free < ROOM:
            return None  # the tests' warehouses need the room more
        aside = folder / f"{archive.stem}.{os.getpid()}.tmp"
    except (OSError, subprocess.SubprocessError, ImportError):
        return None
    try:
        env = {**os.environ, "JDK_JAVA_OPTIONS": f"{SHORT_LIVED_JVM} -XX:ArchiveClassesAtExit={aside}"}
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
        os.replace(aside, archive)
        return archive
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        aside.unlink(missing_ok=True)  # a failed or cut-short archive is not left behind


def archive_options(archive: Path | None) -> list[str]:
    """The JVM options that map `archive` (none without one)."""
    return [f"-XX:SharedArchiveFile={archive}", *QUIET] if archive else []


if __name__ == "__main__":  # scripts/test.sh makes it beside the lint, before the tests start
    class_archive()
