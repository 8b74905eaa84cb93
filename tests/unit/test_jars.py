"""The bundled jars: found in the wheel, Jackson relocated by jarjar, cached."""

from __future__ import annotations

import zipfile

import pytest

from lakefresh.errors import SetupError
from lakefresh.lakehouse import jars


def test_the_iceberg_runtime_comes_from_the_wheel():
    jar = jars.iceberg_runtime_jar()
    assert jar.name.startswith("iceberg-spark-runtime-3.5_2.12-1.10.")


def test_jackson_is_relocated_under_icebergs_shaded_package(tmp_path, monkeypatch):
    monkeypatch.setenv("LAKEFRESH_JAR_CACHE", str(tmp_path))
    built = jars.build_shaded_jackson()
    assert built.parent == tmp_path
    with zipfile.ZipFile(built) as z:
        names = z.namelist()
    assert "org/apache/iceberg/shaded/com/fasterxml/jackson/databind/ObjectMapper.class" in names
    assert "org/apache/iceberg/shaded/com/fasterxml/jackson/datatype/jsr310/JavaTimeModule.class" in names
    assert not [n for n in names if n.startswith("com/fasterxml/")]
    mtime = built.stat().st_mtime_ns
    assert jars.build_shaded_jackson() == built and built.stat().st_mtime_ns == mtime  # cached


def test_a_missing_jarjar_says_how_to_get_it_or_skip_it(tmp_path, monkeypatch):
    monkeypatch.setenv("LAKEFRESH_JAR_CACHE", str(tmp_path))
    monkeypatch.setenv("LAKEFRESH_JARJAR", str(tmp_path / "missing.jar"))
    monkeypatch.setattr(jars, "JARJAR_CANDIDATES", ())
    with pytest.raises(SetupError, match=r"apt-get install libjarjar-java.*spark.jars: none"):
        jars.build_shaded_jackson()
