"""Spark Connect's tests: a Connect server on loopback (tests/connect/servers.py), started once
for the run, and the tests' shared session is a Connect client of it (no JVM in this process);
its catalog `lf_test` in a local warehouse folder, which the server writes.

A run of its own (`pytest tests/connect`: `make test`'s side chain): once a process has made a
Connect session, pyspark builds Connect's columns, never a classic session's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CATALOG, Workspace, session_settings
from tests.connect.servers import ConnectServer


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def connect(warehouse: Path) -> Iterator[ConnectServer]:
    from lakefresh.config.engine import CatalogConfig

    server = ConnectServer(session_settings(CatalogConfig(name=CATALOG, warehouse=str(warehouse)))).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def spark(warehouse: Path, connect: ConnectServer) -> Iterator[Any]:
    from lakefresh.config.engine import CatalogConfig
    from lakefresh.lakehouse.session import build_session

    settings = session_settings(CatalogConfig(name=CATALOG, warehouse=str(warehouse)))
    try:
        session = build_session({**settings, "spark.remote": connect.url})
    except BaseException:
        print(connect.tail())
        raise
    yield session
    session.stop()


@pytest.fixture
def ws(tmp_path: Path, spark: Any, warehouse: Path) -> Workspace:
    return Workspace(tmp_path, spark, warehouse, lease=True)
