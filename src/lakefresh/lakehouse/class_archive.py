"""A class-data archive of Spark's classes for the JVMs lakefresh starts (the JDK's AppCDS).

A JVM that starts Spark loads, verifies and links some 15,000 classes from Spark's jars: of a cold
local session's start and first query, about half the CPU (bench/bench_start.sh measures a run
with and without the archive). An archive written
by one such JVM at its exit (`-XX:ArchiveClassesAtExit`, JDK 13 on) is mapped by every later JVM
of the same JDK and Spark install (`-XX:SharedArchiveFile`): every `lakefresh run` and verb that
starts a local session, and every JVM a test starts. A JVM whose JDK or class path differs
ignores the archive and loads its classes as before; its notice of that (on stdout) is silenced.

`lakefresh jars --class-archive` (run by setup) makes it: a small local job in a process of its
own (about 50 s), whose driver JVM writes the archive (about 170 MB) to `$LAKEFRESH_JVM_CACHE`,
else `$XDG_CACHE_HOME/lakefresh/jvm`, else ~/.cache/lakefresh/jvm, aside and then renamed into
place, once per JDK and Spark install, and only when the disk has 2 GB free; beside it, a record
of that install (`.install`). Each time, it removes the archives whose install is gone or changed
(`prune`). Local sessions map it when it is there (`lakehouse/session.py`);
LAKEFRESH_CLASS_ARCHIVE=0 turns that off. The Iceberg, Delta and JDBC jars are not in it: Spark
loads them with a class loader of its own, which an archive does not hold.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from lakefresh.errors import SetupError

# the free space an archive is made in only when the disk has it (the archive: about 170 MB)
ROOM = 2 * 1024**3
# an archive smaller than this is not one of Spark's classes (a dump cut short, say)
LEAST = 16 * 1024**2

# what a JVM given the archive says about it on stdout when it cannot use it: nothing
QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
# JVM options by which a pipeline or the environment manages class sharing itself
OWN = ("SharedArchiveFile", "ArchiveClassesAtExit", "AutoCreateSharedArchive", "-Xshare")

# the job's JVMs live for seconds: C1 alone compiles for them (the archive holds classes, not code)
JOB_JVM = "-XX:TieredStopAtLevel=1"

# the work whose classes are archived: a local session, a query with a shuffle, a CSV and a
# Parquet write and read; only the driver's JVM writes the archive (argv[1]), at its exit
WORKLOAD = """
import shutil, sys, tempfile
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
    .config("spark.driver.extraJavaOptions", "-XX:ArchiveClassesAtExit=" + sys.argv[1]).getOrCreate())
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
code = jvm.wait(timeout=300)
shutil.rmtree(out, ignore_errors=True)
sys.exit(code)
"""


def folder() -> Path:
    configured = os.environ.get("LAKEFRESH_JVM_CACHE")
    if configured:
        return Path(configured)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lakefresh" / "jvm"


def _jdk() -> Path | None:
    """The home of the JDK whose java Spark starts: $JAVA_HOME's, else the first on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve().parent.parent if found and Path(found).is_file() else None


def _major(jdk: Path) -> int | None:
    """The JDK's feature release, from its `release` file (no process)."""
    try:
        text = (jdk / "release").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    found = re.search(r'^JAVA_VERSION="(?:1\.)?(\d+)', text, re.MULTILINE)
    return int(found.group(1)) if found else None


def _install() -> tuple[Path, Path]:
    """The JDK home and the Spark jars folder ($SPARK_HOME's when set, as for Spark itself) that
    an archive made now is for. Raises SetupError when there is none to make one for."""
    try:
        import pyspark
    except ImportError:
        raise SetupError("pyspark is not installed") from None
    jdk = _jdk()
    if jdk is None:
        raise SetupError("no java found ($JAVA_HOME, PATH)")
    major = _major(jdk)
    if major is None or major < 13:
        raise SetupError(f"the JDK at {jdk} cannot write a class archive (JDK 13 or later can)")
    return jdk, Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent) / "jars"


def _stamp(path: Path) -> str:
    found = path.stat()
    return f"{path}:{found.st_size}:{found.st_mtime_ns}"


def _marks(jdk: Path, jars: Path) -> list[str]:
    """What an install is known by, from files only (no JVM, no process): the JDK's home, its JVM
    library (an update replaces it) and Spark's jars folder (a reinstall touches it)."""
    libjvm = next(jdk.glob("lib/server/libjvm.*"), None) or next(jdk.glob("lib/*/libjvm.*"), None)
    return [str(jdk), *(_stamp(path) for path in (libjvm, jars) if path is not None and path.exists())]


