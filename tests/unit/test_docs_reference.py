"""The docs site's generated configuration reference (docs/hooks/reference.py) reaches every
section of a pipeline file, the nested ones included."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

HOOK = Path(__file__).resolve().parents[2] / "docs" / "hooks" / "reference.py"


@pytest.fixture(scope="module")
def reference():
    pytest.importorskip("typer")
    spec = importlib.util.spec_from_file_location("docs_reference_hook", HOOK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_config_reference_has_every_top_level_section_and_storage_s3(reference):
    from lakefresh.config.models import PipelineConfig

    page = reference.config_reference()
    for name in PipelineConfig.model_fields:
        assert f"| `{name}` |" in page, name
    assert "### `storage.s3` {#s3-config}" in page
    for field in ("endpoint", "region", "path_style", "access_key_id", "secret_access_key", "checksums"):
        assert f"| `{field}` |" in page, field
