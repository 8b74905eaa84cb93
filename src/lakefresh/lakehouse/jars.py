"""The bundled Iceberg runtime, and the relocated Jackson jar it needs.

The PyPI wheel `snowpark-connect-deps-iceberg` ships `iceberg-spark-runtime-3.5_2.12-1.10.x.jar`
without the shaded Jackson that Iceberg's own build relocates to
`org.apache.iceberg.shaded.com.fasterxml.jackson`. We rebuild it from the Jackson jars pyspark
ships (core, databind, annotations, datatype-jsr310) with Debian's jarjar and the rule
`com.fasterxml.jackson.** org.apache.iceberg.shaded.com.fasterxml.jackson.@1`.

The build is cached (by Jackson version) and atomic: a half-written jar is never left in the cache.
Users whose platform provides Iceberg, or who can reach Maven, skip all of this with
`spark.jars: none` or `spark.packages` in the pipeline file.

Run `python -m lakefresh.lakehouse.jars` (or `lakefresh jars`) to build and print the paths.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from lakefresh.errors import SetupError

RELOCATION_RULE = "rule com.fasterxml.jackson.** org.apache.iceberg.shaded.com.fasterxml.jackson.@1"
JACKSON_JARS = (
    "jackson-core",
    "jackson-databind",
    "jackson-annotations",
    "jackson-datatype-jsr310",
)
JARJAR_CANDIDATES = ("/usr/share/java/jarjar.jar", "/usr/share/java/jarjar-1.4.jar")
SCALA_BINARY = "2.12"


def cache_dir() -> Path:
    """Where built jars live: $LAKEFRESH_JAR_CACHE, else ~/.cache/lakefresh/jars."""
    configured = os.environ.get("LAKEFRESH_JAR_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "lakefresh" / "jars"


def _package_dir(name: str, hint: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SetupError(f"python package {name!r} is not installed; {hint}")
    return Path(next(iter(spec.submodule_search_locations)))


def iceberg_runtime_jar() -> Path:
    """The Iceberg Spark 3.5 runtime jar for Scala 2.12 from the bundled wheel."""
    jars = (
        _package_dir(
            "snowpark_connect_deps_iceberg",
            "install lakefresh[iceberg], or set spark.jars: none / spark.packages in the pipeline",
        )
        / "jars"
    )
    found = sorted(jars.glob(f"iceberg-spark-runtime-3.5_{SCALA_BINARY}-1.10.*.jar"))
    if not found:
        raise SetupError(f"no iceberg-spark-runtime-3.5_{SCALA_BINARY}-1.10.*.jar in {jars}")
    return found[-1]


def pyspark_jackson_jars() -> list[Path]:
    jars = _package_dir("pyspark", "install pyspark 3.5") / "jars"
    found: list[Path] = []
    for name in JACKSON_JARS:
        matches = sorted(jars.glob(f"{name}-2.*.jar"))
        if not matches:
            raise SetupError(f"pyspark's jars folder {jars} has no {name}-2.*.jar")
        found.append(matches[-1])
    return found


def shaded_jackson_jar() -> Path:
    """Path of the relocated Jackson jar in the cache (built or not)."""
    version = pyspark_jackson_jars()[0].stem.rsplit("-", 1)[-1]
    return cache_dir() / f"iceberg-shaded-jackson-{version}.jar"


def find_jarjar() -> Path:
    configured = os.environ.get("LAKEFRESH_JARJAR")
    for candidate in ([configured] if configured else []) + list(JARJAR_CANDIDATES):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    raise SetupError(
        "jarjar is not installed: run `apt-get install libjarjar-java` (or set LAKEFRESH_JARJAR "
        "to a jarjar jar), or provide Iceberg yourself with spark.jars: none / spark.packages"
    )


def build_shaded_jackson(force: bool = False) -> Path:
    """Build the relocated Jackson jar once; return its path."""
    target = shaded_jackson_jar()
    if target.is_file() and not force:
        return target
    java = shutil.which("java")
    if java is None:
        raise SetupError("java is not on PATH: install a Java 17 runtime (openjdk-17-jre-headless)")
    jarjar = find_jarjar()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        merged = Path(tmp) / "jackson-merged.jar"
        _merge_jars(pyspark_jackson_jars(), merged)
        rules = Path(tmp) / "rules.txt"
        rules.write_text(RELOCATION_RULE + "\n", encoding="utf-8")
        out = Path(tmp) / "shaded.jar"
        proc = subprocess.run(
            [java, "-jar", str(jarjar), "process", str(rules), str(merged), str(out)],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0 or not out.is_file():
            raise SetupError(f"jarjar failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
        _check_relocated(out)
        os.replace(out, target)  # atomic within one folder
    return target


def _merge_jars(jars: list[Path], out: Path) -> None:
    """One jar of all classes; drops what cannot be relocated (module-info, multi-release, services)."""
    seen: set[str] = set()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as merged:
        for jar in jars:
            with zipfile.ZipFile(jar) as source:
                for item in source.infolist():
                    name = item.filename
                    skip = (
                        name in seen
                        or name.endswith("module-info.class")
                        or name.startswith(("META-INF/versions/", "META-INF/services/"))
                        or name.upper().endswith((".SF", ".RSA", ".DSA"))
                    )
                    if skip:
                        continue
                    seen.add(name)
                    merged.writestr(item, source.read(name))


def _check_relocated(jar: Path) -> None:
    with zipfile.ZipFile(jar) as z:
        names = z.namelist()
    wanted = "org/apache/iceberg/shaded/com/fasterxml/jackson/databind/ObjectMapper.class"
    if wanted not in names:
        raise SetupError(f"the relocated jar {jar} lacks {wanted}")


def bundled_jars() -> list[str]:
    """Jars for `spark.jars: bundled`, building the relocated Jackson when missing."""
    return [str(iceberg_runtime_jar()), str(build_shaded_jackson())]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        if "--force" in args:
            build_shaded_jackson(force=True)
        for jar in bundled_jars():
            print(jar)
    except SetupError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
