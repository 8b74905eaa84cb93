"""Shared fixtures: one local SparkSession with an Iceberg catalog for the whole run; every test
gets its own namespaces, source folders and pipeline file."""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings as hypothesis_settings

from tests.jvm_archive import SHORT_LIVED_JVM

# By default property tests run a fixed set of examples, so a run passes or fails the same way
# every time (CI included); HYPOTHESIS_PROFILE=explore draws new examples on every run.
hypothesis_settings.register_profile("fixed", derandomize=True, database=None)
hypothesis_settings.register_profile("explore", derandomize=False)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fixed"))

CATALOG = "lf_test"
# Delta Lake beside Iceberg in the shared session, on the default Spark line (tests/spark/test_delta.py
# runs there; the Spark 3.5 run takes the contract suites on Iceberg)
DELTA = os.environ.get("LAKEFRESH_TEST_DELTA", "1") == "1"
FORMATS = ["iceberg", "delta"] if DELTA else ["iceberg"]  # for tests parametrized by table format
_counter = itertools.count()
NO_LEASE = "run:\n  lease: false\n"  # a workspace's pipelines without the run lease

# the short-lived JVMs' options (a killed `lakefresh run`, spark-submit, the cluster's processes)
OURS = "JDK_JAVA_OPTIONS" not in os.environ  # a JDK_JAVA_OPTIONS of the caller's wins
os.environ.setdefault("JDK_JAVA_OPTIONS", SHORT_LIVED_JVM)
if os.environ.get("LAKEFRESH_TEST_CLASS_ARCHIVE") == "0":  # no archive made, and none mapped
    os.environ.setdefault("LAKEFRESH_CLASS_ARCHIVE", "0")


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("warehouse")


@pytest.fixture(scope="session")
def spark(warehouse: Path) -> Iterator[Any]:
    from lakefresh.config.engine import CatalogConfig

    session = start_session(CatalogConfig(name=CATALOG, warehouse=str(warehouse)))
    yield session
    session.stop()


def start_session(catalog: Any, storage: Any = None, conf: dict[str, str] | None = None) -> Any:
    """The tests' shared session, on this catalog (and storage, more settings: tests/lake/)."""
    from lakefresh.lakehouse.session import build_session

    settings = session_settings(catalog, storage, conf)
    short_lived = os.environ.pop("JDK_JAVA_OPTIONS", None)
    try:
        return build_session(settings)
    finally:
        if short_lived is not None:
            os.environ["JDK_JAVA_OPTIONS"] = short_lived


def session_settings(catalog: Any, storage: Any = None, conf: dict[str, str] | None = None) -> dict[str, str]:
    """The settings of the tests' shared session (tests/connect/: its Connect server's)."""
    from lakefresh.config.engine import SparkConfig
    from lakefresh.lakehouse.class_archive import options as archive_options
    from lakefresh.lakehouse.jars import postgresql_driver
    from lakefresh.lakehouse.session import spark_settings
    from tests.jvm_archive import class_archive_made

    # Spark's classes from an archive (tests/jvm_archive.py): every JVM starts in about half the
    # CPU, the shared session and the JVMs the tests start from here on
    mapped = archive_options(class_archive_made()) if OURS else []
    if mapped:
        os.environ["JDK_JAVA_OPTIONS"] = " ".join([SHORT_LIVED_JVM, *mapped])

    settings = spark_settings(
        catalog,
        SparkConfig(
            master="local[2]",
            packages=[postgresql_driver()],  # from Maven Central, resolved by `make test-setup`
            conf={
                "spark.sql.shuffle.partitions": "2",
                "spark.default.parallelism": "2",
                "spark.sql.adaptive.enabled": "false",
                # tests run many small queries of many shapes: compiling each costs more than
                # interpreting its few rows (Spark's own suites run both modes)
                "spark.sql.codegen.wholeStage": "false",
                "spark.sql.codegen.factoryMode": "NO_CODEGEN",
                "spark.driver.memory": "2g",
                # a throughput collector: less CPU than G1 (the default) over the suite's slowest
                # files; two test runs share two cores, so CPU is what `make test` waits for.
                # lakefresh adds its shallow inlining (lakehouse/session.py, SHALLOW_INLINING),
                # which cuts the JIT compiler's CPU by more than half at the same wall time
                "spark.driver.extraJavaOptions": " ".join(["-XX:+UseParallelGC", *mapped]),
                **(conf or {}),
            },
        ),
        Path.cwd(),
        delta=DELTA,
        storage=storage,
    )
    return settings


