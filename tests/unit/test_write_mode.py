"""The write mode chosen from the pipeline's graph (config/write_mode.py): no JVM here."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from lakefresh.config import load_config
from lakefresh.config.write_mode import chosen
from lakefresh.errors import ConfigError
from lakefresh.lakehouse.backend import Layout, target_layout
from lakefresh.lakehouse.delta import DeltaBackend
from lakefresh.lakehouse.iceberg import IcebergBackend

PIPELINE = """
catalog: {name: cat, warehouse: ./wh}
defaults: {namespace: ns}
tables:
  - name: orders
    source: {kind: files, path: in, format: csv}
    strategy: {kind: key, keys: [id]}
  - name: order_changes
    source: {kind: table_changes, table: ns.orders, keys: [id]}
    strategy: {kind: key, keys: [id]}
  - name: pinned
    source: {kind: files, path: in, format: csv}
    strategy: {kind: key, keys: [id]}
    properties: {write.update.mode: copy-on-write}
  - name: chosen
    source: {kind: files, path: in, format: csv}
    strategy: {kind: key, keys: [id]}
    write_mode: copy-on-write
"""


def config(tmp_path: Path, text: str = PIPELINE):  # type: ignore[no-untyped-def]
    path = tmp_path / "pipeline.yml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return load_config(path)


@pytest.mark.parametrize(
    ("table", "new", "existing"),
    [
        ("orders", "copy-on-write", "copy-on-write"),  # a change feed of the pipeline reads it
        ("order_changes", "merge-on-read", None),  # an existing table keeps its mode
        ("pinned", None, None),  # its properties say; nothing is added
        ("chosen", "copy-on-write", "copy-on-write"),
    ],
)
def test_the_mode_of_a_new_and_of_an_existing_target(tmp_path, table, new, existing):
    c = config(tmp_path)
    [t] = [x for x in c.tables if x.name == table]
    assert chosen(c, t, exists=False) == new
    assert chosen(c, t, exists=True) == existing


def test_the_defaults_mode_applies_to_every_table_without_its_own(tmp_path):
    c = config(
        tmp_path,
        PIPELINE.replace("defaults: {namespace: ns}", "defaults: {namespace: ns, write_mode: merge-on-read}"),
    )
    assert {t.name: chosen(c, t, exists=True) for t in c.tables} == {
        "orders": "merge-on-read",  # said so: the change feed will fail on its merge-on-read commits
        "order_changes": "merge-on-read",
        "pinned": None,
        "chosen": "copy-on-write",
    }


def test_a_target_s_layout_carries_its_mode_as_a_value_and_its_own_properties(tmp_path):
    c = config(tmp_path)
    layouts = {t.name: target_layout(c, t) for t in c.tables}
    assert layouts["orders"] == Layout(write_mode="copy-on-write")
    assert layouts["order_changes"] == Layout(write_mode="merge-on-read")
    assert layouts["pinned"] == Layout(properties={"write.update.mode": "copy-on-write"})
    assert target_layout(c, c.tables[1], exists=True) == Layout()  # an existing table keeps its own


@pytest.mark.parametrize(
    ("backend", "mode", "properties"),
    [
        (
            IcebergBackend,
            "merge-on-read",
            {f"write.{op}.mode": "merge-on-read" for op in ("merge", "update", "delete")},
        ),
        (
            IcebergBackend,
            "copy-on-write",
            {f"write.{op}.mode": "copy-on-write" for op in ("merge", "update", "delete")},
        ),
        (DeltaBackend, "merge-on-read", {"delta.enableDeletionVectors": "true"}),
        (DeltaBackend, "copy-on-write", {"delta.enableDeletionVectors": "false"}),
    ],
)
def test_each_format_says_a_write_mode_in_its_own_settings(backend, mode, properties):
    from importlib import import_module

    words = import_module(backend.__module__)._mode_properties
    assert words(Layout(write_mode=mode)) == properties
    assert words(Layout()) == {}


def test_an_unknown_mode_is_named_with_the_valid_ones(tmp_path):
    with pytest.raises(ConfigError) as info:
        config(tmp_path, PIPELINE.replace("write_mode: copy-on-write", "write_mode: cow"))
    message = str(info.value)
    assert "write_mode" in message and "copy-on-write" in message and "merge-on-read" in message
