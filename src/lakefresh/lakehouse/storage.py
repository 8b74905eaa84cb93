"""Files on any storage Spark can reach (local, HDFS, S3, ABFS...), through Hadoop's FileSystem."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from lakefresh.lakehouse.jvm import java_class

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
        self._conf: Any = spark.sparkContext._jsc.hadoopConfiguration()

    def _fs(self, path: str) -> tuple[Any, Any]:
        jpath = java_class(self.spark, "org.apache.hadoop.fs.Path")(path)
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

    def copy(self, source: str, target: str) -> None:
        """Copy a file (any file system Hadoop reads) to `target`, replacing it, folders made."""
        src_fs, src = self._fs(source)
        dst_fs, dst = self._fs(target)
        dst_fs.mkdirs(dst.getParent())
        java_class(self.spark, "org.apache.hadoop.fs.FileUtil").copy(
            src_fs, src, dst_fs, dst, False, True, self._conf
        )

    def size(self, path: str) -> int:
        """A file's size in bytes."""
        fs, jpath = self._fs(path)
        return int(fs.getFileStatus(jpath).getLen())

    def uri(self, path: str) -> str:
        """The path as a URI, as Spark's `_metadata.file_path` spells it (`file:/a%20b.csv`)."""
        return str(java_class(self.spark, "org.apache.hadoop.fs.Path")(path).toUri().toString())

    @contextmanager
    def chunks(self, path: str, size: int = 1 << 20) -> Iterator[Iterator[bytes]]:
        """A file's bytes, in chunks, decompressed as Spark reads it (by its extension: `.gz`,
        `.bz2`...), never whole in memory. A local uncompressed file is read directly; any other
        is first copied by the JVM into a local temporary file, removed afterwards (the bridge
        between Python and the JVM moves bytes at about 10 MB/s; the copy runs at network speed)."""
        fs, jpath = self._fs(path)
        codecs = java_class(self.spark, "org.apache.hadoop.io.compress.CompressionCodecFactory")
        codec = codecs(self._conf).getCodec(jpath)
        if codec is None and str(fs.getUri().getScheme()) == "file":
            with open(str(jpath.toUri().getPath()), "rb") as local:
                yield iter(partial(local.read, size), b"")
            return
        handle, copy = tempfile.mkstemp(prefix="lakefresh-", suffix=".part")
        os.close(handle)
        try:
            stream = fs.open(jpath)
            try:
                if codec is not None:
                    stream = codec.createInputStream(stream)
                out = java_class(self.spark, "java.io.FileOutputStream")(copy)
                try:
                    java_class(self.spark, "org.apache.commons.io.IOUtils").copyLarge(stream, out)
                finally:
                    out.close()
            finally:
                stream.close()
            with open(copy, "rb") as local:
                yield iter(partial(local.read, size), b"")
        finally:
            os.unlink(copy)

    def read_text(self, path: str, encoding: str = "UTF-8") -> str:
        """A whole (small) file as text: a manifest, a marker."""
        fs, jpath = self._fs(path)
        stream = fs.open(jpath)
        try:
            data = java_class(self.spark, "org.apache.commons.io.IOUtils").toString(stream, encoding)
            return str(data)
        finally:
            stream.close()
