"""The session factory's settings: embedded defaults, pipeline overrides, environment overrides.
Computed without a JVM."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lakefresh.config import CatalogConfig, SparkConfig
from lakefresh.errors import ConfigError
from lakefresh.lakehouse.session import LISTING_PARALLELISM, SHALLOW_INLINING, local_threads, spark_settings


def settings(catalog=None, spark=None):
    return spark_settings(catalog or CatalogConfig(), spark or SparkConfig(jars="none"), Path("/pipelines"))


@pytest.fixture(autouse=True)
def no_class_archive(monkeypatch, tmp_path):
    """This machine may have made a class archive (`make test` does): these tests see none, but
    the ones that make one in their own folder."""
    monkeypatch.setenv("LAKEFRESH_JVM_CACHE", str(tmp_path / "jvm"))
    for name in ("LAKEFRESH_CLASS_ARCHIVE", "JDK_JAVA_OPTIONS", "JAVA_TOOL_OPTIONS"):
        monkeypatch.delenv(name, raising=False)


def test_embedded_default_is_local_spark_and_a_warehouse_folder_next_to_the_pipeline():
    s = settings()
    assert s["spark.master"] == "local[*]"
    assert s["spark.sql.catalog.lakefresh_catalog"] == "org.apache.iceberg.spark.SparkCatalog"
    assert s["spark.sql.catalog.lakefresh_catalog.type"] == "hadoop"
    assert s["spark.sql.catalog.lakefresh_catalog.warehouse"] == "/pipelines/warehouse"
    assert "IcebergSparkSessionExtensions" in s["spark.sql.extensions"]
    assert "spark.jars" not in s


def test_a_cluster_and_a_shared_catalog_from_config_alone():
    s = settings(
        CatalogConfig(
            name="prod",
            type="rest",
            warehouse="s3://lake/wh",
            properties={
                "uri": "https://catalog.internal",
                "io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
            },
        ),
        SparkConfig(
            master="spark://master:7077",
            jars="none",
            packages=["org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0"],
        ),
    )
    assert s["spark.master"] == "spark://master:7077"
    assert s["spark.sql.catalog.prod.type"] == "rest"
    assert s["spark.sql.catalog.prod.uri"] == "https://catalog.internal"
    assert s["spark.sql.catalog.prod.warehouse"] == "s3://lake/wh"
    assert s["spark.jars.packages"] == "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0"
    assert "spark.driver.extraJavaOptions" not in s  # logging defaults only for local runs


def test_the_environment_overrides_the_pipeline(monkeypatch):
    monkeypatch.setenv("LAKEFRESH_SPARK_MASTER", "yarn")
    monkeypatch.setenv("LAKEFRESH_WAREHOUSE", "hdfs://nn/wh")
    monkeypatch.setenv("LAKEFRESH_JARS", "/opt/a.jar,/opt/b.jar")
    monkeypatch.setenv("LAKEFRESH_SPARK_CONF", '{"spark.executor.memory": "8g"}')
    s = settings(spark=SparkConfig(conf={"spark.executor.memory": "2g"}))
    assert s["spark.master"] == "yarn"
    assert s["spark.sql.catalog.lakefresh_catalog.warehouse"] == "hdfs://nn/wh"
    assert s["spark.jars"] == "/opt/a.jar,/opt/b.jar"
    assert s["spark.executor.memory"] == "8g"


def test_a_bad_conf_variable_is_a_config_error(monkeypatch):
    monkeypatch.setenv("LAKEFRESH_SPARK_CONF", "executor.memory=8g")
    with pytest.raises(ConfigError, match="LAKEFRESH_SPARK_CONF is not a JSON object"):
        settings()


def test_delta_targets_bring_delta_lakes_extension_catalog_and_runtime(monkeypatch):
    monkeypatch.setenv("LAKEFRESH_JAR_CACHE", "/nonexistent")  # nothing resolved: coordinates
    plain = spark_settings(CatalogConfig(), SparkConfig(), Path("/pipelines"))
    settings = spark_settings(
        CatalogConfig(), SparkConfig(delta_version="4.3.0"), Path("/pipelines"), delta=True
    )
    assert "spark.sql.catalog.spark_catalog" not in plain and "delta" not in plain["spark.jars.packages"]
    assert settings["spark.sql.extensions"] == (
        "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions,io.delta.sql.DeltaSparkSessionExtension"
    )
    assert settings["spark.sql.catalog.spark_catalog"] == "org.apache.spark.sql.delta.catalog.DeltaCatalog"
    assert "io.delta:delta-spark_2.13:4.3.0" in settings["spark.jars.packages"].split(",")


def test_a_pipeline_of_delta_tables_only_needs_no_iceberg_at_all(monkeypatch):
    """Every target and the control tables on Delta (`control_format: delta`): a platform that
    provides only Delta Lake runs it; no Iceberg runtime, extension or catalog is asked for."""
    from lakefresh.config.loader import parse, validate

    monkeypatch.setenv("LAKEFRESH_JAR_CACHE", "/nonexistent")  # nothing resolved: coordinates
    text = """
