"""A lake on loopback for the tests of object storage and a REST catalog: an S3-compatible server
(S3Proxy, its filesystem storage in a temporary folder) and Iceberg's REST catalog server (the
class behind Iceberg's own REST test fixture, backed by a JDBC catalog in SQLite, its warehouse on
the S3 server). Each runs in a JVM of its own on a free port, from jars Maven Central serves
(pinned in lakehouse/jars.py, resolved by `make test-setup`); stopped by the process id it was
started with. Their logs stay in their folders while they run, and are shown when one fails."""

from __future__ import annotations

import collections
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pyspark

ACCESS_KEY = "lakefresh-test-key"
SECRET_KEY = "lakefresh-test-secret-4d1c"
BUCKET = "lake"
REGION = "us-east-1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def classpath(coordinates: list[str], classified: list[str] = ()) -> str:
    """The files of these coordinates (resolved once, cached: lakehouse/jars.py) as a classpath."""
    from lakefresh.lakehouse import jars

    files = [*jars.resolve(coordinates), *(jars.fetch_classified(c) for c in classified)]
    return os.pathsep.join(files)


class JavaServer:
    """A server in a JVM of its own, in a process group of its own, its output in a log file."""

    name = "server"

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix=f"lf-{self.name}-"))
        self.port = free_port()
        self.log = self.root / f"{self.name}.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def spawn(self, command: list[str], env: dict[str, str] | None = None, timeout: float = 90) -> None:
        with open(self.log, "ab") as log:  # a server started again: its log goes on
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        deadline = time.monotonic() + timeout
        while not self.ready():
            if self.process.poll() is not None or time.monotonic() > deadline:
                text = self.log.read_text(errors="replace")[-3000:]
                self.stop()
                raise RuntimeError(f"{self.name} did not start on port {self.port}:\n{text}")
            time.sleep(0.3)

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(self.probe(), timeout=2):
                return True
        except urllib.error.HTTPError:
            return True  # it answers
        except OSError:
            return False

    def probe(self) -> str:
        return self.url

    def stop(self) -> None:
        """Stop the process it started (and its group), then remove its folder."""
        self.halt()
        shutil.rmtree(self.root, ignore_errors=True)

    def halt(self) -> None:
        """Stop the process it started (and its group); its folder stays (`start` again)."""
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=20)

    def tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.is_file() else ""


LOGBACK = """<configuration>
  <appender name="out" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5level %logger{0} - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="out"/></root>
</configuration>
"""


def java() -> str:
    home = os.environ.get("JAVA_HOME")
    return str(Path(home) / "bin" / "java") if home else "java"


class S3Server(JavaServer):
    """S3Proxy on loopback: AWS signatures (v2 or v4) with the tests' key, path-style buckets,
    objects as files of a temporary folder. The bucket is made as its storage makes one: a
    folder of that storage."""

    name = "s3proxy"

    def start(self) -> S3Server:
        from lakefresh.lakehouse import jars

        store = self.root / "store"
        (store / BUCKET).mkdir(parents=True, exist_ok=True)  # started again: the same objects
        properties = self.root / "s3proxy.conf"
        properties.write_text(
            "\n".join(
                [
                    f"s3proxy.endpoint={self.url}",
                    "s3proxy.authorization=aws-v2-or-v4",
                    f"s3proxy.identity={ACCESS_KEY}",
                    f"s3proxy.credential={SECRET_KEY}",
                    "jclouds.provider=filesystem",  # (filesystem-nio2 wants more configuration)
                    f"jclouds.filesystem.basedir={store}",
                    "",
                ]
            ),
            encoding="utf-8",
        )
        logging = self.root / "logback.xml"  # its log at INFO (without a configuration: DEBUG)
        logging.write_text(LOGBACK, encoding="utf-8")
        cp = classpath(jars.s3_server())
        main = ["org.gaul.s3proxy.Main", "--properties", str(properties)]
        self.spawn([java(), "-Xmx256m", f"-Dlogback.configurationFile={logging}", "-cp", cp, *main])
        return self

    def objects(self, prefix: str = "") -> list[str]:
        """The keys the store holds under `prefix` (read from its storage folder)."""
        base = self.root / "store" / BUCKET
        found = [p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_file()]
        return sorted(k for k in found if k.startswith(prefix))


