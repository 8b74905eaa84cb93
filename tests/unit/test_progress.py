"""A pipeline loaded from Python shows its runs' progress unless told to be quiet, and every
progress event is also a record of the `lakefresh.progress` logger."""

from __future__ import annotations

import io
import logging

from lakefresh.api import load_pipeline
from lakefresh.console import LoggedConsole, PlainConsole, SilentConsole
from lakefresh.results import BatchResult, TableResult
from lakefresh.starter import write_starter


def test_the_api_shows_progress_unless_quiet(tmp_path):
    write_starter(tmp_path, "shop")
    shown = load_pipeline(tmp_path / "pipeline.yml").console
    assert isinstance(shown, LoggedConsole) and isinstance(shown.shown, PlainConsole)  # stderr is no terminal
    quiet = load_pipeline(tmp_path / "pipeline.yml", quiet=True).console
    assert isinstance(quiet, LoggedConsole) and isinstance(quiet.shown, SilentConsole)


def test_each_table_and_batch_is_shown_and_logged(caplog):
    out = io.StringIO()
    console = LoggedConsole(PlainConsole(out))
    with caplog.at_level(logging.INFO, logger="lakefresh"):
        console.table_started("shop.orders", 2)
        console.batch_done(BatchResult("shop.orders", "b1.csv", "published", record_count=3, counts={"N": 3}))
        console.batch_done(BatchResult("shop.orders", "b2.csv", "failed", error="boom"))
        console.table_done(TableResult("shop.orders", error="boom"))
    assert out.getvalue().splitlines() == [
        "shop.orders: 2 new batch(es)",
        "shop.orders b1.csv: published rows=3 N=3 (0.0s)",
        "shop.orders b2.csv: failed rows=0 (0.0s)",
        "shop.orders: FAILED: boom",
    ]
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        ("lakefresh.progress", "INFO", "shop.orders: 2 new batch(es)"),
        ("lakefresh.progress", "INFO", "shop.orders b1.csv: published rows=3 N=3 (0.0s)"),
        ("lakefresh.progress", "WARNING", "shop.orders b2.csv: failed rows=0 (0.0s)"),
        ("lakefresh.progress", "WARNING", "shop.orders: FAILED: boom"),
    ]
