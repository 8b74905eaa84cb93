"""The operator's verbs that change a table: `rollback`, `reset`, `unload`, `reload`. Each does
its work in one commit per table and prints what it did (JSON with `--output json`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from lakefresh.cli import OUTPUT, PIPELINE, VARS, Output, _emit, _fail, _load, app

TABLE = typer.Option(..., "--table", "-t", help="The table.")
BATCHES = typer.Option(..., "--batch", "-b", help="A batch id (repeat the option for more).")


@app.command()
def rollback(
    pipeline: Path = PIPELINE,
    table: str = TABLE,
    to_batch: str = typer.Option(..., "--to-batch", help="The last batch to keep."),
    var: list[str] = VARS,
    output: Output = OUTPUT,
) -> None:
    """Undo the batches published after --to-batch in one commit; they are never taken again."""
    try:
        done = _load(pipeline, var, quiet=output is Output.json).rollback(table, to_batch)
    except Exception as exc:
        _fail(exc, output)
        return
    lines = [
        f"{name}: back at batch {to_batch} (snapshot {done.snapshots[name]}); unloaded: "
        f"{', '.join(batches) or 'nothing (it was the last batch)'}"
        for name, batches in done.unloaded.items()
    ]
    _emit(output, done.to_dict(), "\n".join(lines))


@app.command()
def reset(
    pipeline: Path = PIPELINE, table: str = TABLE, var: list[str] = VARS, output: Output = OUTPUT
) -> None:
    """Rebuild a table from its retained raw batches with today's configuration, in one commit."""
    _rebuild(pipeline, var, output, lambda p: p.reset(table))


@app.command()
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
def reload(
    pipeline: Path = PIPELINE,
    table: str = TABLE,
    batch: list[str] = BATCHES,
    var: list[str] = VARS,
    output: Output = OUTPUT,
) -> None:
    """Apply batches again from their current content (a corrected file), in their place."""
    _rebuild(pipeline, var, output, lambda p: p.reload(table, batch))


def _rebuild(path: Path, var: list[str], output: Output, verb: Any) -> None:
    try:
        done = verb(_load(path, var, quiet=output is Output.json))
    except Exception as exc:
        _fail(exc, output)
        return
    named = f" {', '.join(done.batches)}" if done.batches else ""
    lines = [
        f"{name}: {done.verb}{named}: rebuilt from {len(batches)} batch(es), {done.rows[name]} "
        f"row(s) (snapshot {done.snapshots[name]})"
        for name, batches in done.applied.items()
    ]
    _emit(output, done.to_dict(), "\n".join(lines))