class RestCatalogServer(JavaServer):
    """Iceberg's REST catalog server on loopback, backed by a JDBC catalog in SQLite (a file of
    its folder), its warehouse `s3://lake/warehouse` on the S3 server, through S3FileIO."""

    name = "iceberg-rest"

    def __init__(self, s3: S3Server) -> None:
        super().__init__()
        self.s3 = s3
        self.warehouse = f"s3://{BUCKET}/warehouse"

    def probe(self) -> str:
        return f"{self.url}/v1/config"

    def start(self) -> RestCatalogServer:
        from lakefresh.lakehouse import jars

        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("CATALOG_")},
            "CATALOG_URI": f"jdbc:sqlite:{self.root / 'catalog.db'}",
            "CATALOG_JDBC_SCHEMA__VERSION": "V1",
            "CATALOG_WAREHOUSE": self.warehouse,
            "CATALOG_IO__IMPL": "org.apache.iceberg.aws.s3.S3FileIO",
            "CATALOG_S3_ENDPOINT": self.s3.url,
            "CATALOG_S3_PATH__STYLE__ACCESS": "true",
            "CATALOG_S3_ACCESS__KEY__ID": ACCESS_KEY,
            "CATALOG_S3_SECRET__ACCESS__KEY": SECRET_KEY,
            "CATALOG_CLIENT_REGION": REGION,
            # an S3 server on loopback that does not answer is down, not slow: the catalog server's
            # S3 client gives up after a short retry too, as the tests' own clients do
            # (tests/lake/conftest.py, FAIL_FAST; the defaults wait minutes per request)
            "CATALOG_S3_RETRY_NUM__RETRIES": "2",
            "CATALOG_S3_RETRY_MIN__WAIT__MS": "100",
            "CATALOG_S3_RETRY_MAX__WAIT__MS": "500",
            "CATALOG_REST_PORT": str(self.port),
        }
        # Hadoop's Configuration, which the server builds its catalog with: pyspark's own client
        hadoop = sorted(str(p) for p in (Path(pyspark.__file__).parent / "jars").glob("hadoop-client-*.jar"))
        cp = os.pathsep.join(
            [classpath(jars.rest_catalog_server(), jars.rest_catalog_server_classified()), *hadoop]
        )
        self.spawn([java(), "-Xmx256m", "-cp", cp, "org.apache.iceberg.rest.RESTCatalogServer"], env)
        return self


class Link:
    """The compute's road to the S3 server: a relay on loopback between lakefresh's clients (the
    session's S3A and S3FileIO, the tests' uploads) and the server, byte for byte, that a test
    can break as a network breaks. The REST catalog server reaches the S3 server directly, as a
    catalog service in another network would, so an outage of this road is the compute's alone.

    - `cut()`: every connection is dropped and a new one is closed on arrival, until `mend()`;
    - `fail_next(method, path, count, how)`: the next `count` requests whose first line has this
      method and a path containing `path` are dropped unanswered (`how="drop"`: the connection
      closes) or answered `503 Slow Down` (`how="503"`, S3's throttling reply, connection closed);
      `failed` counts the requests so treated; `requests` counts every request by method (what
      a run costs in round trips to the store: bench/bench_capacity.py --lake)."""

    SLOW_DOWN_BODY = (
        b'<?xml version="1.0" encoding="UTF-8"?>'
        b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
    )
    SLOW_DOWN = (
        b"HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nConnection: close\r\n"
        + f"Content-Length: {len(SLOW_DOWN_BODY)}\r\n\r\n".encode()
        + SLOW_DOWN_BODY
    )

    def __init__(self, upstream_port: int) -> None:
        self.upstream = upstream_port
        self.port = free_port()
        self.failed = 0
        self.requests: collections.Counter[str] = collections.Counter()
        self._down = False
        self._rules: list[list[Any]] = []
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._listener = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._serve, daemon=True, name="s3-link").start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def cut(self) -> None:
        with self._lock:
            self._down = True
            for s in list(self._open):
                _close(s)

    def mend(self) -> None:
        with self._lock:
            self._down = False

    def fail_next(self, method: str, path: str, count: int = 1, how: str = "drop") -> None:
        with self._lock:
            self._rules.append([f"{method} ".encode(), path.encode(), count, how])

    def close(self) -> None:
        self.cut()
        _close(self._listener)

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                down = self._down
            if down:
                _close(client)
                continue
            try:
                server = socket.create_connection(("127.0.0.1", self.upstream))
            except OSError:
                _close(client)
                continue
            with self._lock:
                self._open.update((client, server))
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, requests: bool) -> None:
        try:
            while data := source.recv(65536):
                how = self._failing(data) if requests else None
                if how == "503":
                    source.sendall(self.SLOW_DOWN)
                if how is not None:
                    break
                sink.sendall(data)
        except OSError:
            pass
        with self._lock:
            self._open.difference_update((source, sink))
        _close(source)
        _close(sink)

    def _failing(self, data: bytes) -> str | None:
        """How this chunk's request fails, if it starts a request a rule names."""
        line = data.split(b"\r\n", 1)[0]
        method = line.split(b" ", 1)[0]
        with self._lock:
            if method in METHODS and line.endswith(b" HTTP/1.1"):
                self.requests[method.decode()] += 1
            for rule in self._rules:
                method, path, count, how = rule
                if count > 0 and line.startswith(method) and path in line:
                    rule[2] -= 1
                    self.failed += 1
                    return str(how)
        return None


