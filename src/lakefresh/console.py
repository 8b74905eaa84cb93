"""Progress and messages through one object: rich in a terminal, plain lines in CI, silent in tests;
every event is also a record of the `lakefresh.progress` logger (:class:`LoggedConsole`)."""

from __future__ import annotations

import logging
import sys
from typing import Any, Protocol, TextIO

from lakefresh.results import BatchResult, TableResult


class Console(Protocol):
    def table_started(self, table: str, pending: int) -> None: ...
    def batch_done(self, result: BatchResult) -> None: ...
    def table_done(self, result: TableResult) -> None: ...
    def message(self, text: str) -> None: ...


def describe(result: BatchResult) -> str:
    counts = " ".join(f"{k}={v}" for k, v in sorted(result.counts.items()) if v)
    extra = []
    if result.quarantined:
        extra.append(f"quarantined={result.quarantined}")
    if result.skeletons:
        extra.append(f"skeletons={result.skeletons}")
    if result.duplicates:
        extra.append(f"duplicates={result.duplicates}")
    tail = (" " + " ".join(extra)) if extra else ""
    return (
        f"{result.table} {result.batch_id}: {result.status} rows={result.record_count} "
        f"{counts}{tail} ({result.seconds.total:.1f}s)"
    ).replace("  ", " ")


def resume_words(result: TableResult) -> str:
    """What to do with the resume command: run it, or first fix what the error names."""
    return "fix the pipeline file as the error says, then run" if result.fix_in_config else "resume with"


def describe_refresh(table: str, refreshed: dict[str, Any]) -> str:
    """One line for a table's full refresh (TableResult.refreshed)."""
    how = "replaced by a new version of the table (a new schema)" if refreshed["new_version"] else "rebuilt"
    dropped = refreshed["dropped"]
    gone = f"; {len(dropped)} batch(es) its source no longer holds left out" if dropped else ""
    return (
        f"{table}: full refresh: {how} from {len(refreshed['batches'])} batch(es), "
        f"{refreshed['rows']} row(s){gone}"
    )


class SilentConsole:
    def table_started(self, table: str, pending: int) -> None:
        pass

    def batch_done(self, result: BatchResult) -> None:
        pass

    def table_done(self, result: TableResult) -> None:
        pass

    def message(self, text: str) -> None:
        pass


class PlainConsole:
    """One line per event on stderr; what CI logs and pipes get."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr

    def _print(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def table_started(self, table: str, pending: int) -> None:
        self._print(f"{table}: {pending} new batch(es)")

    def batch_done(self, result: BatchResult) -> None:
        self._print(describe(result))

    def table_done(self, result: TableResult) -> None:
        if result.error:
            self._print(f"{result.table}: FAILED: {result.error}")
            if result.resume_command:
                self._print(f"  {resume_words(result)}: {result.resume_command}")

    def message(self, text: str) -> None:
        self._print(text)


class RichConsole:
    """A live progress bar per table in a terminal."""

    def __init__(self) -> None:
        from rich.console import Console as RConsole
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self.console = RConsole(stderr=True)
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            console=self.console,
            transient=True,
        )
        self.task: object = None

    def table_started(self, table: str, pending: int) -> None:
        self.progress.start()
        self.task = self.progress.add_task(table, total=pending)

    def batch_done(self, result: BatchResult) -> None:
        style = "green" if result.status == "published" else "red"
        self.progress.console.print(f"[{style}]{describe(result)}[/]")
        if self.task is not None:
            self.progress.advance(self.task)  # type: ignore[arg-type]

    def table_done(self, result: TableResult) -> None:
        self.progress.stop()
        if result.error:
            self.console.print(f"[red]{result.table}: FAILED:[/] {result.error}")
            if result.resume_command:
                self.console.print(f"  {resume_words(result)}: [bold]{result.resume_command}[/]")

    def message(self, text: str) -> None:
        self.console.print(text)


log = logging.getLogger("lakefresh.progress")


class LoggedConsole:
    """Each event as a `lakefresh.progress` record (INFO; a failed table's, WARNING), then shown
    by the console it wraps."""

    def __init__(self, shown: Console) -> None:
        self.shown = shown

    def table_started(self, table: str, pending: int) -> None:
        log.info("%s: %d new batch(es)", table, pending)
        self.shown.table_started(table, pending)

    def batch_done(self, result: BatchResult) -> None:
        log.log(logging.INFO if result.status == "published" else logging.WARNING, "%s", describe(result))
        self.shown.batch_done(result)

    def table_done(self, result: TableResult) -> None:
        if result.error:
            log.warning("%s: FAILED: %s", result.table, result.error)
        else:
            log.info("%s: done, %d batch(es)", result.table, len(result.batches))
        self.shown.table_done(result)

    def message(self, text: str) -> None:
        log.info("%s", text)
        self.shown.message(text)


def default_console(quiet: bool = False) -> Console:
    if quiet:
        return SilentConsole()
    return RichConsole() if sys.stderr.isatty() else PlainConsole()
