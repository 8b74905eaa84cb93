"""What went wrong in Spark, Iceberg or the JVM, said in one line.

A failure inside the JVM reaches Python as a `Py4JJavaError` ("An error occurred while calling
o51.sql.") or as one of PySpark's converted exceptions, with the real cause several levels down
its Java cause chain. :func:`describe` names the root cause in one line (class and message),
with what to do for the failures users meet most; :func:`is_commit_conflict` tells a commit that
surely failed because another writer committed first (safe to retry) from everything else.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from lakefresh.errors import CommitConflictError
from lakefresh.secrets import redact

T = TypeVar("T")

# A commit that failed for certain because the table moved (safe to try again). Not
# CommitStateUnknownException: that commit may have landed, and must be checked, never retried.
CONFLICTS = ("CommitFailedException", "ValidationException", "AlreadyExistsException")
# Delta Lake's: its optimistic commit found a concurrent commit it conflicts with, and wrote nothing
# (exact names: java.util's ConcurrentModificationException is no commit conflict)
DELTA_CONFLICTS = frozenset(
    {
        "ConcurrentAppendException",
        "ConcurrentDeleteReadException",
        "ConcurrentDeleteDeleteException",
        "ConcurrentTransactionException",
        "ConcurrentWriteException",
        "MetadataChangedException",
        "ProtocolChangedException",
    }
)

# Wrappers whose own message says less than their cause's.
WRAPPERS = (
    "Py4JJavaError",
    "SparkException",
    "ExecutionException",
    "InvocationTargetException",
    "UndeclaredThrowableException",
    "RuntimeException",
    "UncheckedIOException",
)

HINTS: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        ("CommitStateUnknownException",),
        "the commit's outcome is unknown: it may have landed; the next run reads the table's "
        "lineage and never applies a batch twice",
    ),
    (
        ("PYTHON_VERSION_MISMATCH", "Python in worker has different version"),
        "the executors run another Python than the driver: set spark.pyspark.python (and "
        "spark.pyspark.driver.python) to the same interpreter",
    ),
    (
        ("matched a single row from the target table with multiple rows of the source",),
        "a MERGE matched one target row with several change-set rows: the target or the batch "
        "holds a key more than once",
    ),
    (
        ("No suitable driver",),
        "no JDBC driver for this URL: add its Maven coordinates to spark.packages "
        "(e.g. org.postgresql:postgresql:42.7.4) or its jar to spark.extra_jars",
    ),
    (
        ("x-amz-content-sha256", "XAmzContentSHA256Mismatch", "x-amz-checksum", "x-amz-trailer"),
        "the S3-compatible server refuses the checksums the AWS SDK sends by default (SDK 2.30 "
        "on): set storage.s3.checksums: when_required (or AWS_REQUEST_CHECKSUM_CALCULATION and "
        "AWS_RESPONSE_CHECKSUM_VALIDATION to when_required in the environment)",
    ),
    (
        ("ClassNotFoundException", "NoClassDefFoundError"),
        "a class is missing from the JVM: a jar is not on the classpath (spark.jars, "
        "spark.packages, spark.extra_jars)",
    ),
)


@dataclass(frozen=True)
class Link:
    """One exception of a Java cause chain (or the Python exception itself)."""

    name: str  # the class's simple name
    message: str


def chain(exc: BaseException) -> list[Link]:
    """The exception and its causes, outermost first: the Java chain when there is one."""
    links = [Link(type(exc).__name__, _first_line(str(exc)))]
    java = getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)
    seen = 0
    while java is not None and seen < 20:
        try:
            message = _first_line(str(java.getMessage() or ""))
            links.append(Link(str(java.getClass().getSimpleName()), message))
            cause = java.getCause()
        except Exception:  # the JVM is gone: the Python side is all there is
            break
        java = None if cause is None or cause.equals(java) else cause
        seen += 1
    if len(links) == 1:
        links.extend(_server_links(exc))
    cause_py = exc.__cause__
    if len(links) == 1 and cause_py is not None and cause_py is not exc:
        links.extend(chain(cause_py))
    return links


# a Java exception as a Spark Connect server reports it: `pkg.Class: message`, `Caused by: ...`
_SERVER_EXCEPTION = re.compile(r"\s*(?:Caused by: )?(?:[A-Za-z_$][\w$]*\.)+([A-Z][\w$]*): ?(.*)")


def _server_links(exc: BaseException) -> list[Link]:
    """The Java chain of an error a Spark Connect server sent (no JVM here): from its message and
    the server's stack trace, which names each cause."""
    if not type(exc).__module__.startswith("pyspark.errors.exceptions.connect"):
        return []
    text = getattr(exc, "_stacktrace", None) or ""
    found = (_SERVER_EXCEPTION.match(line) for line in [str(exc), *text.splitlines()])
    return [Link(m.group(1), _first_line(m.group(2))) for m in found if m]


