"""lakefresh: declarative refresh strategies that keep Iceberg lakehouse tables fresh.

It logs through Python's `logging`, under the `lakefresh` logger (`lakefresh.progress`: a run's
tables and batches; `lakefresh.api`: which road a read took), and shows nothing of it unless the
application configures logging; progress on screen is the console's (lakefresh/console.py).
"""

import logging

from lakefresh.api import Pipeline, load_pipeline
from lakefresh.config import PipelineConfig, load_config
from lakefresh.errors import ConfigError, LakefreshError, LeaseHeld
from lakefresh.results import BatchResult, RunResult, TableResult, TableStatus

__version__ = "0.1.0"

logging.getLogger("lakefresh").addHandler(logging.NullHandler())

__all__ = [
    "BatchResult",
    "ConfigError",
    "LakefreshError",
    "LeaseHeld",
    "Pipeline",
    "PipelineConfig",
    "RunResult",
    "TableResult",
    "TableStatus",
    "__version__",
    "load_config",
    "load_pipeline",
]