def _key(marks: list[str]) -> str:
    """The JDK and Spark install an archive is good for: Spark's version and the install's marks
    (`_marks`)."""
    import pyspark

    return hashlib.sha256("\n".join([pyspark.__version__, *marks]).encode()).hexdigest()[:16]


def archive_path() -> Path:
    """Where this JDK and Spark install's archive is (or would be); SetupError as `_install`."""
    return _archive_for(_marks(*_install()))


def _archive_for(marks: list[str]) -> Path:
    return folder() / f"spark-{_key(marks)}.jsa"


def existing() -> Path | None:
    """The archive for this JDK and Spark install when it was made and is wanted; else None."""
    if os.environ.get("LAKEFRESH_CLASS_ARCHIVE") == "0":
        return None
    try:
        path = archive_path()
    except SetupError:
        return None
    return path if path.is_file() else None


def managed_elsewhere(options: str) -> bool:
    """Whether JVM options (a pipeline's, or JDK_JAVA_OPTIONS / JAVA_TOOL_OPTIONS) already say
    how the JVM shares classes: then lakefresh's archive is not added."""
    given = " ".join(
        [options, os.environ.get("JDK_JAVA_OPTIONS", ""), os.environ.get("JAVA_TOOL_OPTIONS", "")]
    )
    return any(flag in given for flag in OWN)


def make(force: bool = False) -> Path:
    """Make the archive for this JDK and Spark install (at once when it is there already, unless
    `force`), and remove the ones whose install is gone (`prune`). SetupError says why it cannot:
    no JDK 13+, no pyspark, under 2 GB free, the job."""
    marks = _marks(*_install())  # named by them, and recorded beside it
    path = _archive_for(marks)
    prune(path)
    if path.is_file() and not force:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in path.parent.glob("spark-*.tmp"):  # a job cut short long ago
        if time.time() - stale.stat().st_mtime > 3600:
            stale.unlink(missing_ok=True)
    if shutil.disk_usage(path.parent).free < ROOM:
        raise SetupError(f"under 2 GB free in {path.parent}: the warehouse needs the room more")
    aside = path.parent / f"{path.stem}.{os.getpid()}.tmp"  # two processes may make it at once
    env = {**os.environ, "JDK_JAVA_OPTIONS": JOB_JVM}
    job = subprocess.Popen(
        [sys.executable, "-c", WORKLOAD, str(aside)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its JVMs with it, when it has to be stopped
    )
    try:
        code = job.wait(timeout=600)
        size = aside.stat().st_size if aside.is_file() else 0
        if code != 0 or size < LEAST:
            raise SetupError(f"the job that writes the class archive failed (exit {code}, {size} bytes)")
        os.replace(aside, path)
        write_record(path, marks)
        return path
    except subprocess.TimeoutExpired:
        raise SetupError("the job that writes the class archive took over 10 minutes") from None
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
        aside.unlink(missing_ok=True)  # a failed or cut-short archive is not left behind


def _record(archive: Path) -> Path:
    """Beside each archive, the marks of the install it was made for (`_marks`, a line each)."""
    return archive.with_suffix(".install")


def write_record(archive: Path, marks: list[str]) -> None:
    """The record beside `archive` of the install it was made for (its `marks`)."""
    with contextlib.suppress(OSError):  # without its record, it is used all the same
        _record(archive).write_text("\n".join(marks) + "\n", encoding="utf-8")


def prune(keep: Path) -> list[Path]:
    """Remove the archives beside `keep` whose install is gone or changed (its JDK home, JVM
    library or jars folder no longer there as recorded: a virtual environment removed, Spark
    reinstalled, the JDK updated), with their records, and return them. Each is about 170 MB,
    and no JVM can use it any more. An archive without a record stays: its install is unknown."""
    removed = []
    for record in sorted(keep.parent.glob("spark-*.install")):
        archive = record.with_suffix(".jsa")
        if archive == keep or _current(record):
            continue
        archive.unlink(missing_ok=True)
        record.unlink(missing_ok=True)
        removed.append(archive)
    return removed


def _current(record: Path) -> bool:
    """Whether the install a record names is there as it was recorded."""
    try:
        jdk, *stamps = record.read_text(encoding="utf-8").splitlines()
    except (OSError, ValueError):  # unreadable, or empty
        return False
    return Path(jdk).is_dir() and all(_still(stamp) for stamp in stamps)


def _still(stamp: str) -> bool:
    path = Path(stamp.rsplit(":", 2)[0])
    try:
        return _stamp(path) == stamp
    except OSError:
        return False


def options(archive: Path | None) -> list[str]:
    """The JVM options that map `archive` (none without one)."""
    return [f"-XX:SharedArchiveFile={archive}", *QUIET] if archive else []
