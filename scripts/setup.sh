#!/usr/bin/env bash
# Make this checkout ready to run: Java and jarjar (apt), .venv with lakefresh, the Iceberg jars.
# Idempotent and cached: a second run does nothing that is already done.
#
#   LAKEFRESH_NO_BUNDLED_JARS=1  skip jarjar and the jar build (your platform provides Iceberg:
#                                set spark.jars: none or spark.packages in the pipeline)
#   LAKEFRESH_TEST_SERVICES=1    also what the tests start: a PostgreSQL server and its JDBC driver
#                                (Debian's postgresql and libpostgresql-jdbc-java; `make test` sets it)
#   PYTHON=python3.11            the interpreter for .venv
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
bundled=$([ "${LAKEFRESH_NO_BUNDLED_JARS:-0}" = 1 ] && echo 0 || echo 1)

# 1. System packages: a Java runtime for Spark; jarjar to relocate Jackson for the bundled Iceberg.
missing=()
command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
if [ "$bundled" = 1 ] && [ ! -f /usr/share/java/jarjar.jar ] && [ -z "${LAKEFRESH_JARJAR:-}" ]; then
  missing+=(libjarjar-java)
fi
if [ "${LAKEFRESH_TEST_SERVICES:-0}" = 1 ]; then
  compgen -G "/usr/lib/postgresql/*/bin/pg_ctl" >/dev/null || missing+=(postgresql)
  [ -f /usr/share/java/postgresql.jar ] || missing+=(libpostgresql-jdbc-java)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]} with apt-get"
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# 2. The virtual environment, reinstalled only when pyproject.toml changes.
stamp=.venv/.lakefresh-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)-$bundled
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing lakefresh into .venv"
  [ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
  extras="dev"; [ "$bundled" = 1 ] && extras="dev,iceberg"
  # pip's notes about unused local index folders are noise here
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[$extras]" \
    2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
  echo "$want" > "$stamp"
fi

# 3. The Iceberg runtime jar and the relocated Jackson it needs (built once, cached).
if [ "$bundled" = 1 ]; then
  .venv/bin/lakefresh jars >/dev/null
fi
echo "setup: ready"
