"""The commands that read what runs recorded: `status`, `history`, `quarantine`, `report` (an
HTML file). People get Rich tables; scripts get `--output json`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from lakefresh.cli import OUTPUT, PIPELINE, VARS, Output, _emit, _load, app, reports_errors

if TYPE_CHECKING:
    from rich.console import Console


@app.command()
@reports_errors
def status(
    pipeline: Path = PIPELINE,
    var: list[str] = VARS,
    output: Output = OUTPUT,
    pending: bool = typer.Option(False, "--pending", help="Also count batches waiting in sources."),
) -> None:
    """Per table: its position, last batch, rows and counts."""
    rows = _load(pipeline, var, quiet=True).status(pending=pending)
    if output is Output.json:
        _emit(output, [r.to_dict() for r in rows], "")
        return
    from rich.table import Table

    grid = Table(
        "table", "batches", "last batch", "position", "rows", "counts", "quarantined", "pending", "freshness"
    )
    for r in rows:
        counts = " ".join(f"{k}={v}" for k, v in sorted(r.counts.items()))
        waiting = "-" if r.pending is None else str(r.pending) + (f" (+{r.held} held back)" if r.held else "")
        grid.add_row(
            r.table,
            str(r.batches_published),
            r.last_batch_id or "-",
            r.position or "-",
            "-" if r.rows is None else str(r.rows),
            counts,
            str(r.quarantined),
            f"source error: {r.source_error}" if r.source_error else waiting,
            _or_dash(r.freshness),
        )
    _console().print(grid)
    for r in rows:
        if r.lease:
            print(f"{r.table}: {r.lease}")


@app.command()
@reports_errors
def freshness(
    pipeline: Path = PIPELINE,
    table: list[str] = typer.Option([], "--table", "-t", help="Only these tables (repeat the option)."),
    var: list[str] = VARS,
    output: Output = OUTPUT,
) -> None:
    """Per table: how long ago its newest batch was loaded, against its `freshness` bounds, and
    what its source holds. Exit code 1 when a table is over its error_after (for schedulers)."""
    rows = _load(pipeline, var, quiet=True).freshness(table or None)
    if output is Output.json:
        _emit(output, [r.to_dict() for r in rows], "")
    else:
        from rich.table import Table

        grid = Table("table", "status", "loaded", "age", "warn after", "error after", "source age", "waiting")
        for r in rows:
            grid.add_row(
                r.table,
                r.status,
                r.loaded_at.isoformat(sep=" ", timespec="seconds") if r.loaded_at else "-",
                _age(r.age),
                _age(r.warn_after),
                _age(r.error_after),
                f"source error: {r.source_error}" if r.source_error else _age(r.source_age),
                _or_dash(r.pending),
            )
        _console().print(grid)
    if any(r.status == "error" for r in rows):
        raise typer.Exit(1)


def _age(seconds: float | None) -> str:
    """`2d 3h`, `3h 5m`, `5m 2s`, `42s`: the two largest units of a duration; `-` for none."""
    if seconds is None:
        return "-"
    parts: list[str] = []
    left = int(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if left >= size or (unit == "s" and not parts):
            parts.append(f"{left // size}{unit}")
            left %= size
    return " ".join(parts[:2])


@app.command()
@reports_errors
def history(
    pipeline: Path = PIPELINE,
    table: str = typer.Argument(..., help="The table."),
    var: list[str] = VARS,
    output: Output = OUTPUT,
) -> None:
    """A table's batches, with their counts and timings."""
    rows = _load(pipeline, var, quiet=True).history(table)
    if output is Output.json:
        _emit(output, rows, "")
        return
    from rich.table import Table

    grid = Table(
        "batch",
        "status",
        "rows",
        "effective",
        "counts",
        "range (effective)",
        "quarantined",
        "files",
        "written",
        "seconds read/stage/audit/publish",
        "snapshot",
        "rules",
    )
    for r in rows:
        counts = " ".join(f"{k}={v}" for k, v in sorted((r["status_counts"] or {}).items()))
        seconds = "/".join(
            f"{r[k] or 0:.1f}" for k in ("read_seconds", "stage_seconds", "audit_seconds", "publish_seconds")
        )
        grid.add_row(
            r["batch_id"],
            r["status"],
            str(r["record_count"] or 0),
            _or_dash(r.get("effective_count")),
            counts,
            _range_text(r),
            str(r["quarantined_count"] or 0),
            str(r["files_written"] or 0),
            _size(r["bytes_written"] or 0),
            seconds,
            _or_dash(r["published_snapshot_id"]),
            " ".join(f"{k}={v}" for k, v in sorted((r.get("rule_results") or {}).items())),
        )
    _console().print(grid)


@app.command()
@reports_errors
def report(
    pipeline: Path = PIPELINE,
    file: Path = typer.Option(Path("report.html"), "--file", "-f", "-o", help="The HTML file to write."),
    var: list[str] = VARS,
    output: Output = typer.Option(Output.text, "--output", help="text for people, json for scripts."),
) -> None:
    """Write one self-contained HTML file: per table, its batches over time, charted.
    (Here `-o` names the file, as in `lakefresh report PIPELINE -o report.html`.)"""
    written = _load(pipeline, var, quiet=True).report(file)
    _emit(output, {"report": str(written)}, f"report written to {written}")


def _console() -> Console:
    """Rich in a terminal; piped, a fixed width wide enough for every column (Rich would
    otherwise assume 80 columns and squeeze the tables to nothing)."""
    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=220)


def _size(count: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if count < 1024 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024  # type: ignore[assignment]
    raise AssertionError("unreachable")


def _or_dash(value: object) -> str:
    return "-" if value is None else str(value)


def _range_text(row: dict[str, Any]) -> str:
    """`[lo, hi]`, then what the batch still owns when later batches took part of it."""
    if row.get("range_start") is None:
        return "-"
    from lakefresh.ranges import Interval

    def short(piece: Interval) -> str:
        return str(piece).replace(".000000", "")

    own = short(Interval(row["range_start"], row["range_end"]))
    pieces = row.get("effective_ranges")
    if pieces is None:
        return own
    kept = " ".join(short(Interval(**p)) for p in pieces) or "none"
    return own if kept == own else f"{own} owns {kept}"


@app.command()
@reports_errors
def quarantine(
    pipeline: Path = PIPELINE,
    table: str | None = typer.Option(None, "--table", "-t", help="Only this table."),
    batch: str | None = typer.Option(None, "--batch", "-b", help="Only this batch (with --table)."),
    var: list[str] = VARS,
    output: Output = OUTPUT,
) -> None:
    """Rows that could not be loaded: table, batch, file, line, reason and raw text."""
    rows = _load(pipeline, var, quiet=True).quarantined(table, batch)
    if output is Output.json:
        _emit(output, rows, "")
        return
    from rich.table import Table

    grid = Table("table", "batch", "file", "line", "reason", "raw")
    for r in rows:
        raw = r["raw"] or ""
        grid.add_row(
            r["table_name"],
            r["batch_id"],
            (r["source_file"] or "-").rsplit("/", 1)[-1],
            _or_dash(r["line"]),
            r["reason"],
            raw if len(raw) <= 60 else raw[:57] + "...",
        )
    _console().print(grid)
    if not rows:
        print("no quarantined rows")