catalog: {format: delta, control_format: delta}
tables:
  - name: t
    source: {kind: files, path: in, format: csv, schema: {id: int}}
    strategy: {kind: key, keys: [id]}
"""
    config = validate(parse(text, "p.yml"), "p.yml")
    assert (config.uses_delta(), config.uses_iceberg()) == (True, False)
    s = spark_settings(config.catalog, SparkConfig(delta_version="4.3.0"), Path("/pipelines"), True, False)
    assert s["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert s["spark.sql.catalog.spark_catalog"] == "org.apache.spark.sql.delta.catalog.DeltaCatalog"
    assert s["spark.jars.packages"].split(",") == ["io.delta:delta-spark_2.13:4.3.0"]
    assert [k for k, v in s.items() if "iceberg" in f"{k}={v}".lower()] == []

    named = CatalogConfig(name="spark_catalog", format="delta", control_format="delta")
    s = spark_settings(named, SparkConfig(jars="none"), Path("/pipelines"), True, False)
    assert s["spark.sql.catalog.spark_catalog"] == "org.apache.spark.sql.delta.catalog.DeltaCatalog"
    assert [k for k in s if k.startswith("spark.sql.catalog.spark_catalog.")] == []  # no Iceberg's

    mixed = validate(parse(text.replace("format: delta, control", "control"), "p.yml"), "p.yml")
    assert (mixed.uses_delta(), mixed.uses_iceberg()) == (True, True)  # the target is Iceberg
    reader = (
        text
        + """  - name: u
    source: {kind: table_changes, table: other.events, keys: [id]}
    strategy: {kind: key, keys: [id]}
"""
    )
    reads = validate(parse(reader, "p.yml"), "p.yml")
    assert reads.uses_iceberg()  # other.events is no Delta target of the pipeline: a catalog table


def test_an_iceberg_target_in_the_namespace_of_delta_control_tables_is_refused():
    from lakefresh.config.loader import parse, validate
    from lakefresh.errors import ConfigError as Problem

    text = """
catalog: {control_format: delta, control_namespace: ops}
tables:
  - name: ops.t
    source: {kind: files, path: in, format: csv, schema: {id: int}}
    strategy: {kind: key, keys: [id]}
