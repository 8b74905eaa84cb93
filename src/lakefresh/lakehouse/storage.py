"""Files on any storage Spark can reach (local, HDFS, S3, ABFS...): what lakefresh lists and reads
of its sources itself (folders, manifests, a file's bytes to scan).

In a classic session through Hadoop's FileSystem in the driver's JVM, so the pipeline's storage
settings (S3's endpoint and keys) apply as they do to Spark's reads. A Spark Connect client has
no JVM: there, through Arrow's file systems on this side (`pyarrow.fs`, which pyspark's connect
extra brings), which read local paths and S3 (its settings from the environment: AWS_ENDPOINT_URL,
AWS_ACCESS_KEY_ID...), GCS, HDFS and ABFS, so the client must reach the source folders too.
`storage_for` chooses by the session's kind."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote

from lakefresh.lakehouse.connect import is_connect
from lakefresh.lakehouse.jvm import java_class

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class FileEntry:
    path: str  # fully qualified URI, as Spark reads it
    name: str
    is_dir: bool
    size: int  # a file's (a folder's is whatever its file system says)
    modified: datetime  # UTC, naive


class Storage(Protocol):
    """What lakefresh does with files (both roads below)."""

    def exists(self, path: str) -> bool: ...

    def list(self, path: str) -> list[FileEntry]:
        """A folder's entries, by name."""
        ...

    def copy(self, source: str, target: str) -> None: ...

    def size(self, path: str) -> int: ...

    def modified_millis(self, path: str) -> int: ...

    def uri(self, path: str) -> str: ...

    def chunks(
        self, path: str, size: int = 1 << 20
    ) -> contextlib.AbstractContextManager[Iterator[bytes]]: ...

    def read_text(self, path: str, encoding: str = "UTF-8") -> str: ...


def storage_for(spark: SparkSession) -> Storage:
    """The session's road to files: Hadoop's in a classic session, Arrow's under Spark Connect."""
    return ArrowStorage() if is_connect(spark) else HadoopStorage(spark)


class HadoopStorage:
    """Files through Hadoop's FileSystem in the driver's JVM."""

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

    def modified_millis(self, path: str) -> int:
        """A file's modification time, Unix milliseconds, as the file system keeps it."""
        fs, jpath = self._fs(path)
        return int(fs.getFileStatus(jpath).getModificationTime())

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


# Hadoop's object-store schemes as Arrow's file systems and delta-rs spell them
_ARROW_SCHEMES = {"s3a": "s3", "s3n": "s3"}


def local_path(location: str) -> str | None:
    """`location` as a path of this machine's file system when it is one (a plain path, or Hadoop's
    `file:/a/b` or `file:///a/b`); None for any other URI (an object store's)."""
    scheme, sep, rest = location.partition("://")
    if not sep:
        return location.removeprefix("file:")
    if scheme == "file":
        return "/" + rest.lstrip("/")
    return None


def arrow_uri(location: str) -> str:
    """`location` as Arrow's file systems and delta-rs read it: a local path as a path, Hadoop's
    `s3a://` as `s3://`, any other URI (`abfss://`, `gs://`) as it is."""
    local = local_path(location)
    if local is not None:
        return local
    scheme, _, rest = location.partition("://")
    return f"{_ARROW_SCHEMES.get(scheme, scheme)}://{rest}"


class ArrowStorage:
    """Files through Arrow's file systems, on this side (a Spark Connect client's road). Paths and
    URIs are spelled as Hadoop spells them (`file:/a/b.csv`; `s3a://bucket/key` as given), so a
    batch lists the same files, with the same names, on either road."""

    def _fs(self, path: str) -> tuple[Any, str, str]:
        """Arrow's file system for `path`, the path inside it, and the prefix Hadoop writes
        before it (`file:`, `s3a://`...)."""
        from pyarrow import fs

        local = local_path(path)
        if local is not None:
            return fs.LocalFileSystem(), os.path.abspath(local), "file:"
        found, inside = fs.FileSystem.from_uri(arrow_uri(path))
        return found, inside, path.partition("://")[0] + "://"

    def exists(self, path: str) -> bool:
        from pyarrow import fs

        found, inside, _ = self._fs(path)
        return bool(found.get_file_info(inside).type != fs.FileType.NotFound)

    def list(self, path: str) -> list[FileEntry]:
        from pyarrow import fs

        found, inside, prefix = self._fs(path)
        out = []
        for info in found.get_file_info(fs.FileSelector(inside, allow_not_found=False)):
            modified = info.mtime.astimezone(UTC).replace(tzinfo=None) if info.mtime else datetime(1970, 1, 1)
            out.append(
                FileEntry(
                    path=prefix + info.path,
                    name=info.base_name,
                    is_dir=info.type == fs.FileType.Directory,
                    size=int(info.size or 0),
                    modified=modified.replace(microsecond=modified.microsecond // 1000 * 1000),
                )
            )
        return sorted(out, key=lambda e: e.name)

    def copy(self, source: str, target: str) -> None:
        src_fs, src, _ = self._fs(source)
        dst_fs, dst, _ = self._fs(target)
        dst_fs.create_dir(os.path.dirname(dst), recursive=True)
        with src_fs.open_input_stream(src) as read, dst_fs.open_output_stream(dst) as write:
            for chunk in iter(partial(read.read, 1 << 20), b""):
                write.write(chunk)

    def size(self, path: str) -> int:
        found, inside, _ = self._fs(path)
        return int(found.get_file_info(inside).size or 0)

    def modified_millis(self, path: str) -> int:
        """A file's modification time, Unix milliseconds (as Hadoop's file systems give it)."""
        from pyarrow import fs

        found, inside, _ = self._fs(path)
        info = found.get_file_info(inside)
        if info.type == fs.FileType.NotFound:
            raise FileNotFoundError(path)
        return int(info.mtime_ns // 1_000_000)

    def uri(self, path: str) -> str:
        """As Hadoop's `Path.toUri()` writes it: characters a URI path cannot hold escaped."""
        _, inside, prefix = self._fs(path)
        return prefix + quote(inside, safe="/;:@&=+$,!~*'()")

    @contextmanager
    def chunks(self, path: str, size: int = 1 << 20) -> Iterator[Iterator[bytes]]:
        """A file's bytes, in chunks, decompressed by its extension as Spark reads it."""
        found, inside, _ = self._fs(path)
        with found.open_input_stream(inside, compression="detect") as stream:
            yield iter(partial(stream.read, size), b"")

    def read_text(self, path: str, encoding: str = "UTF-8") -> str:
        found, inside, _ = self._fs(path)
        with found.open_input_stream(inside) as stream:
            return bytes(stream.read()).decode(encoding)

    def remove_folder(self, path: str) -> None:
        """A folder removed with all it holds (nothing when there is none): a Delta table dropped
        on this road (lakehouse/delta/sql.py)."""
        from pyarrow import fs

        found, inside, _ = self._fs(path)
        if found.get_file_info(inside).type != fs.FileType.NotFound:
            found.delete_dir(inside)