METHODS = (b"GET", b"PUT", b"HEAD", b"POST", b"DELETE")


def _close(s: socket.socket) -> None:
    with contextlib.suppress(OSError):
        s.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        s.close()


class Lake:
    """The S3 server and the REST catalog, started together, stopped together; lakefresh's
    clients reach the S3 server through `link`."""

    def __init__(self) -> None:
        self.s3 = S3Server()
        self.catalog = RestCatalogServer(self.s3)
        self.link: Link | None = None

    def start(self) -> Lake:
        try:
            self.s3.start()
            self.catalog.start()
            self.link = Link(self.s3.port)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.link is not None:
            self.link.close()
        self.catalog.stop()
        self.s3.stop()

    @property
    def endpoint(self) -> str:
        """The S3 endpoint lakefresh's clients are given: the link's."""
        return self.link.url if self.link is not None else self.s3.url

    def storage_config(self) -> Any:
        """The same as a config model (lakefresh.config.engine.StorageConfig)."""
        from lakefresh.config.engine import S3Config, StorageConfig

        s3 = S3Config(
            endpoint=self.endpoint,
            region=REGION,
            path_style=True,
            access_key_id=ACCESS_KEY,
            secret_access_key=SECRET_KEY,
        )
        return StorageConfig(s3=s3)

    def storage_yaml(self) -> str:
        """The pipeline's `storage:` section for this lake (credentials as a user gives them)."""
        return (
            "storage:\n  s3:\n"
            f"    endpoint: {self.endpoint}\n    region: {REGION}\n    path_style: true\n"
            f"    access_key_id: {ACCESS_KEY}\n    secret_access_key: {SECRET_KEY}\n"
        )

    def catalog_yaml(self, name: str, control_namespace: str) -> str:
        return (
            f"catalog:\n  name: {name}\n  type: rest\n  warehouse: {self.catalog.warehouse}\n"
            f"  control_namespace: {control_namespace}\n"
            f"  properties:\n    uri: {self.catalog.url}\n"
        )


def upload(spark: Any, local: Path, uri: str) -> None:
    """A local file or folder (recursively, in name order) to `uri` on the S3 server, file by file
    through Hadoop's S3A output stream (lakefresh's storage_for(spark).copy, as LakeWorkspace.write). Not
    S3A's copyFromLocalFile: on the lake's default settings it uploads through the AWS SDK's async
    multipart client, whose trailing CRC32 checksum S3Proxy refuses (storage.s3.checksums:
    when_required turns that road off)."""
    from lakefresh.lakehouse.storage import storage_for

    storage = storage_for(spark)
    files = [local] if local.is_file() else sorted(p for p in local.rglob("*") if p.is_file())
    for path in files:
        target = uri if path == local else f"{uri}/{path.relative_to(local).as_posix()}"
        storage.copy(str(path), target)


def lake_pipeline(text: str, lake: Lake, catalog: str, data: str) -> str:
    """The example's pipeline on the lake: its `catalog:` and `spark:` sections replaced by the
    REST catalog's and the S3 server's (a `storage:` section), its sources' folders under `data`
    (an `s3a://` URI)."""
    head = lake.catalog_yaml(catalog, "lakefresh") + lake.storage_yaml()
    body = text[text.index("defaults:") :].replace("path: data/", f"path: {data}/")
    return text[: text.index("catalog:")] + head + "spark:\n  master: local[2]\n\n" + body
