"""A `files` source's listing: which batches its folder holds, in which order, with which
time (their files' newest modification time, or sources/batch_times.py), and what still waits
(a completion marker, a metadata file). A batch modified less than `min_file_age` ago is listed
as waiting (it may still be growing: as Apache NiFi's ListFile "Minimum File Age"); the runner
takes the batches before it (sources/base.py `ready`)."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from lakefresh.clock import utc_now
from lakefresh.errors import SourceError
from lakefresh.sources.base import BatchRef
from lakefresh.sources.batch_times import metadata_name, time_from_metadata, time_from_name, version_of

if TYPE_CHECKING:
    from datetime import datetime

    from lakefresh.config.sources import FilesSourceConfig
    from lakefresh.lakehouse.storage import FileEntry, Storage


@dataclass(frozen=True)
class Metadata:
    """A batch's metadata file (batch_time.metadata): where it is, and whether it is there."""

    path: str
    exists: bool


class Listing:
    """Lists a `files` source's folder."""

    def __init__(self, config: FilesSourceConfig, storage: Storage, path: str) -> None:
        self.config = config
        self.storage = storage
        self.path = path

    def batches(self) -> list[BatchRef]:
        """Every batch the folder holds that is complete, in order; one whose newest file (a
        folder of none: the folder) was modified within `min_file_age` says that it waits
        (BatchRef.waits)."""
        if not self.storage.exists(self.path):
            raise SourceError(f"source folder {self.path} does not exist")
        from datetime import timedelta

        age = self.config.min_file_age
        since = utc_now() - timedelta(seconds=age) if age else None
        refs = []
        for batch_id, files, metadata, modified in self.candidates():
            if metadata is None or metadata.exists:
                ref = self.ref(batch_id, files, metadata)
                newest = max((f.modified for f in files), default=modified)  # no file: the folder's
                if since is not None and newest > since:
                    ref = replace(
                        ref, waits=f"modified less than min_file_age ({age:g} s) ago: may still be written"
                    )
                refs.append(ref)
        return sorted(refs, key=lambda r: r.order_key)

    def candidates(self) -> list[tuple[str, list[FileEntry], Metadata | None, datetime]]:
        """Every batch the folder holds (complete or not), with its metadata file, if any, and
        its entry's modification time (a folder's own, for a folder batch of no files yet)."""
        listed = self.storage.list(self.path)
        entries = [e for e in listed if not hidden(e.name)]
        timed = self.config.batch_time
        meta = timed is not None and timed.metadata is not None
        out = []
        if self.config.layout == "file":
            names = {e.name for e in listed}  # a metadata file may be named like a hidden one
            files = [e for e in entries if not e.is_dir and fnmatch.fnmatch(e.name, self.config.file_pattern)]
            metadata = {f.name: metadata_name(timed, f.name) for f in files} if meta and timed else {}
            taken = set(metadata.values())
            for entry in files:
                if entry.name in taken:
                    continue  # a batch's metadata file is never a batch
                found = None
                if entry.name in metadata:
                    name = metadata[entry.name]
                    found = Metadata(f"{self.path.rstrip('/')}/{name}", name in names)
                out.append((entry.name, [entry], found, entry.modified))
            return out
        marker = self.config.completion_marker
        for entry in entries:
            if not entry.is_dir:
                continue
            children = self.storage.list(entry.path)
            if marker and not any(c.name == marker for c in children):
                continue  # still being written
            meta_file = metadata_name(timed, entry.name) if meta and timed else None
            files = [
                c
                for c in children
                if not c.is_dir
                and not hidden(c.name)
                and c.name != meta_file
                and fnmatch.fnmatch(c.name, self.config.file_pattern)
            ]
            found = None
            if meta_file is not None:
                found = Metadata(
                    f"{entry.path.rstrip('/')}/{meta_file}", any(c.name == meta_file for c in children)
                )
            out.append((entry.name, files, found, entry.modified))
        return out

    def waiting(self) -> list[tuple[str, str]]:
        """What the folder holds that is not listed as a batch yet, with the reason (`plan`)."""
        if not self.storage.exists(self.path):
            return []
        waiting: list[tuple[str, str]] = []
        timed = self.config.batch_time
        if timed is not None and timed.metadata is not None:  # else no batch waits for one
            waiting = [
                (batch_id, f"no metadata file {meta.path.rsplit('/', 1)[-1]!r} yet (batch_time.metadata)")
                for batch_id, _, meta, _ in self.candidates()
                if meta is not None and not meta.exists
            ]
        marker = self.config.completion_marker
        if self.config.layout == "file" or not marker:
            return waiting
        return waiting + [
            (e.name, f"no completion marker {marker!r} yet: still being written")
            for e in self.storage.list(self.path)
            if e.is_dir
            and not hidden(e.name)
            and not any(c.name == marker for c in self.storage.list(e.path))
        ]

    def ref(self, batch_id: str, files: list[FileEntry], metadata: Metadata | None = None) -> BatchRef:
        newest = max((f.modified for f in files), default=None)
        if newest is None:  # an empty folder batch: its own listing time
            newest = utc_now()
        timed = self.config.batch_time
        batch_time = newest
        if timed is not None and timed.name is not None:
            batch_time = time_from_name(batch_id, timed)
        elif timed is not None and metadata is not None:
            text = self.storage.read_text(metadata.path)
            batch_time = time_from_metadata(text, timed, f"batch {batch_id!r}, {metadata.path}")
        order: tuple[str, ...]
        by = self.config.order_by
        if by in ("modified", "batch_time"):
            at = newest if by == "modified" else batch_time
            order = (at.isoformat(), batch_id)
            position = f"{at.isoformat()} {batch_id}"
        elif by == "version":
            version = version_of(batch_id, str(self.config.version))
            order = (f"{version:020d}", batch_id)
            position = f"{version} {batch_id}"
        else:
            order = (batch_id,)
            position = batch_id
        paths = tuple(f.path for f in files)
        return BatchRef(
            batch_id=batch_id,
            position=position,
            order_key=order,
            batch_time=batch_time,
            files=paths,
            replay={"kind": "files", "files": list(paths)},
        )


def hidden(name: str) -> bool:
    return name.startswith((".", "_"))
