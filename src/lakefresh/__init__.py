"""lakefresh: declarative refresh strategies that keep Iceberg lakehouse tables fresh."""

from lakefresh.api import Pipeline, load_pipeline
from lakefresh.config import PipelineConfig, load_config
from lakefresh.errors import ConfigError, LakefreshError, LeaseHeld
from lakefresh.results import BatchResult, RunResult, TableResult, TableStatus

__version__ = "0.1.0"

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
