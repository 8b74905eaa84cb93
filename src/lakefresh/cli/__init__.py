"""The command line: thin commands over the Python API.

Errors print as one line (`Error: ...`) with exit code 1 (75 when another run holds the lease on
a table: `LeaseHeld`); `--debug` shows the whole trace (its causes and the JVM's stack text too),
with every secret masked as in the one line.
`--output json` prints machine-readable results on stdout.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, ParamSpec

import typer

from lakefresh.errors import ConfigError, LakefreshError, SetupError
from lakefresh.secrets import redact

if TYPE_CHECKING:
    from types import FrameType

    from lakefresh.api import Pipeline
    from lakefresh.results import RunResult

    # what `signal.signal` installs and returns: a function, SIG_DFL or SIG_IGN, or None
    SignalHandler = Callable[[int, FrameType | None], object] | int | None

Arguments = ParamSpec("Arguments")

app = typer.Typer(
    add_completion=False,
    # a trace's local variables hold the pipeline's settings, passwords included
    pretty_exceptions_show_locals=False,
    no_args_is_help=True,
    help="lakefresh keeps lakehouse tables fresh: batches in, the right refresh strategy, exactly once.",
)


class Output(StrEnum):
    text = "text"
    json = "json"


class Behavior(StrEnum):
    overwrite = "overwrite"
    merge = "merge"


class RolledBack(StrEnum):
    forget = "forget"
    reapply = "reapply"


class State:
    debug = False


PIPELINE = typer.Argument(..., help="The pipeline YAML file.", exists=False)
OUTPUT = typer.Option(Output.text, "--output", "-o", help="text for people, json for scripts.")
VARS = typer.Option([], "--var", help="Template variable NAME=VALUE, used as {{ var.NAME }}.")


def _print_version(asked: bool) -> None:
    if asked:
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"lakefresh {version('lakefresh')}")
        except PackageNotFoundError:
            print("lakefresh (not installed)")
        raise typer.Exit()


@app.callback()
def _main(
    debug: bool = typer.Option(False, "--debug", help="Show full stack traces."),
    version: bool = typer.Option(
        False, "--version", is_eager=True, callback=_print_version, help="Print the version and exit."
    ),
) -> None:
    State.debug = debug
    if debug:
        os.environ["LAKEFRESH_DEBUG"] = "1"
        show_logs()


def show_logs() -> None:
    """lakefresh's log records on stderr, from DEBUG up (which road a read took, ...); not the
    progress ones, which the console shows."""
    import logging

    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.addFilter(lambda record: not record.name.startswith("lakefresh.progress"))
    logger = logging.getLogger("lakefresh")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)


def _variables(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise LakefreshError(f"--var takes NAME=VALUE, got {item!r}")
        out[name] = value
    return out


def _load(path: Path, variables: list[str], quiet: bool = False) -> Pipeline:
    from lakefresh.api import load_pipeline

    return load_pipeline(path, _variables(variables), quiet=quiet)


def _emit(output: Output, data: object, text: str) -> None:
    if output is Output.json:
        print(json.dumps(data, indent=2, default=str))
    else:
        print(text)


def _fail(exc: BaseException, output: Output = Output.text) -> None:
    """Report an error in one line naming its cause (as JSON with `--output json`); exit with
    the error's exit code (1; 75 for a held lease). With `--debug`, the whole trace first."""
    if State.debug:
        print_trace(exc)
    if isinstance(exc, LakefreshError):
        message = str(exc).strip() or type(exc).__name__
    else:
        from lakefresh.lakehouse.failures import describe

        message = describe(exc)
    message = redact(message)
    if output is Output.json:
        kind = type(exc).__name__
        print(json.dumps({"ok": False, "error": message, "error_type": kind}, indent=2))
    else:
        typer.secho(f"Error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(exc.exit_code if isinstance(exc, LakefreshError) else 1)


def reports_errors(command: Callable[Arguments, None]) -> Callable[Arguments, None]:
    """A command whose errors end it as `_fail` reports them: one line (JSON with `--output
    json`) and the error's exit code; typer's and click's own exits and usage errors pass."""
    import functools

    from typer.exceptions import TyperException

    @functools.wraps(command)
    def reported(*args: Arguments.args, **kwargs: Arguments.kwargs) -> None:
        try:
            command(*args, **kwargs)
        except (typer.Exit, typer.Abort, TyperException):  # exits, and typer's usage errors
            raise
        except Exception as exc:
            output = kwargs.get("output")
            _fail(exc, output if isinstance(output, Output) else Output.text)

    return reported


@app.command()
@reports_errors
def validate(
    pipeline: Path = PIPELINE,
    var: list[str] = VARS,
    output: Output = OUTPUT,
    sample_rows: int = typer.Option(
        1000,
        "--sample-rows",
        min=0,
        help="Rows read of each of a local files source's first 3 files, to check that the declared "
        "types hold them; 0 reads no data.",
    ),
) -> None:
    """Check a pipeline file without starting Spark: what a run would stop at; warn of the columns
    it cannot know before a batch is read, and of runs without a lease on the `hadoop` catalog;
    and read the first rows of each local `files` source's
    first files to find declared types that cannot hold them (a warning when some values fail,
    an error when every sampled value does)."""
    from lakefresh.config.checks import unknown_columns, unleased_on_a_file_catalog
    from lakefresh.config.loader import validate_pipeline
    from lakefresh.lakehouse.connect import connect_notes, remote_url

    config = validate_pipeline(pipeline, _variables(var))
    names = [t.name for t in config.tables]
    warnings = unknown_columns(config.tables) + unleased_on_a_file_catalog(config)
    warnings += connect_notes(remote_url(config.spark.remote), config.reads_delta_logs())
    sampled: list[str] = []
    if sample_rows:
        from lakefresh.sources.type_fit import sampled_types

        report = sampled_types(config.tables, pipeline, rows=sample_rows)
        if report.errors:
            lines = [*report.errors, *(f"warning: {w}" for w in report.warnings)]
            header = f"{pipeline}: {len(report.errors)} error(s) in the pipeline"
            raise ConfigError("\n".join([header, *(f"  {line}" for line in lines)]))
        warnings += report.warnings
        sampled = report.notes
    _emit(
        output,
        {"ok": True, "tables": names, "warnings": warnings, "notes": sampled},
        "\n".join(
            [
                f"{pipeline}: valid ({len(names)} table(s): {', '.join(names)})",
                *(f"  warning: {w}" for w in warnings),
                *(f"  note: {n}" for n in sampled),
            ]
        ),
    )


@app.command()
@reports_errors
def init(
    folder: Path = typer.Argument(Path("."), help="The project's folder (made if missing)."),
    name: str | None = typer.Option(None, help="Catalog and namespace name; default: the folder's."),
    output: Output = OUTPUT,
) -> None:
    """Start a project: a pipeline file that runs as it is, one batch, its JSON Schema."""
    from lakefresh.starter import write_starter

    written = write_starter(folder, name)
    _emit(
        output,
        {"ok": True, "files": [str(p) for p in written]},
        "\n".join(f"wrote {p}" for p in written) + f"\nnext: lakefresh run {folder / 'pipeline.yml'}",
    )


@app.command("schema")
@reports_errors
def schema_command(
    file: Path | None = typer.Option(None, "--file", "-f", help="Write it here instead of printing it."),
) -> None:
    """The pipeline file's JSON Schema (for editors: completion and checks as you type)."""
    import json

    from lakefresh.starter import pipeline_schema

    text = json.dumps(pipeline_schema(), indent=2)
    if file is None:
        print(text)
    else:
        file.write_text(text + "\n", encoding="utf-8")


@app.command()
@reports_errors
def run(
    pipeline: Path = PIPELINE,
    table: list[str] = typer.Option([], "--table", "-t", help="Only these tables."),
    var: list[str] = VARS,
    output: Output = OUTPUT,
    continuous: bool = typer.Option(
        False, "--continuous", help="Run again every --interval until SIGINT or SIGTERM."
    ),
    interval: str = typer.Option("60s", help="Change-capture interval: 90, 90s, 5m, 1h."),
    wait: str | None = typer.Option(
        None,
        "--wait",
        help="When another run holds the lease on a table, wait up to this long (90s, 10m) for "
        "it; without it such a run exits 75 at once.",
    ),
    rolled_back: RolledBack | None = typer.Option(
        None,
        "--rolled-back",
        help="Published batches a rollback of their target removed: forget them (never taken "
        "again) or reapply them (in order). Without it such a table stops.",
    ),
    skip_batch: list[str] = typer.Option(
        [],
        "--skip-batch",
        help="A waiting batch of the one --table never to take (e.g. one refused for its bad "
        "rows); recorded as skipped.",
    ),
    accept_config_change: bool = typer.Option(
        False,
        "--accept-config-change",
        help="A table whose result-shaping settings changed since its last batch: apply the new "
        "settings to the new batches (the earlier ones stay as they were loaded).",
    ),
    full_refresh: bool = typer.Option(
        False,
        "--full-refresh",
        help="First rebuild the --table tables (every table without --table) from every batch "
        "their sources hold, under today's configuration, in one commit each; a schema the "
        "table cannot evolve to (a changed type, a dropped column) replaces the table.",
    ),
    quiet: bool = typer.Option(
        False, "--quiet", "-q", help="No progress per table and batch, only the summary."
    ),
) -> None:
    """Apply every new batch to its table, exactly once."""
    seconds = parse_interval(interval)
    waiting = None if wait is None else parse_interval(wait, "--wait")
    p = _load(pipeline, var, quiet=quiet or output is Output.json)
    if table:  # before Spark starts
        from lakefresh.config.checks import check_table_names

        check_table_names(p.config.tables, table)
    if continuous:
        if full_refresh:
            raise ConfigError("--full-refresh is one run's: run it once, then --continuous")
        _run_continuously(p, table or None, seconds, output, waiting)
        return
    decision = rolled_back.value if rolled_back else None
    with Stopping(p) as stopping:
        result = p.run(
            table or None,
            stopping.stop,
            rolled_back=decision,
            skip_batches=skip_batch or None,
            accept_config_change=accept_config_change,
            full_refresh=(table or [t.name for t in p.config.tables]) if full_refresh else None,
            wait=waiting,
        )
    _finish(result, output, lambda: stopping.exit(table, result))


@app.command()
@reports_errors
def backfill(
    pipeline: Path = PIPELINE,
    table: str = typer.Option(..., "--table", "-t", help="A table with a synapse_link source."),
    behavior: Behavior | None = typer.Option(
        None, help="overwrite (rebuild, then replace) or merge; default: the source's backfill_behavior."
    ),
    start: datetime | None = typer.Option(
        None, help="First folder time (UTC); default: the source's backfill_start_date."
    ),
    var: list[str] = VARS,
    output: Output = OUTPUT,
) -> None:
    """Load a Synapse Link table's complete folders as one batch, exactly once."""
    chosen = behavior.value if behavior else None
    result = _load(pipeline, var, quiet=output is Output.json).backfill(table, chosen, start)
    _finish(result, output)


def _finish(result: RunResult, output: Output, stopped: Callable[[], None] | None = None) -> None:
    """Report a run; `stopped()` (the exit code of a signal that stopped it, if one did), then
    exit code 1 when a table failed."""
    _report(result, output)
    if stopped is not None:
        stopped()
    if not result.ok:
        raise typer.Exit(1)


def _report(result: RunResult, output: Output) -> None:
    lines = []
    for t in result.tables:
        published = [b for b in t.batches if b.status == "published"]
        state = "ok" if t.ok else f"FAILED: {t.error}"
        bad = f"{t.quarantined} row(s) quarantined, " if t.quarantined else ""
        done = f"{len(published)} batch(es) applied"
        if t.refreshed is not None:
            done += " by a full refresh" + (
                " (a new version of the table)" if t.refreshed["new_version"] else ""
            )
        lines.append(f"{t.table}: {done}, {bad}{state}")
        if t.resume_command and not t.ok:
            lines.append(f"  resume with: {t.resume_command}")
    _emit(output, result.to_dict(), "\n".join(lines))


class Stopping:
    """SIGINT (Ctrl-C) and SIGTERM while a run goes on: the batch in progress is committed (or,
    failing, undone as any failure is), no further batch or table starts, and the command exits
    with 128 + the signal's number (130, 143) after one line saying what was done and what was
    left. A second signal stops at once. Installed once the Spark session is up: PySpark's own
    SIGINT handler cancels the running Spark jobs, which would fail the batch in progress."""

    def __init__(self, p: Pipeline) -> None:
        import threading

        self.p = p
        self.stop = threading.Event()
        self.signal: int | None = None
        self._before: dict[int, SignalHandler] = {}

    def __enter__(self) -> Stopping:
        import signal
        import threading

        self.p.spark  # noqa: B018 (the session, and PySpark's handler, come first)
        if threading.current_thread() is not threading.main_thread():
            return self  # handlers belong to the main thread (the CLI called from a thread)
        for signum in (signal.SIGINT, signal.SIGTERM):
            self._before[signum] = signal.signal(signum, self._request)
        return self

    def __exit__(self, *_exc: object) -> None:
        import signal

        for signum, handler in self._before.items():
            signal.signal(signum, handler)

    def _request(self, signum: int, _frame: FrameType | None) -> None:
        import signal

        if self.stop.is_set():  # asked twice: at once
            raise KeyboardInterrupt
        self.signal = signum
        self.stop.set()
        print(f"{signal.Signals(signum).name}: stopping after the commit in progress", file=sys.stderr)

    def exit(self, only: list[str], result: RunResult) -> None:
        """After a run a signal stopped: what it did and left, and the signal's exit code."""
        if self.signal is None:
            return
        import signal

        done = {t.table for t in result.tables}
        left = [t.name for t in self.p.config.tables if (not only or t.name in only) and t.name not in done]
        applied = sum(1 for b in result.batches if b.status == "published")
        print(
            f"stopped by {signal.Signals(self.signal).name}: {applied} batch(es) applied; "
            f"not started: {', '.join(left) or 'none'} (the next run goes on from there)",
            file=sys.stderr,
        )
        raise typer.Exit(128 + self.signal)


def _run_continuously(
    p: Pipeline, tables: list[str] | None, seconds: float, output: Output, wait: float | None
) -> None:
    """Cycles until SIGINT or SIGTERM; the batch in progress is committed first. A failed table
    is reported and retried in the next cycle."""
    with Stopping(p) as stopping:
        report = lambda r: _report(r, output)  # noqa: E731
        cycles = p.run_continuously(seconds, tables, stopping.stop, on_cycle=report, wait=wait)
    print(f"stopped after {cycles} cycle(s)", file=sys.stderr)


def parse_interval(text: str, option: str = "--interval") -> float:
    """Seconds in `90`, `90s`, `500ms`, `5m` or `1h`."""
    from lakefresh.config.base import parse_duration

    try:
        return parse_duration(text)
    except ValueError as exc:
        raise typer.BadParameter(f"{option} {exc}") from None


@app.command()
@reports_errors
def migrate(pipeline: Path = PIPELINE, var: list[str] = VARS) -> None:
    """Upgrade the control tables to this lakefresh's state version."""
    steps = _load(pipeline, var, quiet=True).migrate()
    print("\n".join(steps) if steps else "control tables are up to date")


@app.command("reset-load")
@reports_errors
def reset_load(
    pipeline: Path = PIPELINE,
    table: str = typer.Argument(..., help="A table with a table_changes source."),
    # a version of the source; `--snapshot` is an option users' scripts pass, so its name stays
    snapshot: int | None = typer.Option(
        None, help="Restart after this version of the source (Iceberg's snapshot id; default: its head)."
    ),
    var: list[str] = VARS,
) -> None:
    """Restart a change feed's load log at a version of its source, after a full reload."""
    print(_load(pipeline, var, quiet=True).reset_load(table, snapshot))


@app.command("submit-args")
@reports_errors
def submit_args(
    pipeline: Path = PIPELINE,
    var: list[str] = VARS,
    connect_server: bool = typer.Option(
        False,
        "--connect-server",
        help="Instead: the arguments of a Spark Connect server this pipeline can run through "
        "(spark.remote): the settings a client cannot give it, and the server's class.",
    ),
) -> None:
    """The spark-submit arguments that run this pipeline: its Spark settings as --conf (the jars
    and the SQL extensions must be there when the driver starts), then lakefresh's entry point.
    Give the master to spark-submit: eval spark-submit --master URL $(lakefresh submit-args
    pipeline.yml) run pipeline.yml"""
    import shlex

    import lakefresh
    from lakefresh.lakehouse.connect import SERVER_CLASS, server_settings

    settings = _load(pipeline, var, quiet=True).spark_settings(archive=False)  # not this machine's
    settings.pop("spark.remote", None)
    if connect_server:
        settings = server_settings(settings)
    for key, value in settings.items():
        if key != "spark.master":  # spark-submit's --master names the cluster
            print("--conf", shlex.quote(f"{key}={value}"))
    if connect_server:
        print("--class", SERVER_CLASS, "spark-internal")
    else:
        print(shlex.quote(str(Path(lakefresh.__file__).with_name("__main__.py"))))


@app.command()
@reports_errors
def jars(
    package: list[str] = typer.Option(
        [], "--package", help="Also these Maven coordinates (as a pipeline's spark.packages)."
    ),
    iceberg_version: str | None = typer.Option(None, help="Another Iceberg release than the pinned one."),
    delta: bool = typer.Option(False, "--delta", help="Also Delta Lake's runtime (Delta tables)."),
    s3: bool = typer.Option(False, "--s3", help="Also S3's connector (a pipeline with storage.s3)."),
    iceberg: bool = typer.Option(
        True, "--iceberg/--no-iceberg", help="Iceberg's runtime (not for Delta only)."
    ),
    force: bool = typer.Option(False, "--force", help="Resolve again even when cached."),
    class_archive: bool = typer.Option(
        False,
        "--class-archive",
        help="Instead: make the archive of Spark's classes that local sessions start from (about "
        "170 MB, once per JDK and Spark install; print its file).",
    ),
) -> None:
    """Resolve (once) the Iceberg runtime (with --delta, Delta Lake's too; --s3, S3's connector;
    --no-iceberg: not Iceberg's) and --package coordinates from Maven Central; print the jar files
    sessions will use."""
    from lakefresh.lakehouse import class_archive as archive
    from lakefresh.lakehouse import jars as jar_files

    if class_archive:
        try:
            print(archive.make(force=force))
        except (LakefreshError, OSError) as exc:
            raise SetupError(f"no class archive: {exc}") from exc
        return
    runtimes = jar_files.runtimes(iceberg_version, None, delta, iceberg)
    coordinates = [*runtimes, *(jar_files.object_store() if s3 else []), *package]
    if not coordinates:
        raise ConfigError("nothing to resolve: --no-iceberg needs --delta or a --package")
    for jar in jar_files.resolve(coordinates, force=force):
        print(jar)


# the commands that read what runs recorded (status, history, quarantine)
from lakefresh.cli import reports, verbs  # noqa: E402, F401


def print_trace(exc: BaseException) -> None:
    """The whole trace on stderr, its chained causes and the JVM's stack text included, with
    every secret masked (secrets.py)."""
    sys.stderr.write(redact("".join(traceback.format_exception(exc))))
    sys.stderr.flush()


def main() -> None:
    try:
        app()
    except typer.Exit:
        raise
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:  # what no command reported: its trace, masked, never Python's own
        print_trace(exc)
        sys.exit(1)
