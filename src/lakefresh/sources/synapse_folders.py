"""The listing of a `synapse_link` source: which of the export's timestamped folders are complete
batches of its entity, in order, and which wait (the module's doc of sources/synapse_link.py says
what makes a folder complete). Through any :class:`~lakefresh.lakehouse.storage.Storage`, and the
target's lineage as a callable, so it lists the same batches with or without Spark."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from lakefresh.errors import SourceError
from lakefresh.sources.base import BatchRef

if TYPE_CHECKING:
    from lakefresh.config.sources import SynapseLinkSourceConfig
    from lakefresh.lakehouse.storage import Storage

FOLDER_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}\.\d{2}\.\d{2}Z$")
FOLDER_TIME = "%Y-%m-%dT%H.%M.%SZ"
CHANGELOG = "Changelog/changelog.info"
MODEL = "model.json"
DELETES_FILE = "1.csv"
BACKFILL = "backfill@"


def folder_time(name: str) -> datetime:
    """The UTC time (naive) a folder's name stands for."""
    return datetime.strptime(name, FOLDER_TIME)


def folder_name(time: datetime) -> str:
    return time.strftime(FOLDER_TIME)


def covered_until(batch_ids: Iterable[str]) -> str | None:
    """The newest folder that published batches cover: a folder's own name, or a backfill's
    last folder; None when none."""
    newest = None
    for batch_id in batch_ids:
        text = str(batch_id)
        last = text.rsplit("..", 1)[-1] if text.startswith(BACKFILL) else text
        if FOLDER_NAME.match(last) and (newest is None or last > newest):
            newest = last
    return newest


class SynapseFolders:
    """Lists one entity's batches in a Synapse Link export at `root`; `published` gives the
    batches the target's lineage holds (none while the target does not exist)."""

    def __init__(
        self,
        config: SynapseLinkSourceConfig,
        storage: Storage,
        root: str,
        published: Callable[[], dict[str, int]],
    ) -> None:
        self.config = config
        self.storage = storage
        self.root = root
        self.published = published

    def batches(self) -> list[BatchRef]:
        """The batches the export holds for the entity, in order (the module's doc of
        sources/synapse_link.py)."""
        current = self._current()
        if self.config.mode == "backfill":
            return self._backfill(self._complete_folders(current, after=None))
        applied = self.published()
        covered = covered_until(applied)
        folders = self._complete_folders(current, after=covered)
        window_start = folder_time(current) - timedelta(seconds=self.config.look_back_interval)
        refs, missed = [], []
        for folder in folders:
            if covered is not None and folder <= covered:
                continue  # taken (exactly-once skips those in the lineage; older ones were before it)
            files = self._entity_files(folder)
            if not files:
                continue
            if folder_time(folder) < window_start:
                missed.append(folder)
            else:
                refs.append(self._ref(folder, [folder], files))
        if missed:
            since = f"its last folder is {covered}" if covered else "it has taken no folder yet"
            raise SourceError(
                f"{len(missed)} folder(s) of {self.config.entity} ({missed[0]} .. {missed[-1]}) are "
                f"older than the look-back window (from {folder_name(window_start)}) and the target "
                f"has not taken them ({since}); nothing was skipped. Load them once with `lakefresh "
                "backfill PIPELINE --table TABLE`, or widen look_back_interval."
            )
        return refs

    def _backfill(self, folders: list[str]) -> list[BatchRef]:
        start = self.config.backfill_start_date
        chosen = [f for f in folders if start is None or folder_time(f) >= start]
        with_files = [(f, self._entity_files(f)) for f in chosen]
        with_files = [(f, files) for f, files in with_files if files]
        if not with_files:
            return []
        names = [f for f, _ in with_files]
        files = [path for _, paths in with_files for path in paths]
        ref = self._ref(f"{BACKFILL}{names[0]}..{names[-1]}", names, files)
        ref.replay["backfill"] = self.config.backfill_behavior
        return [ref]

    def _ref(self, batch_id: str, folders: list[str], files: list[str]) -> BatchRef:
        return BatchRef(
            batch_id=batch_id,
            position=folders[-1],
            order_key=(folders[-1],),
            batch_time=folder_time(folders[-1]),
            files=tuple(files),
            replay={"kind": "synapse_link", "entity": self.config.entity, "folders": folders},
        )

    def _current(self) -> str:
        if not self.storage.exists(self.root):
            raise SourceError(f"Synapse Link export {self.root} does not exist")
        path = f"{self.root}/{CHANGELOG}"
        if not self.storage.exists(path):
            raise SourceError(f"{self.root} is not a Synapse Link export: {CHANGELOG} is missing")
        current = self.storage.read_text(path).strip()
        if not FOLDER_NAME.match(current):
            raise SourceError(f"{path} names {current!r}, not a folder like 2025-01-01T10.00.00Z")
        return current

    def waiting(self) -> list[tuple[str, str]]:
        """Folders not listed as batches yet, with the reason (`plan`)."""
        current = self._current()
        folders = sorted(
            e.name for e in self.storage.list(self.root) if e.is_dir and FOLDER_NAME.match(e.name)
        )
        out = [
            (f, "may still be written (the newest folder)")
            for f in folders
            if f == folders[-1] or f >= current
        ]
        out += [
            (f, f"finished, but without its {MODEL} yet")
            for f in folders[:-1]
            if f < current and not self.storage.exists(f"{self.root}/{f}/{MODEL}") and self._entity_files(f)
        ]
        return out

    def _complete_folders(self, current: str, after: str | None) -> list[str]:
        """Timestamped folders after `after` that Synapse has finished (older than `current`, the
        one changelog.info names, and holding their model.json), oldest first.

        A finished folder with files of the entity but no model.json (Synapse writes it last)
        stops the list there: the folders after it wait for it, since taking them first would
        cover it and skip it for good. After `model_grace_period` it is reported."""
        entries = self.storage.list(self.root)
        folders = sorted(e.name for e in entries if e.is_dir and FOLDER_NAME.match(e.name))
        done = [f for f in folders[:-1] if f < current and (after is None or f > after)]
        complete = []
        for folder in done:  # the newest folder above may still be written
            if self.storage.exists(f"{self.root}/{folder}/{MODEL}"):
                complete.append(folder)
            elif self._entity_files(folder):
                self._await_model(folder, current)
                break
        return complete

    def _await_model(self, folder: str, current: str) -> None:
        waited = folder_time(current) - folder_time(folder)
        grace = timedelta(seconds=self.config.model_grace_period)
        if waited > grace:
            raise SourceError(
                f"folder {folder} holds files of {self.config.entity} but no {MODEL}, {waited} "
                f"after it (model_grace_period is {grace}); it and the folders after it were not "
                f"taken, so that nothing is skipped. Put its {MODEL} back (a copy of the next "
                "folder's fits when the entity's columns did not change), or move the folder out "
                "of the export to leave its rows out for good."
            )

    def _entity_files(self, folder: str) -> list[str]:
        """The entity's CSV files in a folder, deletes (1.csv) last."""
        path = f"{self.root}/{folder}/{self.config.entity}"
        if not self.storage.exists(path):
            return []
        files = [e for e in self.storage.list(path) if not e.is_dir and e.name.endswith(".csv")]
        files.sort(key=lambda e: (e.name == DELETES_FILE, e.name))
        return [e.path for e in files]
