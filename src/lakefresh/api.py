"""The Python API: load a pipeline, run it, inspect its state.

import lakefresh
pipeline = lakefresh.load_pipeline("examples/orders/pipeline.yml")
result = pipeline.run()              # RunResult: per table, per batch counts
pipeline.status()                    # where each table stands
pipeline.history("customers")        # its batches with counts
pipeline.table("customers").show()   # the target, as a Spark DataFrame
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from lakefresh.config.checks import check_table_names
from lakefresh.config.loader import load_config
from lakefresh.config.models import PipelineConfig, TableConfig, check_rebuild
from lakefresh.config.sources import SynapseLinkSourceConfig
from lakefresh.console import Console, LoggedConsole, SilentConsole, default_console, describe_refresh
from lakefresh.errors import ConfigError, LakefreshError, StateError
from lakefresh.lakehouse.failures import describe
from lakefresh.lakehouse.native import NativeTables, NotNative
from lakefresh.lakehouse.session import build_session, check_sql_text, resolve_warehouse, spark_settings
from lakefresh.lakehouse.table_rows import SparkTables
from lakefresh.results import RunResult, TableFreshness, TableResult, TableStatus
from lakefresh.state.control import ControlTables
from lakefresh.state.leases import Holder, Lease, Leases
from lakefresh.state.standing import read_status
from lakefresh.state.views import ControlView

# The runner, the writing verbs, the sources and the format backends are imported where they are
# used: a read that needs no JVM (`status`, `history`, `quarantine`, `freshness`, `report`,
# `plan`) loads none of the runner, the writing verbs and the format backends.
if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from lakefresh.lakehouse.backend import TableBackend
    from lakefresh.run.runner import Runner
    from lakefresh.sources import SourceContext
    from lakefresh.verbs import (
        AdoptResult,
        MaintainResult,
        PlanResult,
        RebuildResult,
        ReplayResult,
        RollbackResult,
    )
    from lakefresh.verbs.common import VerbContext
    from lakefresh.verbs.rebuild import Verb

log = logging.getLogger(__name__)
T = TypeVar("T")


class Pipeline:
    """A validated pipeline file; Spark starts on first use, not on load."""

    def __init__(
        self,
        config: PipelineConfig,
        base_dir: Path,
        path: Path | None = None,
        spark: SparkSession | None = None,
        console: Console | None = None,
    ) -> None:
        self.config = config
        self.base_dir = base_dir
        self.path = path
        self.console: Console = LoggedConsole(console or SilentConsole())
        self._spark = spark
        self._holding: set[str] = set()  # the tables this pipeline's lease holds now
        if spark is not None:
            check_sql_text(spark)

    # --- Spark and state ---------------------------------------------------------------------

    def spark_settings(self, archive: bool = True) -> dict[str, str]:
        """Every Spark setting the session is built with (computed without a JVM); without
        `archive`, none that names this machine's class archive (for a driver elsewhere)."""
        config = self.config
        return spark_settings(
            config.catalog,
            config.spark,
            self.base_dir,
            delta=config.uses_delta(),
            iceberg=config.uses_iceberg(),
            archive=archive,
            storage=config.storage,
        )

    @property
    def spark(self) -> SparkSession:
        if self._spark is None:
            self._spark = build_session(self.spark_settings())
        return self._spark

    @cached_property
    def backend(self) -> TableBackend:
        """The table format's backend: built here only; everything else is typed against the
        protocol. Delta targets (`format: delta`) go to a Delta backend beside the catalog's
        Iceberg one, and so do the control tables with `control_format: delta`; with no Iceberg
        table at all, the Delta backend is the only one."""
        from lakefresh.lakehouse.delta.sql import delta_backend
        from lakefresh.lakehouse.formats import ByTable
        from lakefresh.lakehouse.iceberg.sql import iceberg_backend

        config = self.config
        if not config.uses_delta():
            return iceberg_backend(self.spark, config.catalog.name)
        root = resolve_warehouse(config.catalog, self.base_dir)
        if root is None:
            raise ConfigError("Delta tables live under the catalog's warehouse: set catalog.warehouse")
        delta = delta_backend(self.spark, root)
        if not config.uses_iceberg():
            return delta
        control = {config.catalog.control_namespace} if config.catalog.control_format == "delta" else set()
        return ByTable(
            iceberg_backend(self.spark, config.catalog.name), delta, config.delta_tables(), control
        )

    @cached_property
    def control(self) -> ControlTables:
        return ControlTables(self.backend, self.config.catalog.control_namespace)

    @property
    def _verbs(self) -> VerbContext:
        """What the verbs work with (verbs/common.py)."""
        from lakefresh.verbs.common import VerbContext

        return VerbContext(self.config, self.backend, self.control, str(self.base_dir))

    @cached_property
    def leases(self) -> Leases:
        return Leases(self.backend, self.config.catalog.control_namespace)

    @contextlib.contextmanager
    def lease(
        self,
        tables: list[str] | None,
        command: str,
        wait: float | None = None,
        stop: threading.Event | None = None,
    ) -> Iterator[None]:
        """Hold the lease on these tables (names as in the pipeline; None: all of them) while
        the block runs: LeaseHeld if another run holds one of them (after waiting up to `wait`
        seconds for it, when given). Renewed while held; when it is lost (the process stalled
        past its time to live and another run took a table over), `stop` is set. Nothing is
        taken with `run.lease: false`, or for tables this pipeline already holds."""
        chosen = tables or [t.name for t in self.config.tables]
        names = [self.config.qualified(self._table(t)) for t in chosen]
        if not self.config.run.lease or set(names) <= self._holding:
            yield
            return
        holder = Holder.this_process(str(self.path) if self.path else None, command)

        def lost(_tables: list[str]) -> None:
            if stop is not None:
                stop.set()

        ttl = self.config.run.lease_ttl
        with Lease(self.leases, names, holder, ttl, wait, self.console.message, lost, stop):
            self._holding = set(names)
            try:
                yield
            finally:
                self._holding = set()

    def _table(self, name: str) -> TableConfig:
        for table in self.config.tables:
            if name in (table.name, self.config.qualified(table)):
                return table
        raise ConfigError(f"unknown table {name!r}; tables: {[t.name for t in self.config.tables]}")

    # --- operations --------------------------------------------------------------------------

    def run(
        self,
        tables: list[str] | None = None,
        stop: threading.Event | None = None,
        rolled_back: str | None = None,
        skip_batches: list[str] | None = None,
        accept_config_change: bool = False,
        full_refresh: list[str] | None = None,
        wait: float | None = None,
    ) -> RunResult:
        """Apply every new batch of every table (or of `tables`), each exactly once. When `stop`
        is set, the run ends after the batch in progress. `rolled_back` settles published
        batches that a rollback of their target removed: `forget` or `reapply` them.
        `skip_batches` (with one table) are waiting batches never to take, e.g. a refused one.
        `accept_config_change` applies a changed configuration to the new batches only.
        `full_refresh` tables (and their `<t>_history`) are first rebuilt from every batch their
        sources hold, under today's configuration, in one commit each (see `verbs/rebuild.py`).
        The run holds the lease on its tables (see `lease`): LeaseHeld, before anything is read,
        when another run holds one, unless it ends within `wait` seconds."""
        if tables:
            check_table_names(self.config.tables, tables)  # before Spark starts
            if not skip_batches:  # a skip names one table's batches: not its history's
                tables = self._with_history(tables)
        before = self._full_refresh(full_refresh, tables) if full_refresh else None
        stop = stop or threading.Event()  # a lost lease stops the run after its current batch
        with self.lease(tables, "run", wait, stop):
            return self._run(tables, stop, rolled_back, skip_batches, accept_config_change, before)

    def _run(
        self,
        tables: list[str] | None,
        stop: threading.Event,
        rolled_back: str | None,
        skip_batches: list[str] | None,
        accept_config_change: bool,
        before: Callable[[TableConfig, TableResult], None] | None = None,
    ) -> RunResult:
        from lakefresh.verbs import maintain
        from lakefresh.verbs.maintain import compaction_due

        runner = self._runner(self.config)
        result = runner.run(tables, stop, rolled_back, skip_batches, accept_config_change, before)
        if stop.is_set():  # asked to stop: upkeep waits for the next run
            return result
        took = [  # upkeep after the run, for tables that took batches
            self._table(t.table)
            for t in result.tables
            if t.ok and any(b.status == "published" for b in t.batches)
        ]
        due = [t for t in took if self.config.maintenance_for(t).after_runs]
        if due:
            maintain(self._verbs, due)
        compact = [t for t in took if t not in due and compaction_due(self.config, self.backend, t)]
        if compact:  # merge-on-read's delete files applied before readers pay much for them
            maintain(self._verbs, compact, only_compact=True)
        return result

    def _full_refresh(
        self, names: list[str], tables: list[str] | None
    ) -> Callable[[TableConfig, TableResult], None]:
        """What the run does first to each table to refresh in full; ConfigError, before Spark
        starts, for a table the run does not take or whose source does not keep its batches."""
        check_table_names(self.config.tables, names)
        wanted = set(self._with_history(names))
        if tables is not None and not wanted <= set(tables):
            missing = sorted(wanted - set(tables))
            raise ConfigError(f"a full refresh of {missing} needs them in the run's tables too")
        kept = [t for t in self.config.tables if t.name in wanted and not t.source.retains_batches]
        if kept:
            shown = ", ".join(f"{t.name!r} ({t.source.kind})" for t in kept)
            raise ConfigError(
                f"cannot refresh {shown} in full: their sources do not keep their batches, so they "
                "cannot be read again (a change feed starts again with lakefresh reset-load). "
                "Nothing was changed"
            )

        def refresh(table: TableConfig, outcome: TableResult) -> None:
            if table.name not in wanted:
                return
            done = self._rebuild(table.name, "refresh", [])
            outcome.batches += done.reloaded
            outcome.refreshed = {
                "batches": done.applied.get(table.name, []),
                "rows": done.rows.get(table.name, 0),
                "new_version": done.new_version.get(table.name, False),
                "dropped": done.dropped.get(table.name, []),
            }
            self.console.message(describe_refresh(table.name, outcome.refreshed))

        return refresh

    def _with_history(self, tables: list[str]) -> list[str]:
        """These tables and the `<name>_history` tables their `history: true` brings: a table's
        history is refreshed (and planned) with it."""
        brought = [
            f"{t.name}_history" for t in self.config.tables if t.name in tables and t.strategy.keeps_history()
        ]
        return [*tables, *[b for b in brought if b not in tables]]

    def maintain(self, tables: list[str] | None = None) -> MaintainResult:
        """Compact, expire old versions and remove orphan files of every target (or of `tables`),
        by each table's maintenance policy, keeping what downstream change-feed readers need."""
        from lakefresh.verbs import maintain

        if tables:
            check_table_names(self.config.tables, tables)
        chosen = [t for t in self.config.tables if not tables or t.name in tables]
        with self.lease([t.name for t in chosen], "maintain"):
            return maintain(self._verbs, chosen)

    def rollback(self, table: str, to_batch: str) -> RollbackResult:
        """Undo the batches published after `to_batch` in one commit (Iceberg's rollback; also
        in the table's `<t>_history`); they are recorded as `unloaded` and never taken again.
        Refused, changing nothing, when a commit after it was not a lakefresh batch."""
        from lakefresh.verbs import roll_back

        config = self._table(table)
        with self.lease(self._with_history([config.name]), "rollback"):
            return roll_back(self._verbs, config, to_batch, self._hint())

    def adopt(self, table: str) -> AdoptResult:
        """Make the table another tool wrote at `table`'s target name (a dbt snapshot, an Open
        Data Fabric log, a plain table) lakefresh's, in one commit: its layout and rows checked,
        lakefresh's system columns added, and a first `batches` record (`lakefresh:adopt:<id>`);
        runs continue it from then on. Refused, changing nothing, when lakefresh could not
        continue it exactly (verbs/adopt.py)."""
        from lakefresh.verbs import adopt

        config = self._table(table)
        with self.lease([config.name], "adopt"):
            return adopt(self._verbs, config)

    def replay(self, table: str, batch: str, fixed: str | Path) -> ReplayResult:
        """Apply a corrected file of batch `batch`'s quarantined rows as a new batch linked to it
        (`<batch>#replay-<n>`); its quarantine rows are then marked resolved."""
        from lakefresh.verbs import replay

        config = self._table(table)
        path = str(fixed) if "://" in str(fixed) else str(Path(fixed).resolve())
        runner = self._runner(self.config)
        with self.lease([config.name], "replay"):
            return replay(self._verbs, config, batch, path, runner.apply_batch)

    def report(self, path: str | Path = "report.html") -> Path:
        """Write the pipeline's report, one self-contained HTML file with a section per table
        (status codes, rows, rule violations and seconds per phase of every batch; batches
        waiting); returns its path."""
        from lakefresh.strategies import status_codes
        from lakefresh.verbs.report import render, table_report

        by_kind = status_codes()
        codes = {t.name: by_kind.get(t.strategy.kind, {}) for t in self.config.tables}
        namespace = self.config.catalog.control_namespace

        def read(tables: NativeTables) -> list[tuple[TableStatus, list[dict[str, Any]]]]:
            view = ControlView(tables, namespace)
            return [(s, view.history(self._name(s.table))) for s in self._status_of(tables, True)]

        found = self._native(read)  # one reader for all of it: each table read once
        if found is None:
            found = [(s, self.history(s.table)) for s in self.status(pending=True)]
        tables = [table_report(status, history, codes.get(status.table, {})) for status, history in found]
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(render(self.path.name if self.path else "pipeline", tables), encoding="utf-8")
        return out

    def plan(self, tables: list[str] | None = None, read_batches: bool = False) -> PlanResult:
        """What the next run would take and do, per table (or for `tables`); writes nothing. No
        JVM starts where the tables and the sources allow it (`_native`); what that road cannot
        tell without reading the waiting batches' data it names in each table's `unknown`, and
        `read_batches` reads them through Spark instead (verbs/plan_reads.py)."""
        from lakefresh.verbs import plan
        from lakefresh.verbs.plan_reads import NativePlanReads, SparkPlanReads

        if tables:
            check_table_names(self.config.tables, tables)  # before Spark starts
            tables = self._with_history(tables)
        if not read_batches:
            base = str(self.base_dir)
            found = self._native(lambda native: plan(NativePlanReads(self.config, base, native), tables))
            if found is not None:
                return found
        return plan(SparkPlanReads(self._verbs), tables)

    def reset(self, table: str) -> RebuildResult:
        """Rebuild the table (and its `<t>_history`) from its retained raw batches with today's
        configuration, in one commit; refused, changing nothing, when a batch can no longer be
        read (a `jdbc` read, a change feed's load, a removed file)."""
        return self._rebuild(table, "reset", [])

    def unload(self, table: str, batches: list[str]) -> RebuildResult:
        """Make the table exactly what it would be had `batches` never been loaded, in one
        commit; they are recorded `unloaded` and never taken again (`reload` brings one back)."""
        return self._rebuild(table, "unload", batches)

    def reload(self, table: str, batches: list[str]) -> RebuildResult:
        """Apply `batches` again from their current content (a corrected file), each in its
        original place in the order, in one commit."""
        return self._rebuild(table, "reload", batches)

    def _rebuild(self, table: str, verb: Verb, batches: list[str]) -> RebuildResult:
        from lakefresh.verbs import rebuild

        config = self._table(table)
        with self.lease(self._with_history([config.name]), verb):
            done = rebuild(self._verbs, config, verb, batches, self._hint())
        done.also_in = self._also_loaded(config, batches)
        return done

    def _also_loaded(self, table: TableConfig, batches: list[str]) -> dict[str, list[str]]:
        """The other tables that read `table`'s source (the same location) and hold some of
        `batches`: an unload or a reload changes only its own table, and says where else."""
        where = table.source.location
        if not batches or where is None:
            return {}
        mine = {table.name, f"{table.name}_history"}
        out = {}
        for other in self.config.tables:
            if other.name in mine or other.source.location != where or other.source.kind != table.source.kind:
                continue
            held = {
                a.batch_id
                for a in self.control.attempts(self.config.qualified(other))
                if a.status == "published"
            }
            if found := [b for b in batches if b in held]:
                out[other.name] = found
        return out

    def _hint(self) -> str:
        if self.path:
            return f"lakefresh run {self.path} --table {{table}}"
        return "pipeline.run(tables=['{table}'])"

    def _runner(self, config: PipelineConfig) -> Runner:
        from lakefresh.run.runner import Runner

        return Runner(config, self.backend, self.control, str(self.base_dir), self.console, self._hint())

    def backfill(self, table: str, behavior: str | None = None, start: datetime | None = None) -> RunResult:
        """Load a `synapse_link` table's complete folders from its `backfill_start_date` (or
        `start`) as one batch: `overwrite` rebuilds the table from them and replaces it in one
        commit, `merge` merges them into it (default: the source's `backfill_behavior`). Running
        it again with no new folder does nothing; streaming goes on after its last folder."""
        config = self._table(table)
        if not isinstance(config.source, SynapseLinkSourceConfig):
            raise ConfigError(
                f"table {config.name!r} reads {config.source.kind!r}; backfill is for synapse_link "
                "sources (other sources take every batch they hold in a plain run)"
            )
        changes: dict[str, Any] = {"mode": "backfill"}
        if behavior is not None:
            changes["backfill_behavior"] = behavior
        if start is not None:
            changes["backfill_start_date"] = start
        source = config.source.model_validate({**config.source.model_dump(by_alias=True), **changes})
        backfill = config.model_copy(update={"source": source})
        if source.backfill_behavior == "overwrite":
            try:
                check_rebuild(backfill)
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
        tables = [backfill if t.name == config.name else t for t in self.config.tables]
        with self.lease([config.name], "backfill"):
            return self._runner(self.config.model_copy(update={"tables": tables})).run([config.name])

    def run_continuously(
        self,
        interval: float,
        tables: list[str] | None = None,
        stop: threading.Event | None = None,
        on_cycle: Callable[[RunResult], None] | None = None,
        wait: float | None = None,
    ) -> int:
        """Run every `interval` seconds (from the start of one cycle to the next; a cycle that
        takes longer is followed at once) until `stop` is set; a cycle in progress ends after
        its current batch. A failed table is retried in the next cycle. Returns the cycles run.
        The lease on the tables is held for the whole time (taken as `run` takes it)."""
        stop = stop or threading.Event()
        if tables:
            check_table_names(self.config.tables, tables)
            tables = self._with_history(tables)
        cycles = 0
        with self.lease(tables, "run --continuous", wait, stop):
            while not stop.is_set():
                started = time.monotonic()
                result = self.run(tables, stop)
                cycles += 1
                if on_cycle:
                    on_cycle(result)
                stop.wait(max(0.0, interval - (time.monotonic() - started)))
        return cycles

    def status(self, pending: bool = False) -> list[TableStatus]:
        """Per table: batches published, the last one and its position, rows, counts; with
        `pending`, how many batches its source holds that no run took yet. No JVM starts where
        the tables and the sources allow it (`_native`)."""
        found = self._native(lambda tables: self._status_of(tables, pending))
        if found is not None:
            return found
        from lakefresh.verbs.status import table_status

        return table_status(self._verbs, pending)

    def _status_of(self, tables: NativeTables, pending: bool) -> list[TableStatus]:
        """`status` read without a JVM (`_native`)."""
        namespace = self.config.catalog.control_namespace
        if not pending:
            return read_status(self.config, tables, namespace)
        from lakefresh.sources.native_listing import NativeListing
        from lakefresh.verbs.freshness import source_listing

        view = ControlView(tables, namespace)
        sources = NativeListing(self.config, str(self.base_dir), tables)

        def listing(table: TableConfig) -> tuple[int, int]:
            return source_listing(view, self.config.qualified(table), sources.batches(table))[1:]

        return read_status(self.config, tables, namespace, listing)

    def _native(self, read: Callable[[NativeTables], T]) -> T | None:
        """`read` over the tables read without a JVM (lakehouse/native.py): Iceberg tables of a
        hadoop catalog and Delta tables, in a local warehouse folder; and the sources listed so
        (sources/native_listing.py: folders on this machine). None, for the caller to take the
        Spark road, where they cannot be read so (NotNative, raised before anything is
        written) or the read failed; a LakefreshError (a control table of another state
        version, a source that cannot be listed) is an answer, and raised."""
        try:
            tables = NativeTables.of(self.config, resolve_warehouse(self.config.catalog, self.base_dir))
            found = read(tables)
            log.debug("read without a JVM (pyiceberg, deltalake)")
            return found
        except LakefreshError:
            raise
        except NotNative as exc:
            log.debug("reading through Spark: %s", exc)
        except Exception as exc:  # a table feature the native libraries do not read, anything else
            log.info("reading without a JVM failed, reading through Spark instead: %s", describe(exc))
        return None

    def _control_view(self) -> ControlView:
        """The control tables as rows, read through Spark (created when missing)."""
        self.control.ensure()
        return ControlView(SparkTables(self.backend), self.config.catalog.control_namespace)

    def freshness(self, tables: list[str] | None = None, now: datetime | None = None) -> list[TableFreshness]:
        """Per table (or for `tables`): when its newest batch was loaded and how long ago, its
        verdict against its `freshness` bounds (pass, warn, error; `none` without bounds), and
        for a source of files the newest batch it holds and how many wait. `now`: UTC. No JVM
        starts where the tables and the sources allow it (`_native`)."""
        from lakefresh.verbs.freshness import read_freshness, table_freshness

        if tables:
            check_table_names(self.config.tables, tables)  # before Spark starts
        chosen = [t for t in self.config.tables if not tables or t.name in tables]

        def read(native: NativeTables) -> list[TableFreshness]:
            from lakefresh.sources.native_listing import NativeListing

            view = ControlView(native, self.config.catalog.control_namespace)
            listed = NativeListing(self.config, str(self.base_dir), native).batches
            return read_freshness(self.config, view, chosen, listed, now)

        found = self._native(read)
        return found if found is not None else table_freshness(self._verbs, chosen, now)

    def _name(self, table: str) -> str:
        """A table's `namespace.table` name."""
        return self.config.qualified(self._table(table))

    def history(self, table: str) -> list[dict[str, Any]]:
        """The table's batches, one row per attempt, oldest first."""
        name = self._name(table)
        namespace = self.config.catalog.control_namespace
        found = self._native(lambda tables: ControlView(tables, namespace).history(name))
        return found if found is not None else self._control_view().history(name)

    def quarantined(self, table: str | None = None, batch: str | None = None) -> list[dict[str, Any]]:
        """`quarantine`'s rows as dicts (without their attempt), ordered by table, batch, file
        and record; read without a JVM where the tables allow it (`_native`)."""
        name = self.config.qualified(self._table(table)) if table else None
        if batch and not name:
            raise ConfigError("a batch is named within its table: give the table too")
        namespace = self.config.catalog.control_namespace
        found = self._native(lambda tables: ControlView(tables, namespace).quarantined(name, batch))
        rows = found if found is not None else self._control_view().quarantined(name, batch)
        return [{k: v for k, v in r.items() if k != "attempt"} for r in rows]

    def quarantine(self, table: str | None = None, batch: str | None = None) -> DataFrame:
        """Quarantined rows (of one table, of one of its batches), with their reasons, files,
        lines and raw text."""
        name = self.config.qualified(self._table(table)) if table else None
        if batch and not name:
            raise ConfigError("a batch is named within its table: give the table too")
        self.control.ensure()
        rows = self.control.quarantined(name)
        return rows.where(rows.batch_id == batch) if batch else rows

    def table(self, name: str) -> DataFrame:
        """The target table now."""
        return self.backend.read(self.config.qualified(self._table(name)))

    def current(self, table: str) -> DataFrame:
        """The current state of a change-log table (`snapshot`, or `key`, `ledger` or `append`
        with `output: change_log`): each key's latest row whose latest event is +A or +C, with
        that event's op, offset, system_time and event_time. Derived from the log on demand,
        so it always agrees with it."""
        from lakefresh.config.change_log import ChangeLogColumns
        from lakefresh.strategies.changelog import current_state

        config = self._table(table)
        strategy = config.strategy
        if not isinstance(strategy, ChangeLogColumns) or not strategy.writes_change_log():
            raise ConfigError(
                f"table {config.name!r} is not a change log (strategy {strategy.kind!r}); current() "
                "derives the state of change-log tables (`snapshot`, or `output: change_log`); "
                "other targets are their own current state"
            )
        return current_state(self.table(table), strategy, strategy.key_columns(), strategy.event_time)

    def reset_load(self, table: str, version: int | None = None, *, snapshot: int | None = None) -> str:
        """Restart a `table_changes` table's load log at a version of its source (default: the
        current one): the next load reads the changes after it. For after a full reload, when
        the last load's end version was expired or rolled back. `snapshot` is the deprecated
        earlier name of `version`."""
        from lakefresh.sources import TableChangesSource, make_source

        if snapshot is not None:
            warnings.warn(
                "reset_load: snapshot= is deprecated, use version=", DeprecationWarning, stacklevel=2
            )
            version = snapshot if version is None else version

        config = self._table(table)
        source = make_source(config.source, self._source_context(config))
        if not isinstance(source, TableChangesSource):
            raise ConfigError(f"table {table!r} reads {source.kind!r}, not table_changes: it has no load log")
        return source.reset(version)

    def _source_context(self, table: TableConfig) -> SourceContext:
        from lakefresh.sources import SourceContext

        return SourceContext.of(self.config, self.backend, str(self.base_dir), table)

    def migrate(self) -> list[str]:
        """Upgrade the control tables to this lakefresh's state version; the steps taken."""
        return self.control.migrate()

    def read_batch(self, table: str, batch_id: str) -> DataFrame:
        """The target as the given batch left it (time travel to its published version)."""
        name = self.config.qualified(self._table(table))
        for row in self.history(table):
            if row["batch_id"] == batch_id and row["status"] == "published":
                return self.backend.read(name, row["published_snapshot_id"])
        raise StateError(f"batch {batch_id!r} was not published to {name}")


def load_pipeline(
    path: str | Path,
    variables: Mapping[str, str] | None = None,
    spark: SparkSession | None = None,
    console: Console | None = None,
    quiet: bool = False,
) -> Pipeline:
    """Read and validate a pipeline file. Raises ConfigError before any JVM starts. Its runs show
    their progress per table and batch (rich in a terminal, plain lines on stderr otherwise)
    unless `quiet`, or on `console` when given."""
    file = Path(path)
    config = load_config(file, variables)
    shown = console or default_console(quiet)
    return Pipeline(config, file.resolve().parent, file, spark=spark, console=shown)
