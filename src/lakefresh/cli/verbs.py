"""The operator's verbs: `plan` (what a run would do, written nowhere), `maintain` (upkeep), and
those that change a table's rows: `adopt`, `rollback`, `reset`, `unload`, `reload`, each in one commit per
table. Each prints what it
found or did (JSON with `--output json`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from lakefresh.cli import OUTPUT, PIPELINE, VARS, Output, _emit, _load, app, reports_errors

if TYPE_CHECKING:
    from collections.abc import Callable

    from lakefresh.api import Pipeline
    from lakefresh.verbs import RebuildResult, TablePlan

TABLE = typer.Option(..., "--table", "-t", help="The table.")
BATCHES = typer.Option(..., "--batch", "-b", help="A batch id (repeat the option for more).")


@app.command()
@reports_errors
def plan(
    pipeline: Path = PIPELINE,
    table: list[str] = typer.Option([], "--table", "-t", help="Only this table (repeatable)."),
    var: list[str] = VARS,
    output: Output = OUTPUT,
    read_batches: bool = typer.Option(
        False,
        "--read-batches",
        help="Read the waiting batches through Spark (starts a JVM) for what a plan without one "
        "cannot tell from their headers: the columns a transform makes, the types Spark infers.",
    ),
) -> None:
    """What the next run would take and do, per table; writes nothing."""
    done = _load(pipeline, var, quiet=True).plan(table or None, read_batches)
    _emit(output, done.to_dict(), "\n".join(_plan_lines(t) for t in done.tables))


def _plan_lines(t: TablePlan, shown: int = 20) -> str:
    """One table's plan for people: a heading line, then what the run would do."""
    head = f"{t.table}: " + (
        f"cannot list its source: {t.error}"
        if t.error
        else f"{len(t.take)} batch(es) to take in {t.commits} commit(s), {t.rows_bytes} bytes"
        + ("" if t.exists else " (creates it)")
    )
    lines = [head]
    if t.stops:
        lines.append(f"  stops before taking a batch: {t.stops}")
    lines += [f"  config change: {c}" for c in t.config_changes]
    lines += [f"  records first: {b}, published but not in the log ({how})" for b, how in t.recovered.items()]
    lines += [
        f"  take {b.batch_id}  position {b.position}  at {b.batch_time}  {b.files} file(s)"
        + ("" if b.bytes is None else f" {b.bytes} bytes")
        for b in t.take[:shown]
    ]
    if len(t.take) > shown:
        lines.append(f"  ... and {len(t.take) - shown} more")
    lines += [f"  not yet: {w['name']}: {w['reason']}" for w in t.waiting]
    lines += [f"  held back: {h['name']}: {h['reason']}" for h in t.held]
    if t.new_columns:
        lines.append(f"  adds column(s): {', '.join(t.new_columns)}")
    lines += [f"  maintenance due: {m}" for m in t.maintenance]
    lines += [f"  not known without reading the batches: {u}" for u in t.unknown]
    return "\n".join(lines)


@app.command()
@reports_errors
def replay(
    pipeline: Path = PIPELINE,
    table: str = TABLE,
    batch: str = typer.Option(..., "--batch", "-b", help="The batch whose bad rows were corrected."),
    file: Path = typer.Option(..., "--file", "-f", help="The corrected rows, in the source's format."),
    var: list[str] = VARS,
    output: Output = OUTPUT,
) -> None:
    """Apply corrected quarantined rows of a batch as a new batch linked to it."""
    done = _load(pipeline, var, quiet=output is Output.json).replay(table, batch, file)
    b = done.replay
    counts = " ".join(f"{k}={v}" for k, v in sorted(b.counts.items()))
    text = f"{done.table}: {b.batch_id} {b.status} {counts}; "
    text += f"{done.resolved} quarantined row(s) of {batch} resolved"
    if b.error:
        text += f"\n  {b.error}"
    _emit(output, done.to_dict(), text)
    if b.status != "published":
        raise typer.Exit(1)


