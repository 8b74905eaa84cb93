"""The class archives' folder (lakehouse/class_archive.py): given archives made for these installs,
then these installs removed or changed, the folder keeps exactly these archives."""

from __future__ import annotations

import os
from pathlib import Path

from lakefresh.lakehouse import class_archive


def install(root: Path) -> tuple[Path, Path]:
    """A JDK home with its JVM library and a Spark jars folder, as `_marks` reads them."""
    jdk, jars = root / "jdk", root / "venv" / "jars"
    (jdk / "lib" / "server").mkdir(parents=True)
    (jdk / "lib" / "server" / "libjvm.so").write_bytes(b"jvm")
    jars.mkdir(parents=True)
    (jars / "spark-core.jar").write_bytes(b"jar")
    return jdk, jars


def archive(cache: Path, name: str, made_for: tuple[Path, Path] | None) -> Path:
    """An archive in the cache, with the record `make` writes beside it (none: an archive
    without one)."""
    path = cache / f"spark-{name}.jsa"
    path.write_bytes(b"classes")
    if made_for is not None:
        class_archive.write_record(path, class_archive._marks(*made_for))
    return path


def test_an_archive_whose_install_is_gone_or_changed_is_removed_with_its_record(tmp_path):
    cache = tmp_path / "jvm"
    cache.mkdir()
    kept, removed, reinstalled, updated = (install(tmp_path / n) for n in ("a", "b", "c", "d"))
    made = {
        "kept": archive(cache, "kept", kept),
        "removed": archive(cache, "removed", removed),
        "reinstalled": archive(cache, "reinstalled", reinstalled),
        "updated": archive(cache, "updated", updated),
        "unknown": archive(cache, "unknown", None),
        "this": archive(cache, "this", removed),  # the one being made or used: never removed
    }
    for path in (removed[1] / "spark-core.jar", removed[1], removed[0] / "lib" / "server" / "libjvm.so"):
        path.unlink() if path.is_file() else path.rmdir()
    (reinstalled[1] / "spark-core.jar").unlink()  # the jars folder changes
    os.utime(updated[0] / "lib" / "server" / "libjvm.so", ns=(1, 1))  # a JDK update replaces it

    gone = class_archive.prune(made["this"])

    assert gone == [made["reinstalled"], made["removed"], made["updated"]]
    assert sorted(p.name for p in cache.iterdir()) == [
        "spark-kept.install",
        "spark-kept.jsa",
        "spark-this.install",
        "spark-this.jsa",
        "spark-unknown.jsa",
    ]


def test_an_unreadable_record_counts_as_an_install_gone(tmp_path):
    cache = tmp_path / "jvm"
    cache.mkdir()
    empty = archive(cache, "empty", None)
    class_archive._record(empty).write_text("")
    this = archive(cache, "this", install(tmp_path / "a"))

    assert class_archive.prune(this) == [empty]
    assert sorted(p.name for p in cache.iterdir()) == ["spark-this.install", "spark-this.jsa"]


def test_the_name_of_an_install_s_archive_is_what_it_was_before_records_were_kept(tmp_path, monkeypatch):
    """An archive made before keeps its name: its key is still Spark's version and the install's
    marks, a line each."""
    import hashlib

    import pyspark

    jdk, jars = install(tmp_path / "a")
    monkeypatch.setattr(class_archive, "_install", lambda: (jdk, jars))
    lines = [pyspark.__version__, str(jdk)]
    lines += [class_archive._stamp(p) for p in (jdk / "lib" / "server" / "libjvm.so", jars)]
    key = hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]
    assert class_archive.archive_path().name == f"spark-{key}.jsa"