class Workspace:
    """A test's own folders, namespaces and pipeline file, over the shared session. With `lease`,
    its pipelines take the run lease (the product's default); without it, none
    (`run: {lease: false}`)."""

    def __init__(self, root: Path, spark: Any, warehouse: Path, lease: bool = False) -> None:
        n = next(_counter)
        self.root = root
        self.spark = spark
        self.warehouse = warehouse
        self.lease = lease
        self.namespace = f"t{n}_{os.getpid()}"
        self.control_namespace = f"ctl{n}_{os.getpid()}"
        self.catalog_extra = ""  # more of the pipeline's `catalog:` section (`  key: value\n` lines)

    def folder(self, name: str = "in") -> Path:
        path = self.root / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def write_parquet(self, relative: str, data: list[Any], schema: str) -> Path:
        """One Parquet file of these rows at `relative` (Spark writes a folder: its one part file
        is moved there)."""
        path = self.root / relative
        staging = path.parent / f"_staging_{path.stem}"
        self.spark.createDataFrame(data, schema).coalesce(1).write.parquet(str(staging))
        path.parent.mkdir(parents=True, exist_ok=True)
        next(staging.glob("*.parquet")).rename(path)
        return path

    def write(self, relative: str, text: str | bytes, mtime: float | None = None) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        if mtime is not None:
            os.utime(path, (mtime, mtime))
        return path

    def uri(self, relative: str) -> str:
        """Where a file or folder that `write` made is read from (a source's `path`)."""
        return str(self.root / relative)

    def publish(self, relative: str) -> None:
        """Files made in this workspace's folder by other means than `write` (an export's
        writer) become readable at `uri(relative)`: here they are already."""

    def catalog_yaml(self) -> str:
        return (
            f"catalog:\n  name: {CATALOG}\n  warehouse: {self.warehouse}\n"
            f"  control_namespace: {self.control_namespace}\n{self.catalog_extra}"
        )

    def pipeline_yaml(self, tables: str, defaults: str = "", lease: bool | None = None) -> str:
        """The pipeline file's text; with `lease` given, its pipeline takes the lease or not
        whatever the workspace's pipelines do."""
        takes = self.lease if lease is None else lease
        return (
            f"{self.catalog_yaml()}"
            f"spark:\n  master: local[2]\n"
            f"{'' if takes else NO_LEASE}"
            f"defaults:\n  namespace: {self.namespace}\n{textwrap.indent(textwrap.dedent(defaults), '  ')}"
            f"tables:\n{textwrap.indent(textwrap.dedent(tables).strip(), '  ')}\n"
        )

    def pipeline(
        self, tables: str, defaults: str = "", name: str = "pipeline.yml", lease: bool | None = None
    ) -> Any:
        from lakefresh.api import load_pipeline

        path = self.root / name
        path.write_text(self.pipeline_yaml(tables, defaults, lease), encoding="utf-8")
        return load_pipeline(path, spark=self.spark)

    def version_counts(self, tables: list[str], backend: Any = None) -> dict[str, int]:
        """Each table's versions (Iceberg's snapshots; Delta's: `backend` says which format each has)."""
        out = {}
        for t in tables:
            if backend is not None and "delta" in backend.qualified(t):
                out[t] = len(backend.lineage(t).retained)
            else:
                out[t] = self.spark.sql(f"SELECT count(*) FROM {CATALOG}.{t}.snapshots").first()[0]
        return out


