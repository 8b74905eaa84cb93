"""The class-data archive of Spark's classes (src/lakefresh/lakehouse/class_archive.py) for the
JVMs the tests start: the shared session, and every JVM of seconds to minutes that a test starts
(a killed `lakefresh run`, spark-submit, the cluster's master, workers, drivers and executors),
which map it through JDK_JAVA_OPTIONS (tests/conftest.py). scripts/test.sh makes it beside the
lint (`lakefresh jars --class-archive`), before the tests start; a run without it makes it here.
"""

from __future__ import annotations

import os
from pathlib import Path

from lakefresh.errors import LakefreshError
from lakefresh.lakehouse import class_archive

# Every JVM the tests start in a process of its own lives for seconds to a few minutes and compiles
# Spark's code from cold: C1 alone compiles it for much less CPU than C1 and C2 together (a crash
# drill's JVM spends most of its life compiling). The shared session lives for the
# whole run, where C2's faster code pays back, so it is started without this (tests/conftest.py).
SHORT_LIVED_JVM = "-XX:TieredStopAtLevel=1"


def class_archive_made() -> Path | None:
    """The archive for this JDK and Spark install, made now if missing; None when it cannot be
    made, or LAKEFRESH_TEST_CLASS_ARCHIVE is 0 (a run with no JVM but its shared session, where
    making it would cost more than it saves)."""
    if os.environ.get("LAKEFRESH_TEST_CLASS_ARCHIVE") == "0":
        return None
    try:
        return class_archive.make()
    except (LakefreshError, OSError):
        return None  # the JVMs start as they did without it
