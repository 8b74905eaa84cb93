"""The jars: the official artifacts' Maven coordinates, pinned in one place, resolved once from
Maven Central by Spark's own resolution and handed to sessions as files (or, before that, as
coordinates for Spark to resolve); a platform that provides them skips it all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lakefresh.config.engine import SparkConfig
from lakefresh.errors import SetupError
from lakefresh.lakehouse import jars
from lakefresh.lakehouse.session import jar_settings

LINE = jars.spark_line()  # the installed pyspark's: 4.1 by default, 3.5 in the other environment
RUNTIME = jars.iceberg_runtime()


def test_the_pinned_coordinates_are_the_official_artifacts_of_each_spark_line():
    spark4, spark35 = jars.LINES["4.1"], jars.LINES["3.5"]
    assert jars.iceberg_runtime(line=spark4) == "org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0"
    assert jars.delta_runtime(line=spark4) == "io.delta:delta-spark_2.13:4.3.1"
    assert jars.iceberg_runtime(line=spark35) == "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.2"
    assert jars.delta_runtime(line=spark35) == "io.delta:delta-spark_2.12:3.3.3"
    assert jars.iceberg_runtime("1.10.1", spark35).endswith("-3.5_2.12:1.10.1")
    assert jars.postgresql_driver() == "org.postgresql:postgresql:42.7.4"


def test_the_line_is_the_installed_pysparks():
    assert jars.spark_line("4.1.4") is jars.LINES["4.1"]
    assert jars.spark_line("3.5.7") is jars.LINES["3.5"]
    assert RUNTIME.startswith(f"org.apache.iceberg:iceberg-spark-runtime-{LINE.spark}_{LINE.scala}:")
    with pytest.raises(SetupError, match=r"Spark 3.4.1 is not a supported line \(supported: 3.5, 4.1\)"):
        jars.spark_line("3.4.1")


def test_the_runtime_resolves_from_maven_central_into_the_cache_once():
    """Real resolution (setup has normally done it: then this reads the manifest)."""
    files = jars.resolve([RUNTIME])
    name = RUNTIME.split(":", 1)[1].replace(":", "-")
    assert [Path(f).name for f in files] == [f"org.apache.iceberg_{name}.jar"]
    assert all(Path(f).is_file() for f in files)
    assert jars.resolved([RUNTIME]) == files  # cached: nothing runs again


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LAKEFRESH_JAR_CACHE", str(tmp_path))
    monkeypatch.delenv("LAKEFRESH_JARS", raising=False)
    return tmp_path


def test_before_resolution_spark_resolves_the_coordinates_itself(cache):
    settings = jar_settings(SparkConfig(packages=["org.postgresql:postgresql:42.7.4"]))
    assert settings == {
        "spark.jars.packages": f"{RUNTIME},org.postgresql:postgresql:42.7.4",
        "spark.jars.ivy": str(cache / "ivy"),
    }


def test_after_resolution_sessions_get_the_files(cache):
    jar = cache / "ivy" / "jars" / "runtime.jar"
    jar.parent.mkdir(parents=True)
    jar.write_bytes(b"PK")
    manifest = jars._manifest([RUNTIME])
    manifest.write_text(json.dumps({"coordinates": [RUNTIME], "jars": [str(jar)]}), encoding="utf-8")
    assert jars.resolve([RUNTIME]) == [str(jar)]  # no JVM: the manifest answers
    assert jar_settings(SparkConfig(extra_jars=["/opt/x.jar"])) == {"spark.jars": f"{jar},/opt/x.jar"}
    jar.unlink()  # a file gone from the cache: resolve again
    assert jars.resolved([RUNTIME]) is None


def test_a_platform_that_provides_the_jars_skips_them(cache, monkeypatch):
    assert jar_settings(SparkConfig(jars="none")) == {}
    assert jar_settings(SparkConfig(jars=["/a.jar", "/b.jar"])) == {"spark.jars": "/a.jar,/b.jar"}
    monkeypatch.setenv("LAKEFRESH_JARS", "none")
    assert jar_settings(SparkConfig()) == {}
    assert jar_settings(SparkConfig(jars="bundled", iceberg_version="1.10.1")) == {}


def test_another_iceberg_release_is_one_setting(cache):
    settings = jar_settings(SparkConfig(iceberg_version="1.10.1"))
    assert settings["spark.jars.packages"] == jars.iceberg_runtime("1.10.1")
    assert settings["spark.jars.packages"].endswith(":1.10.1")