@app.command()
@reports_errors
def maintain(
    pipeline: Path = PIPELINE,
    table: list[str] = typer.Option([], "--table", "-t", help="Only this table (repeatable)."),
    var: list[str] = VARS,
    output: Output = OUTPUT,
) -> None:
    """Compact, expire old versions and remove orphan files, by each table's maintenance policy."""
    done = _load(pipeline, var, quiet=output is Output.json).maintain(table or None)
    lines = [
        f"{t.table}: "
        + (", ".join(f"{k.replace('_', ' ')} {v}" for k, v in sorted(t.done.items())) or "nothing to do")
        + (f" (versions kept for {', '.join(t.kept_for)})" if t.kept_for else "")
        + (f" (no expiry: {', '.join(t.unlogged[:3])} not logged yet; run the table)" if t.unlogged else "")
        for t in done.tables
    ]
    _emit(output, done.to_dict(), "\n".join(lines))


@app.command()
@reports_errors
def adopt(
    pipeline: Path = PIPELINE, table: str = TABLE, var: list[str] = VARS, output: Output = OUTPUT
) -> None:
    """Make the table another tool wrote at the table's target name (a dbt snapshot, an Open Data
    Fabric log, a plain table) lakefresh's, in one commit; runs continue it from then on."""
    done = _load(pipeline, var, quiet=output is Output.json).adopt(table)
    text = f"{done.table}: adopted {done.rows} row(s) as {done.batch_id} (version {done.version})"
    text += f"; added {', '.join(done.added)}" if done.added else ""
    text += f"; dropped {', '.join(done.dropped)}" if done.dropped else ""
    _emit(output, done.to_dict(), text)


@app.command()
@reports_errors
def rollback(
    pipeline: Path = PIPELINE,
    table: str = TABLE,
    to_batch: str = typer.Option(..., "--to-batch", help="The last batch to keep."),
    var: list[str] = VARS,
    output: Output = OUTPUT,
) -> None:
    """Undo the batches published after --to-batch in one commit; they are never taken again."""
    done = _load(pipeline, var, quiet=output is Output.json).rollback(table, to_batch)
    lines = [
        f"{name}: back at batch {to_batch} (version {done.versions[name]}); unloaded: "
        f"{', '.join(batches) or 'nothing (it was the last batch)'}"
        for name, batches in done.unloaded.items()
    ]
    _emit(output, done.to_dict(), "\n".join(lines))


@app.command()
@reports_errors
def reset(
    pipeline: Path = PIPELINE, table: str = TABLE, var: list[str] = VARS, output: Output = OUTPUT
) -> None:
    """Rebuild a table from its retained raw batches with today's configuration, in one commit."""
    _rebuild(pipeline, var, output, lambda p: p.reset(table))


@app.command()
@reports_errors
def unload(
    pipeline: Path = PIPELINE,
    table: str = TABLE,
    batch: list[str] = BATCHES,
    var: list[str] = VARS,
    output: Output = OUTPUT,
) -> None:
    """Make a table what it would be had these batches never been loaded; never taken again."""
    _rebuild(pipeline, var, output, lambda p: p.unload(table, batch))


@app.command()
@reports_errors
def reload(
    pipeline: Path = PIPELINE,
    table: str = TABLE,
    batch: list[str] = BATCHES,
    var: list[str] = VARS,
    output: Output = OUTPUT,
) -> None:
    """Apply batches again from their current content (a corrected file), in their place."""
    _rebuild(pipeline, var, output, lambda p: p.reload(table, batch))


def _rebuild(path: Path, var: list[str], output: Output, verb: Callable[[Pipeline], RebuildResult]) -> None:
    done = verb(_load(path, var, quiet=output is Output.json))
    named = f" {', '.join(done.batches)}" if done.batches else ""
    lines = [
        f"{name}: {done.verb}{named}: rebuilt from {len(batches)} batch(es), {done.rows[name]} "
        f"row(s) (version {done.versions[name]})"
        for name, batches in done.applied.items()
    ]
    lines += [
        f"{other} reads the same source and holds {', '.join(held)} too: only {done.table} changed; "
        f"for {other}: lakefresh {done.verb} {path} --table {other} " + " ".join(f"--batch {b}" for b in held)
        for other, held in done.also_in.items()
    ]
    _emit(output, done.to_dict(), "\n".join(lines))