@pytest.fixture(scope="session")
def example_first_run(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The example pipeline's first run, once per test run (tests/example_run.py): its folder,
    its pristine data, its JSON and its tables."""
    from tests.example_run import EXAMPLE, first_run

    with pipeline_settings_kept(spark, EXAMPLE / "pipeline.yml"):
        return first_run(tmp_path_factory.mktemp("example"), cli_in_process)


@pytest.fixture(scope="session")
def example_first_run_kept(request: pytest.FixtureRequest) -> Any:
    """The example's first run as far as its data, its JSON and its tables: the one another
    process of this `make test` kept (tests/example_run.py, `kept_run`), or else this process's."""
    from tests.example_run import kept_run

    return kept_run() or request.getfixturevalue("example_first_run")


@pytest.fixture(scope="session")
def postgres() -> Iterator[Any]:
    """A PostgreSQL server of the tests' own (stopped at the end of the run), when installed."""
    from tests.postgres import Postgres

    try:
        server = Postgres().start()
    except FileNotFoundError as exc:
        pytest.skip(f"needs {exc}")
    yield server
    server.stop()


@pytest.fixture
def ws(request: pytest.FixtureRequest, tmp_path: Path, spark: Any, warehouse: Path) -> Workspace:
    """A test's workspace. Its pipelines take the run lease (the product's default) when the test
    is marked `lease`: the lease's own tests, the ones of runs that overlap or crash, and the
    contract suites. Others take none: a lease is two commits of the `leases` table a run, about
    a fifth of a small run's time, and what those tests check happens inside it."""
    return Workspace(tmp_path, spark, warehouse, lease=request.node.get_closest_marker("lease") is not None)


def record_in_commit(spark: Any) -> bool:
    """Whether this runtime's commits carry a batch's record (Iceberg 1.12 on; the Spark 3.5
    line runs 1.10.2): the lean commit path's one log commit a run, and backlog groups."""
    from lakefresh.lakehouse.iceberg import IcebergBackend

    return IcebergBackend(spark, CATALOG).carries_commit_properties()


def skip_without_record_in_commit(spark: Any) -> None:
    """Skip a test of what only a runtime whose commits carry a batch's record does."""
    if not record_in_commit(spark):
        pytest.skip("this Iceberg runtime's commits carry no record (before 1.12): one by one, logged twice")


@pytest.fixture
def needs_record_in_commit(spark: Any) -> None:
    skip_without_record_in_commit(spark)


@contextlib.contextmanager
def machine_zone(zone: str) -> Iterator[None]:
    """This process's own time zone (TZ), as a computer set to `zone` has it (PySpark converts
    naive datetimes through it)."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = zone
    time.tzset()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = before
        time.tzset()


@contextlib.contextmanager
def log_reads() -> Iterator[list[str]]:
    """The queries that read the `batches` log (state/reads.py's) made inside the block, each
    still run for real."""
    from pyspark.sql import SparkSession

    from lakefresh.state.reads import LOG_READS

    reads: list[str] = []
    sql = SparkSession.sql

    def counting(self: Any, query: str, *args: Any, **kwargs: Any) -> Any:
        if query.startswith(LOG_READS):
            reads.append(query)
        return sql(self, query, *args, **kwargs)

    SparkSession.sql = counting  # type: ignore[method-assign]
    try:
        yield reads
    finally:
        SparkSession.sql = sql  # type: ignore[method-assign]


@contextlib.contextmanager
def settings_kept(spark: Any, keys: list[str]) -> Iterator[None]:
    """The shared session's values of these runtime settings, put back afterwards (unset where
    they were unset): for a test that changes them, or runs what does (the CLI, which joins the
    session and sets its pipeline's)."""
    before = {k: spark.conf.get(k, None) for k in keys}
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


@contextlib.contextmanager
def pipeline_settings_kept(spark: Any, pipeline: Path) -> Iterator[None]:
    """`settings_kept` for the runtime settings the pipeline file `pipeline` sets (its catalog,
    its `spark.sql.*` conf) on the session it joins: a CLI command run in this process, or a
    pipeline loaded without the tests' session. Reading its settings starts nothing."""
    from lakefresh.api import load_pipeline

    settings = load_pipeline(pipeline).spark_settings()
    with settings_kept(
        spark, [k for k in settings if k.startswith("spark.sql.") and k != "spark.sql.extensions"]
    ):
        yield


def run_paused(pipeline: Any, monkeypatch: pytest.MonkeyPatch, fault: str, go: Path, meanwhile: Any) -> Any:
    """`pipeline.run()` in a thread, paused at `fault` (a fault point, `point[@batch]`:
    lakefresh/faults.py) while `meanwhile()` runs, as another writer would; the run's result."""
    monkeypatch.setenv("LAKEFRESH_FAULTS", f"{fault}:pause={go}")
    outcome: dict[str, Any] = {}
    runner = threading.Thread(target=lambda: outcome.setdefault("result", pipeline.run()))
    runner.start()
    paused = Path(f"{go}.paused")
    deadline = time.monotonic() + 240
    while not paused.exists() and runner.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert paused.exists(), "the run never reached the pause"
    meanwhile()
    go.touch()
    runner.join(300)
    return outcome["result"]


def rows(df: Any, columns: list[str] | None = None, order: list[str] | None = None) -> list[tuple]:
    """A DataFrame as a sorted list of tuples of the given columns (default: non-system ones)."""
    cols = columns or [c for c in df.columns if not c.startswith("_lf_")]
    out = [tuple(r) for r in df.select(*cols).collect()]
    return sorted(out, key=lambda t: tuple((x is None, str(x)) for x in t))


def cli_in_process(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """One `lakefresh` CLI command, run in this process (on the shared session) from `cwd`; the
    result as a process's would be."""
    from typer.testing import CliRunner

    from lakefresh.cli import app

    here = Path.cwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(app, list(args))
    finally:
        os.chdir(here)
    return subprocess.CompletedProcess(list(args), result.exit_code, result.stdout, result.stderr)


# the CLI in a process of its own, which says at its end whether PySpark was imported
CLI = """
import sys
from lakefresh.cli import app
try:
    app(sys.argv[1:], prog_name="lakefresh")
finally:
    print(f"pyspark imported: {'pyspark' in sys.modules}", file=sys.stderr)
"""


def cli_process(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """One `lakefresh` CLI command in a process of its own (tables read without a JVM where
    they can be: LAKEFRESH_NATIVE_READS unset), its stderr ending in whether PySpark was imported."""
    from lakefresh.lakehouse.native import SWITCH

    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    env.pop(SWITCH, None)
    return subprocess.run(
        [sys.executable, "-c", CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=env
    )
