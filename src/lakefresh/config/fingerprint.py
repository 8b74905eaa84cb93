"""The fingerprint of what shapes a table's result, recorded with every batch.

A batch applied under one configuration and the next under another would leave a table that no
configuration describes: keys changed, a strategy option changed, a column parsed differently.
Every attempt records :func:`shaping` of its table (as JSON, secrets masked) and its hash; a run
that finds the table's configuration changed since its last published batch, in a way that
changes results, stops that table and names the change (:func:`changes`).

What shapes results: the strategy and all its options, the transform, the lookups, and how the
source parses rows (format, CSV dialect, encoding, time zone, declared column types, a query).
What does not: where batches come from and when they are taken (paths, patterns, ordering,
markers, look-backs, watermarks, connection settings), table properties, partitioning, audits,
dependencies; and a declared column *added* to the schema (schema evolution takes it as it
takes a new column in a file). Pure Python: `validate` can tell it without a JVM.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from lakefresh.secrets import masked

if TYPE_CHECKING:
    from lakefresh.config.models import TableConfig

# Source settings that say where and when batches are taken, or how to connect: not the rows.
NOT_SHAPING = frozenset(
    {
        "path",
        "layout",
        "pattern",
        "order_by",
        "completion_marker",
        "min_file_age",
        "mode",
        "look_back_interval",
        "backfill_start_date",
        "backfill_behavior",
        "model_grace_period",
        "url",
        "user",
        "password",
        "driver",
        "options",
        "watermark_column",
        "initial_watermark",
        "look_back",
        "table",
        "load_id",
    }
)
SCHEMA = "schema"
# Moves a table may make from the setting its batches were applied under without a change of its
# result (path, before, after; None: not set): versions that stored their re-sent rows keep them,
# and `derive` reads them as its own. Not back: `record` re-cuts history from stored re-sends,
# which versions written under `derive` do not hold.
SAME_RESULT = frozenset(
    {("strategy.resent_rows", "record", "derive"), ("strategy.resent_rows", None, "derive")}
)


def shaping(table: TableConfig) -> dict[str, Any]:
    """The settings of `table` that shape its rows (secrets masked)."""
    source = table.source.model_dump(mode="json", by_alias=True, exclude_none=True)
    out = {
        "strategy": table.strategy.model_dump(mode="json", by_alias=True, exclude_none=True),
        "source": {k: v for k, v in source.items() if k not in NOT_SHAPING},
        "transform": None if table.transform is None else table.transform.model_dump(mode="json"),
        "lookups": [lookup.model_dump(mode="json", exclude_none=True) for lookup in table.lookups],
    }
    drops = [r.model_dump(mode="json", exclude_none=True) for r in table.rules if r.action == "drop"]
    if drops:  # rules that remove rows shape the result; warnings and failures do not
        out["drop_rules"] = drops
    return masked(out)  # type: ignore[return-value]


def fingerprint(table: TableConfig) -> tuple[str, str]:
    """(hash, JSON) of :func:`shaping`: what a batch's attempt records."""
    text = json.dumps(shaping(table), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16], text


def changes(before: str, now: str) -> list[str]:
    """The result-shaping differences between two recorded JSON settings, one line each
    (`strategy.keys: ['id'] -> ['id', 'region']`); a declared column added to the source's
    schema is not one, nor a move in `SAME_RESULT`."""
    old, new = _flat(json.loads(before)), _flat(json.loads(now))
    out = []
    for path in sorted(old.keys() | new.keys()):
        if old.get(path) == new.get(path) or _same_result(path, old.get(path), new.get(path)):
            continue
        if path.startswith(f"source.{SCHEMA}.") and path not in old:
            continue  # a new column: schema evolution, not a change of result
        out.append(f"{path}: {_shown(old, path)} -> {_shown(new, path)}")
    return out


def _same_result(path: str, before: Any, after: Any) -> bool:
    return isinstance(before, str | None) and isinstance(after, str) and (path, before, after) in SAME_RESULT


def _flat(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(_flat(value, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): data}


def _shown(values: dict[str, Any], path: str) -> str:
    return repr(values[path]) if path in values else "(not set)"