def describe(exc: BaseException) -> str:
    """One line: the root cause's class and message, and what to do where that is known."""
    links = chain(exc)
    informative = [x for x in links if x.message and x.name not in WRAPPERS]
    root = informative[-1] if informative else links[-1]
    top = links[0]
    text = f"{root.name}: {root.message}" if root.message else root.name
    if top is not root and top.name not in WRAPPERS and top.message and top.message not in text:
        text = f"{top.name}: {top.message} (cause: {text})"
    whole = " ".join(f"{x.name} {x.message}" for x in links)
    for needles, hint in HINTS:
        if any(n in whole for n in needles):
            text += f"; {hint}"
            break
    if os.environ.get("LAKEFRESH_DEBUG") == "1":
        text += "\n" + "".join(traceback.format_exception(exc))
    return redact(text)


def is_commit_conflict(exc: BaseException) -> bool:
    """Whether a commit surely failed because another writer committed first (retry is safe)."""
    names = [x.name for x in chain(exc)]
    if "CommitStateUnknownException" in names:
        return False
    # substrings: Spark wraps Iceberg's AlreadyExistsException as NamespaceAlreadyExistsException...
    if any(name in DELTA_CONFLICTS for name in names):
        return True
    return any(conflict in name for name in names for conflict in CONFLICTS)


# A request to the store that never got its answer (a connection refused, dropped or timed out)
# or that the store asked to try again later (S3's 503 Slow Down, a 500): the write may succeed
# when tried again. Names of the Java exceptions (the JDK's, the AWS SDK's, S3A's), and words of
# the messages of those that wrap them in a generic one.
INTERRUPTED = (
    "SocketException",
    "SocketTimeoutException",
    "ConnectException",
    "NoHttpResponseException",
    "ConnectionClosedException",
    "AWSClientIOException",
    "AWSServiceThrottledException",
    "AWSStatus500Exception",
)
INTERRUPTED_WORDS = (
    "Unexpected end of file from server",
    "Connection reset",
    "Broken pipe",
    "Unable to execute HTTP request",
    "SlowDown",
    "Please reduce your request rate",
    "(Service: S3, Status Code: 503",
    "(Service: S3, Status Code: 500",
)


@contextlib.contextmanager
def conflict_raised_as(message: str) -> Iterator[None]:
    """A commit conflict in the body, as the table format raises it (`is_commit_conflict`),
    raised as CommitConflictError(message): the one name the seam's callers catch. Any other
    error goes on as it is."""
    try:
        yield
    except Exception as exc:
        if isinstance(exc, CommitConflictError) or not is_commit_conflict(exc):
            raise
        raise CommitConflictError(message) from exc


def rows_replaced_first(table: str) -> str:
    """What a rewrite of a small control table's rows says when another write replaced them
    first (the rewrite's caller reads the rows again and retries)."""
    return f"another write replaced the rows of {table} first"


def is_interrupted_io(exc: BaseException) -> bool:
    """Whether a failure is a request to the store that was cut off or throttled (the store or
    the network, not the request: tried again, it may succeed)."""
    links = chain(exc)
    if any(x.name in INTERRUPTED for x in links):
        return True
    return any(word in x.message for x in links for word in INTERRUPTED_WORDS)


def retry_conflicts(action: Callable[[], T], attempts: int = 8) -> T:
    """Run `action`; while it fails with a commit conflict, wait (exponential backoff with
    jitter, 0.1 s doubling to 5 s) and run it again. Other failures are raised at once."""
    delay = 0.1
    for attempt in range(1, attempts + 1):
        try:
            return action()
        except Exception as exc:
            if attempt == attempts or not is_commit_conflict(exc):
                raise
            time.sleep(delay * (1 + random.random()))
            delay = min(delay * 2, 5.0)
    raise AssertionError("unreachable")


def _first_line(text: str) -> str:
    """The first informative line, without PySpark's noise. A line that only introduces what
    follows ("Error from python worker:") takes the most specific line after it: the last one
    naming an error, as a Python traceback ends."""
    lines = []
    for line in text.strip().splitlines():
        line = line.strip()
        if line.startswith(("PYTHONPATH was", "at ", "JVM stacktrace", "== SQL")):
            break
        if line and not line.startswith("An error occurred while calling"):
            lines.append(line.removeprefix(": "))
    if not lines:
        return ""
    first = lines[0]
    named = [x for x in lines[1:] if ("Error" in x or "Exception" in x) and not x.startswith("File ")]
    if any(x.startswith("Traceback (most recent call last)") for x in lines) and named:
        return named[-1]  # a Python traceback: its last line says what went wrong
    if first.endswith(":") and len(lines) > 1:
        return f"{first} {(named or lines[1:])[-1]}"
    return first