"""
    with pytest.raises(Problem, match="ops is the control tables' namespace"):
        validate(parse(text, "p.yml"), "p.yml")


def test_the_pipelines_own_jvm_options_keep_lakefreshs_quiet_logging_and_inlining_beside_them():
    s = settings(spark=SparkConfig(jars="none", conf={"spark.driver.extraJavaOptions": "-XX:+UseParallelGC"}))
    options = s["spark.driver.extraJavaOptions"].split()
    assert options[0].startswith("-Dlog4j2.configurationFile=")
    assert options[1:] == [*SHALLOW_INLINING.split(), "-XX:+UseParallelGC"]
    own = settings(
        spark=SparkConfig(
            jars="none",
            conf={"spark.driver.extraJavaOptions": "-Dlog4j2.configurationFile=/x -XX:MaxInlineLevel=15"},
        )
    )
    theirs = "-Dlog4j2.configurationFile=/x -XX:MaxInlineLevel=15"
    # theirs win, each of ours they name is left out, the others stay
    assert own["spark.driver.extraJavaOptions"].split() == [*SHALLOW_INLINING.split()[1:], *theirs.split()]
    printing = settings(
        spark=SparkConfig(jars="none", conf={"spark.driver.extraJavaOptions": "-XX:+PrintInlining"})
    )
    assert SHALLOW_INLINING in printing["spark.driver.extraJavaOptions"]  # a flag that sets no limit


def test_a_local_session_lists_folders_in_as_many_tasks_as_it_has_threads():
    """Spark's default (10,000 tasks, for a cluster) made a small Delta table's VACUUM take 30+ s
    on two cores; a pipeline's own value wins, and a cluster keeps Spark's."""
    assert settings(spark=SparkConfig(jars="none", master="local[2]"))[LISTING_PARALLELISM] == "2"
    own = SparkConfig(jars="none", master="local[2]", conf={LISTING_PARALLELISM: "64"})
    assert settings(spark=own)[LISTING_PARALLELISM] == "64"
    assert LISTING_PARALLELISM not in settings(spark=SparkConfig(jars="none", master="spark://host:7077"))
    assert [local_threads(m) for m in ("local", "local[3]", "local[4, 2]")] == [1, 3, 4]
    assert local_threads("local[*]") == local_threads("local-cluster[2,1,1024]") == (os.cpu_count() or 1)


def test_a_local_session_starts_from_the_class_archive_once_one_was_made(monkeypatch):
    """lakehouse/class_archive.py: `lakefresh jars --class-archive` makes it; a local session maps
    it, quietly (a JVM of another JDK or Spark ignores it); a cluster's driver, settings for a
    driver elsewhere (`lakefresh submit-args`), class sharing that the pipeline or the
    environment sets, and LAKEFRESH_CLASS_ARCHIVE=0 leave it out."""
    from lakefresh.errors import SetupError
    from lakefresh.lakehouse import class_archive

    def options(spark=None, archive=True):
        found = spark_settings(
            CatalogConfig(), spark or SparkConfig(jars="none"), Path("/p"), archive=archive
        )
        return found.get("spark.driver.extraJavaOptions", "").split()

    def mapped(found):
        return [o for o in found if "Archive" in o or "-Xshare" in o]

    try:
        archive = class_archive.archive_path()
    except SetupError as exc:
        pytest.skip(f"no class archive can be made here: {exc}")
    assert mapped(options()) == []  # none made yet
    assert archive.parent == Path(os.environ["LAKEFRESH_JVM_CACHE"])
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"made")
    assert options()[-3:] == [f"-XX:SharedArchiveFile={archive}", "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]
    assert mapped(options(archive=False)) == []
    cluster = settings(spark=SparkConfig(jars="none", master="spark://h:7077"))
    assert "spark.driver.extraJavaOptions" not in cluster
    for own in ("-XX:SharedArchiveFile=/mine.jsa", "-Xshare:off", "-XX:ArchiveClassesAtExit=/new.jsa"):
        theirs = SparkConfig(jars="none", conf={"spark.driver.extraJavaOptions": own})
        assert mapped(options(theirs)) == [own]
    monkeypatch.setenv("JDK_JAVA_OPTIONS", "-XX:SharedArchiveFile=/env.jsa")
    assert mapped(options()) == []
    monkeypatch.delenv("JDK_JAVA_OPTIONS")
    monkeypatch.setenv("LAKEFRESH_CLASS_ARCHIVE", "0")
    assert mapped(options()) == []


def test_an_s3_store_sets_s3a_and_s3fileio_from_one_section(monkeypatch):
    from lakefresh.config.engine import S3Config, StorageConfig
    from lakefresh.lakehouse import jars

    monkeypatch.setattr(jars, "resolved", lambda coordinates: None)  # as before `lakefresh jars --s3`
    s3 = S3Config(endpoint="http://127.0.0.1:9000", path_style=True, checksums="when_required")
    catalog = CatalogConfig(
        name="lake", type="rest", warehouse="s3://lake/wh", properties={"uri": "http://c"}
    )
    s = spark_settings(catalog, SparkConfig(), Path("/p"), storage=StorageConfig(s3=s3))
    assert s["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9000"
    assert s["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert s["spark.hadoop.fs.s3a.endpoint.region"] == "us-east-1"  # an endpoint without a region
    assert s["spark.hadoop.fs.s3.impl"] == "org.apache.hadoop.fs.s3a.S3AFileSystem"
    assert s["spark.sql.catalog.lake.io-impl"] == "org.apache.iceberg.aws.s3.S3FileIO"
    assert s["spark.sql.catalog.lake.s3.endpoint"] == "http://127.0.0.1:9000"
    assert s["spark.sql.catalog.lake.s3.path-style-access"] == "true"
    assert s["spark.sql.catalog.lake.uri"] == "http://c"
    # no keys given: the AWS SDK's default chain (the environment, a profile, a role)
    assert not [k for k in s if "access" in k and "key" in k]
    for side in ("driver", "executor"):
        assert "-Daws.requestChecksumCalculation=when_required" in s[f"spark.{side}.extraJavaOptions"]
    # Hadoop's put of a local file goes through S3A's output stream, not the SDK's async multipart
    # client (whose uploads carry a trailing checksum such servers refuse)
    assert s["spark.hadoop.fs.s3a.optimized.copy.from.local.enabled"] == "false"
    # S3's connector with the runtime, never the whole AWS SDK bundle
    packages = s["spark.jars.packages"].split(",")
    assert "org.apache.hadoop:hadoop-aws:3.4.2" in packages or any("hadoop-aws" in p for p in packages)
    assert any(p.startswith("software.amazon.awssdk:s3:") for p in packages)
    assert s["spark.jars.excludes"] == "software.amazon.awssdk:bundle"


def test_s3_keys_given_go_to_both_clients_and_a_local_warehouse_keeps_hadoop_file_io():
    from lakefresh.config.engine import S3Config, StorageConfig

    s3 = S3Config(access_key_id="AKIAEXAMPLE", secret_access_key="wJalrEXAMPLEKEY", region="eu-west-1")
    s = spark_settings(CatalogConfig(), SparkConfig(jars="none"), Path("/p"), storage=StorageConfig(s3=s3))
    assert s["spark.hadoop.fs.s3a.access.key"] == "AKIAEXAMPLE"
    assert s["spark.hadoop.fs.s3a.secret.key"] == "wJalrEXAMPLEKEY"
    assert s["spark.hadoop.fs.s3a.endpoint.region"] == "eu-west-1"
    assert "spark.hadoop.fs.s3a.endpoint" not in s  # AWS's own
    assert not [k for k in s if k.startswith("spark.sql.catalog.lakefresh_catalog.s3")]  # ./warehouse
    assert "-Daws.requestChecksumCalculation" not in s.get("spark.executor.extraJavaOptions", "")
    assert "spark.hadoop.fs.s3a.optimized.copy.from.local.enabled" not in s  # S3A's default


def test_a_connect_server_takes_the_driver_s_settings_and_the_client_the_runtime_ones(monkeypatch):
    """With `spark.remote` (SPARK_REMOTE wins), no driver settings are made here: the client sets
    the runtime SQL settings (the catalog, ANSI mode, the time zone) on its session; the jars,
    the extensions and the master are the server's, which `validate` names."""
    from lakefresh.lakehouse.connect import connect_notes, runtime_setting, server_settings

    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    s = settings(spark=SparkConfig(jars=["/jars/iceberg.jar"], remote="sc://spark:15002"))
    assert s["spark.remote"] == "sc://spark:15002"
    assert "spark.driver.extraJavaOptions" not in s and LISTING_PARALLELISM not in s
    server = server_settings(s)
    assert {"spark.jars", "spark.sql.extensions", "spark.master"} <= set(server)
    assert "spark.remote" not in server and not any(k.startswith("spark.sql.catalog.") for k in server)
    assert runtime_setting("spark.sql.catalog.lakefresh_catalog.warehouse")
    assert runtime_setting("spark.sql.ansi.enabled") and not runtime_setting("spark.sql.extensions")
    notes = connect_notes(s["spark.remote"], delta=False)
    assert len(notes) == 1 and "sc://spark:15002" in notes[0] and "--connect-server" in notes[0]
    # Delta's logs are read on the client's side too: it must reach their storage
    assert "Delta" in connect_notes(s["spark.remote"], delta=True)[1]
    assert connect_notes(None, delta=True) == []

    monkeypatch.setenv("SPARK_REMOTE", "sc://elsewhere:15002")
    assert (
        settings(spark=SparkConfig(jars="none", remote="sc://spark:15002"))["spark.remote"]
        == "sc://elsewhere:15002"
    )
    assert settings()["spark.remote"] == "sc://elsewhere:15002"


def test_a_remote_that_is_not_a_connect_url_is_refused():
    with pytest.raises(ValueError, match="not a Spark Connect URL"):
        SparkConfig(remote="spark://host:7077")
