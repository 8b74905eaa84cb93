"""Pipeline configuration: typed models and the loader. Imports no pyspark."""

from lakefresh.config.engine import CatalogConfig, SparkConfig
from lakefresh.config.graph import dependency_order
from lakefresh.config.loader import load_config
from lakefresh.config.models import AuditConfig, Defaults, PipelineConfig, TableConfig
from lakefresh.config.sources import CsvOptions, FilesSourceConfig, SourceConfig
from lakefresh.config.strategies import (
    AppendStrategyConfig,
    DeleteRule,
    FullStrategyConfig,
    KeyStrategyConfig,
    StrategyConfig,
)

__all__ = [
    "AppendStrategyConfig",
    "AuditConfig",
    "CatalogConfig",
    "CsvOptions",
    "Defaults",
    "DeleteRule",
    "FilesSourceConfig",
    "FullStrategyConfig",
    "KeyStrategyConfig",
    "PipelineConfig",
    "SourceConfig",
    "SparkConfig",
    "StrategyConfig",
    "TableConfig",
    "dependency_order",
    "load_config",
]
