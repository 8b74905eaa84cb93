"""A Spark Connect server on loopback: pyspark's own spark-submit runs Spark's Connect server class
(its jar ships with pyspark 4) with the settings a client cannot give it, as `lakefresh submit-args
PIPELINE --connect-server` prints them (lakehouse/connect.py, `server_settings`): the Iceberg
runtime, the SQL extensions, the driver's JVM options. A JVM of its own, stopped by the process
id it was started with (tests/lake/servers.py, `JavaServer`)."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pyspark

from lakefresh.lakehouse.connect import SERVER_CLASS, server_settings
from tests.lake.servers import JavaServer


class ConnectServer(JavaServer):
    name = "spark-connect"

    def __init__(self, settings: dict[str, str]) -> None:
        super().__init__()
        self.settings = server_settings(settings)

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def ready(self) -> bool:
        """Its gRPC port takes connections (its log says nothing: lakefresh's log settings
        keep a driver's log to errors)."""
        with socket.socket() as probe:
            probe.settimeout(1)
            return probe.connect_ex(("127.0.0.1", self.port)) == 0

    def start(self) -> ConnectServer:
        home = Path(pyspark.__file__).parent
        confs = [f"{k}={v}" for k, v in self.settings.items() if k != "spark.master"]
        confs += [
            f"spark.connect.grpc.binding.port={self.port}",
            "spark.connect.grpc.binding.address=127.0.0.1",
            f"spark.local.dir={self.root}",
        ]
        command = [
            str(home / "bin" / "spark-submit"),
            "--master",
            self.settings.get("spark.master", "local[2]"),
        ]
        command += [arg for conf in confs for arg in ("--conf", conf)]
        env = {
            **os.environ,
            "SPARK_HOME": str(home),
            "PYSPARK_PYTHON": sys.executable,
            "SPARK_LOCAL_IP": "127.0.0.1",
        }
        env.pop("JDK_JAVA_OPTIONS", None)  # a short-lived JVM's (tests/conftest.py): not a server's
        env.pop("SPARK_REMOTE", None)
        env.pop("SPARK_CONNECT_MODE_ENABLED", None)
        self.spawn([*command, "--class", SERVER_CLASS, "spark-internal"], env, timeout=240)
        return self
