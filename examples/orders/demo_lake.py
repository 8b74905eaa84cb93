"""`make demo-lake`: the example pipeline on a lake on this machine. Starts an S3-compatible server
(S3Proxy) and Iceberg's REST catalog server on loopback (the tests' own: tests/lake/servers.py),
uploads freshly generated data to the S3 server, runs the pipeline with its sources on `s3a://`,
its Iceberg tables in the REST catalog (S3FileIO) and its Delta table on `s3://`, prints where each
table lives, then stops both servers."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # the repository: its tests' servers

from tests.lake.servers import BUCKET, Lake, lake_pipeline, upload  # noqa: E402


def where(pipeline, name: str) -> str:
    """The table's location, as its format reports it."""
    qualified = pipeline.backend.qualified(f"{pipeline.config.defaults.namespace}.{name}")
    rows = pipeline.spark.sql(f"DESCRIBE TABLE EXTENDED {qualified}").collect()
    return next((str(r[1]) for r in rows if r[0] == "Location"), "?")


def main() -> int:
    import lakefresh

    began = time.monotonic()
    lake = Lake().start()
    print(f"S3-compatible server (S3Proxy) at {lake.s3.url}, REST catalog at {lake.catalog.url}")
    try:
        with tempfile.TemporaryDirectory(prefix="lakefresh-demo-lake-") as work:
            folder = Path(work)
            subprocess.run([sys.executable, str(HERE / "generate.py"), str(folder / "data")], check=True)
            data = f"s3a://{BUCKET}/example/data"
            os.environ["DEMO_WAREHOUSE"] = lake.catalog.warehouse  # the Delta table's folder
            text = lake_pipeline((HERE / "pipeline.yml").read_text(encoding="utf-8"), lake, "lake", data)
            (folder / "pipeline.yml").write_text(text, encoding="utf-8")
            pipeline = lakefresh.load_pipeline(folder / "pipeline.yml")
            upload(pipeline.spark, folder / "data", data)
            print(f"== the example's data uploaded to {data}; lakefresh run")
            result = pipeline.run()
            for table in result.tables:
                print(f"  {table.table}: {len(table.batches)} batches")
            print("== where each table lives")
            for table in pipeline.config.tables:
                print(f"  {table.name:<22} {where(pipeline, table.name)}")
            print(f"== {len(lake.s3.objects())} objects in bucket {BUCKET}; a second run takes nothing")
            again = pipeline.run()
            print(f"  {sum(len(t.batches) for t in again.tables)} batches taken")
            pipeline.spark.stop()
            return 0 if result.ok and again.ok else 1
    finally:
        lake.stop()
        print(f"== both servers stopped ({time.monotonic() - began:.0f} s in all)")


if __name__ == "__main__":
    raise SystemExit(main())
