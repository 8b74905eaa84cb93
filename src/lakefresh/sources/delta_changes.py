"""Source `delta_changes`: a Delta table's change data feed between versions, with a load log.

The Delta counterpart of `table_changes` (sources/table_changes.py), whose load log, fixed ends,
retried loads, dedupe and deletes it shares, for any Delta table by its location (one lakefresh
writes, or anyone else's):

- a *load* reads the change data feed after a start version (exclusive) up to an end version
  (inclusive), fixed when the load is listed: a commit to the source while the load runs waits
  for the next load;
- the first load starts at the table's latest beginning: its creation, its latest `TRUNCATE` or
  `REPLACE`, or the commit that turned its change data feed on, whichever is newest (the feed
  has nothing before it);
- `load_id` names the reader in the `loads` log, so several pipelines read one table on their own;
- a DELETE change deletes its key in a `key` or `scd2` target; `dedupe` keeps each key's last
  change of a load.

A load that cannot be read fails naming why and the way out, and nothing is taken: its start
version left the table's log (`delta.logRetentionDuration`), a `RESTORE` took the table below it,
the feed was off for some of its versions, or `VACUUM` removed the files of its versions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakefresh.config.sources import DeltaChangesSourceConfig
from lakefresh.errors import SourceError
from lakefresh.lakehouse.checkpoints import held
from lakefresh.lakehouse.delta.log import history, lineage
from lakefresh.lakehouse.delta.sql import delta_backend
from lakefresh.lakehouse.failures import describe
from lakefresh.sources.table_changes import TableChangesSource

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from lakefresh.lakehouse.backend import TableBackend
    from lakefresh.lakehouse.delta.log import Version
    from lakefresh.state.loads import Load

# Commits before which a table's change data feed has nothing to say.
BEGINNINGS = (
    "CREATE TABLE",
    "CREATE TABLE AS SELECT",
    "REPLACE TABLE",
    "REPLACE TABLE AS SELECT",
    "CREATE OR REPLACE TABLE",
    "CREATE OR REPLACE TABLE AS SELECT",
    "TRUNCATE",
)
FEED_PROPERTY = "delta.enableChangeDataFeed"


def first_start_in(entries: list[Version]) -> int | None:
    """Where a reader's first load starts (exclusive; None: version 0): before the table's
    latest beginning (creation, TRUNCATE, REPLACE, or the change data feed turned on) in its
    lineage (`entries`, newest first)."""
    for entry in entries:
        turned_on = entry.operation == "SET TBLPROPERTIES" and (
            f'"{FEED_PROPERTY}":"true"' in (entry.parameters.get("properties") or "").replace(" ", "")
        )
        if entry.operation in BEGINNINGS or turned_on:
            return entry.version - 1 if entry.version > 0 else None
    return None


class DeltaChangesSource(TableChangesSource):
    kind = "delta_changes"
    config_type = DeltaChangesSourceConfig

    def _feed(self) -> tuple[str, TableBackend]:
        assert isinstance(self.config, DeltaChangesSourceConfig)
        return self.ctx.resolve(self.config.path), delta_backend(self.ctx.backend.spark, "")

    def first_start(self) -> int | None:
        return first_start_in(lineage(history(self.feed.spark, self.feed.qualified(self.table))))

    def changes(self, load: Load) -> DataFrame:
        """The load's changes, read once here, so that a feed that cannot be read fails the
        read with its reason (Spark would otherwise fail later, in the middle of a step)."""
        start, end = load.start_snapshot_id, load.end_snapshot_id
        shown = f"versions {0 if start is None else start + 1}..{end} of the Delta table {self.table}"
        try:
            return held(super().changes(load).localCheckpoint(eager=True))
        except Exception as exc:
            text = describe(exc)
            if "DELTA_MISSING_CHANGE_DATA" in text or "change data was not recorded" in text.lower():
                why = "its change data feed was off for some of them (delta.enableChangeDataFeed)"
            elif any(k in text for k in ("FileNotFound", "FILE_NOT_EXIST", "does not exist")):
                why = "VACUUM removed files they need"
            else:
                raise
            raise SourceError(
                f"cannot read {shown} for load {self.load_id!r}: {why}. Nothing was taken. "
                "Reload the target in full from the table, then restart the load log after its "
                f"current version: lakefresh reset-load PIPELINE TABLE ({text})"
            ) from exc
