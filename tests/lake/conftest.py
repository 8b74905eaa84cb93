"""The lake's tests: an S3-compatible server and a REST catalog on loopback (tests/lake/servers.py),
started once for the run, and the tests' shared session on them: its catalog `lf_test` is the
REST catalog (warehouse `s3://lake/warehouse`, S3FileIO), its files (`s3a://`) on the same server.

A run of its own (`pytest tests/lake`: `make test`'s side chain), as its session differs from
the other tests' from the JVM's start (S3's connector and its settings)."""

from __future__ import annotations

import itertools
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CATALOG, Workspace, start_session
from tests.lake.servers import BUCKET, Lake

_sources = itertools.count()
# A server on loopback that does not answer is down, not slow: both S3 clients give up after a
# short retry (the defaults wait up to a minute; tests/lake/test_lake_faults.py stops the server)
FAIL_FAST = {
    "catalog": {"s3.retry.num-retries": "2", "s3.retry.min-wait-ms": "100", "s3.retry.max-wait-ms": "500"},
    "spark": {
        "spark.hadoop.fs.s3a.retry.limit": "2",
        "spark.hadoop.fs.s3a.retry.interval": "100ms",
        "spark.hadoop.fs.s3a.attempts.maximum": "2",
    },
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def lake() -> Iterator[Lake]:
    started = Lake().start()
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="session")
def spark(lake: Lake) -> Iterator[Any]:
    from lakefresh.config.engine import CatalogConfig

    catalog = CatalogConfig(
        name=CATALOG,
        type="rest",
        warehouse=lake.catalog.warehouse,
        properties={"uri": lake.catalog.url, **FAIL_FAST["catalog"]},
    )
    try:
        session = start_session(catalog, lake.storage_config(), FAIL_FAST["spark"])
    except BaseException:
        print(lake.s3.tail(), lake.catalog.tail())
        raise
    yield session
    session.stop()


class LakeWorkspace(Workspace):
    """A test's namespaces and pipeline file, its sources on the S3 server: `write` uploads
    through Hadoop's S3A (as any writer of a landing zone would), `uri` names them there."""

    def __init__(self, root: Path, spark: Any, lake: Lake) -> None:
        super().__init__(root, spark, Path(tempfile.gettempdir()), lease=True)
        self.lake = lake
        self.prefix = f"s3a://{BUCKET}/sources/s{next(_sources)}_{os.getpid()}"

    def uri(self, relative: str) -> str:
        return f"{self.prefix}/{relative}"

    def write(self, relative: str, text: str | bytes, mtime: float | None = None) -> Path:
        """Written locally, then uploaded (an object's time is its upload's: `mtime` is not kept)."""
        from lakefresh.lakehouse.storage import storage_for

        path = super().write(relative, text)
        storage_for(self.spark).copy(str(path), self.uri(relative))
        return path

    def publish(self, relative: str) -> None:
        """The local folder `relative` uploaded whole (objects it had are overwritten)."""
        from tests.lake.servers import upload

        upload(self.spark, self.root / relative, self.uri(relative))

    def catalog_yaml(self) -> str:
        return (
            self.lake.catalog_yaml(CATALOG, self.control_namespace)
            + self.catalog_extra
            + self.lake.storage_yaml()
        )


@pytest.fixture
def ws(tmp_path: Path, spark: Any, lake: Lake) -> LakeWorkspace:
    return LakeWorkspace(tmp_path, spark, lake)
