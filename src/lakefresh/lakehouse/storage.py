"""Files on any storage Spark can reach (local, HDFS, S3, ABFS...), through Hadoop's FileSystem."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class FileEntry:
    path: str  # fully qualified URI, as Spark reads it
    name: str
    is_dir: bool
    size: int
    modified: datetime  # UTC, naive


class Storage:
    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self._jvm: Any = spark.sparkContext._jvm
        self._conf: Any = spark.sparkContext._jsc.hadoopConfiguration()

    def _fs(self, path: str) -> tuple[Any, Any]:
        jpath = self._jvm.org.apache.hadoop.fs.Path(path)
        return jpath.getFileSystem(self._conf), jpath

    def exists(self, path: str) -> bool:
        fs, jpath = self._fs(path)
        return bool(fs.exists(jpath))

    def list(self, path: str) -> list[FileEntry]:
        fs, jpath = self._fs(path)
        out = []
        for status in fs.listStatus(jpath):
            p = status.getPath()
            out.append(
                FileEntry(
                    path=str(p.toString()),
                    name=str(p.getName()),
                    is_dir=bool(status.isDirectory()),
                    size=int(status.getLen()),
                    modified=datetime.fromtimestamp(status.getModificationTime() / 1000, UTC).replace(
                        tzinfo=None
                    ),
                )
            )
        return sorted(out, key=lambda e: e.name)

    def first_line(self, path: str, encoding: str) -> str | None:
        fs, jpath = self._fs(path)
        stream = fs.open(jpath)
        try:
            reader = self._jvm.java.io.BufferedReader(self._jvm.java.io.InputStreamReader(stream, encoding))
            line = reader.readLine()
            return None if line is None else str(line)
        finally:
            stream.close()

    def read_text(self, path: str, encoding: str = "UTF-8") -> str:
        """A whole (small) file as text: a manifest, a marker."""
        fs, jpath = self._fs(path)
        stream = fs.open(jpath)
        try:
            data = self._jvm.org.apache.commons.io.IOUtils.toString(stream, encoding)
            return str(data)
        finally:
            stream.close()
