"""`lakefresh init`: a starter project that runs as it is, and the pipeline file's JSON Schema.

The starter is a folder with a pipeline file (one `key` table over a folder of CSV files, with
a freshness bound and the settings a first pipeline needs, commented), one batch to load, the
JSON Schema beside it (the file's first line points editors to it, for completion and checks
as one types), and a .gitignore for what runs write. Like `dbt init`, it refuses to write over
an existing pipeline file.
"""

from __future__ import annotations

import json
from pathlib import Path

from lakefresh.errors import ConfigError

SCHEMA_FILE = "pipeline.schema.json"

PIPELINE = """\
# yaml-language-server: $schema=./{schema}
# A lakefresh pipeline: `lakefresh validate pipeline.yml` checks it without Spark,
# `lakefresh run pipeline.yml` applies every new batch exactly once,
# `lakefresh status pipeline.yml` and `lakefresh freshness pipeline.yml` say where tables stand.
catalog:
  name: {name}
  type: hadoop              # a warehouse folder; rest, jdbc, glue, hive, nessie for shared catalogs
  warehouse: ./warehouse    # relative to this file
spark:
  master: local[2]
defaults:
  namespace: {name}

tables:
  - name: orders
    source:
      kind: files            # every file dropped into data/orders is a batch, taken once, in name order
      path: data/orders
      format: csv
      schema: {{order_id: int, customer: string, amount: 'decimal(10,2)', updated_at: timestamp}}
    strategy:
      kind: key              # the latest row of each order_id; older rows than the stored one are ignored
      keys: [order_id]
      date_column: updated_at
    freshness: {{warn_after: 1d, error_after: 2d}}
"""

FIRST_BATCH = """\
order_id,customer,amount,updated_at
1,ada,12.50,2026-01-05 09:00:00
2,grace,40.00,2026-01-05 09:30:00
3,alan,7.25,2026-01-05 10:15:00
"""

IGNORED = "warehouse/\nspark-warehouse/\nreport.html\n"


def pipeline_schema() -> dict[str, object]:
    """The pipeline file's JSON Schema, generated from its models (config/models.py)."""
    from lakefresh.config.models import PipelineConfig

    schema = PipelineConfig.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "lakefresh pipeline"
    return schema


def write_starter(folder: Path, name: str | None = None) -> list[Path]:
    """Write the starter project into `folder` (made if missing); the files written. A
    ConfigError, before anything is written, when it already holds a pipeline file."""
    name = name or _identifier(folder.resolve().name)
    pipeline = folder / "pipeline.yml"
    if pipeline.exists():
        raise ConfigError(f"{pipeline} exists already: lakefresh init writes a new project, never over one")
    files = {
        pipeline: PIPELINE.format(name=name, schema=SCHEMA_FILE),
        folder / SCHEMA_FILE: json.dumps(pipeline_schema(), indent=2) + "\n",
        folder / "data" / "orders" / "orders_001.csv": FIRST_BATCH,
        folder / ".gitignore": IGNORED,
    }
    for path, text in files.items():
        if path.exists() and path.name != SCHEMA_FILE:
            continue  # a file of the user's own stays as it is
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return list(files)


def _identifier(text: str) -> str:
    """A folder's name as a catalog and namespace name: letters, digits and underscores."""
    cleaned = "".join(c if c.isalnum() else "_" for c in text.lower()).strip("_")
    return cleaned if cleaned and not cleaned[0].isdigit() else f"lake_{cleaned}".rstrip("_")
