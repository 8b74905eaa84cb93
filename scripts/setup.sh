#!/usr/bin/env bash
# Make this checkout ready to run: Java (apt), .venv with lakefresh, the Iceberg runtime from Maven
# Central. Idempotent and cached: a second run does nothing that is already done.
#
#   LAKEFRESH_NO_JARS=1        skip the jar step (your platform provides Iceberg: set
#                              spark.jars: none in the pipeline); LAKEFRESH_NO_BUNDLED_JARS=1 too
#   LAKEFRESH_TEST_SERVICES=1  also what the tests use: a PostgreSQL server (Debian's postgresql)
#                              and its JDBC driver from Maven Central, a headless browser
#                              (Debian's chromium), dbt in .venv-peers (a test adopts the table
#                              a real `dbt snapshot` writes); `make test` sets it
#   LAKEFRESH_NO_PEERS=1       skip .venv-peers (`make test`'s main chain: its side chain, which
#                              runs the dbt test, makes it there, off the main chain's setup)
#   LAKEFRESH_PEERS=1          .venv-peers without the tests' other services (`make bench-peers`)
#   LAKEFRESH_DOCS=1           also the documentation tools (the `docs` extra: MkDocs and its
#                              theme) on the default line; LAKEFRESH_TEST_SERVICES=1 implies it,
#                              since `make test` builds the site; `make docs` sets it
#   LAKEFRESH_NO_CLASS_ARCHIVE=1  skip the archive of Spark's classes that local sessions start
#                              from (`lakefresh jars --class-archive`: about 50 s and 170 MB, once)
#   LAKEFRESH_SPARK=3.5        the other supported Spark line (default 4.1), in .venv-spark3.5
#   PYTHON=python3.11          the interpreter for the virtual environment
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
default_line=4.1
line=${LAKEFRESH_SPARK:-$default_line}
case "$line" in 4.1|3.5) ;; *) echo "setup: LAKEFRESH_SPARK must be 4.1 or 3.5, got $line" >&2; exit 2;; esac
venv=.venv
[ "$line" = "$default_line" ] || venv=".venv-spark$line"
jars=1
[ "${LAKEFRESH_NO_JARS:-0}" = 1 ] && jars=0
[ "${LAKEFRESH_NO_BUNDLED_JARS:-0}" = 1 ] && jars=0

# Two setups may run at once (`make test` sets up both Spark lines side by side): the steps that
# change the machine's shared state (apt; the Ivy cache the jars resolve into) hold a lock.
lock=${TMPDIR:-/tmp}/lakefresh-setup-$(id -u).lock
with_lock() {  # a function of this script, run holding the lock (where flock exists)
  if command -v flock >/dev/null 2>&1; then exec 9>"$lock"; flock 9; fi
  # the function's commands do not inherit the lock's descriptor: a server apt starts (the
  # PostgreSQL package's) would otherwise hold the lock for as long as it runs
  "$@" 9>&-
  exec 9>&-
}

# 1. System packages: a Java runtime for Spark; the tests' PostgreSQL server.
system_packages() {
  missing=()
  command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
  if [ "${LAKEFRESH_TEST_SERVICES:-0}" = 1 ]; then
    compgen -G "/usr/lib/postgresql/*/bin/pg_ctl" >/dev/null || missing+=(postgresql)
    command -v chromium >/dev/null 2>&1 || missing+=(chromium)  # opens `lakefresh report`'s file
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]} with apt-get"
    sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}
with_lock system_packages

# 2. The virtual environment (Spark line $line), reinstalled only when pyproject.toml changes or
#    an extra is wanted that is not installed yet (the docs extra: the stamp ends in " docs").
stamp=$venv/.lakefresh-installed
want="$(sha256sum pyproject.toml | cut -d' ' -f1) spark$line"
extras="dev,spark${line//./}"
docs=0
if [ "$line" = "$default_line" ] && { [ "${LAKEFRESH_DOCS:-0}" = 1 ] || [ "${LAKEFRESH_TEST_SERVICES:-0}" = 1 ]; }; then
  docs=1
fi
installed="$(cat "$stamp" 2>/dev/null || true)"
if [ "$installed" = "$want docs" ]; then
  want="$want docs"  # a setup without the docs extra keeps it installed
elif [ "$docs" = 1 ]; then
  want="$want docs" extras="$extras,docs,connect"  # and a Connect client's (tests/connect/)
fi
if [ ! -x $venv/bin/python ] || [ "$installed" != "$want" ]; then
  echo "setup: installing lakefresh with Spark $line into $venv"
  [ -x $venv/bin/python ] || "$PYTHON" -m venv $venv
  # pip's notes about unused local index folders are noise here
  $venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[$extras]" \
    2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
  echo "$want" > "$stamp"
fi

# 2b. dbt for the tests (tests/spark/test_adopt_dbt.py runs a real `dbt snapshot`): dbt-core pins
#     packages the `dev` extra cannot take, so it gets a virtual environment of its own, the one
#     the peers' benchmark uses (`make bench-peers`); pip's cache serves it the same pyspark.
peers=${LAKEFRESH_PEERS:-0}
[ "${LAKEFRESH_TEST_SERVICES:-0}" = 1 ] && [ "${LAKEFRESH_NO_PEERS:-0}" != 1 ] && peers=1
if [ "$line" = "$default_line" ] && [ "$peers" = 1 ]; then
  peers_want="$(sha256sum pyproject.toml | cut -d' ' -f1) peers"
  if [ ! -x .venv-peers/bin/python ] || [ "$(cat .venv-peers/.lakefresh-installed 2>/dev/null || true)" != "$peers_want" ]; then
    echo "setup: installing dbt-spark (the peers' benchmark, a test's dbt snapshot) into .venv-peers"
    [ -x .venv-peers/bin/python ] || "$PYTHON" -m venv .venv-peers
    .venv-peers/bin/python -m pip install --quiet --disable-pip-version-check -e ".[spark41,peers]" \
      2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
    echo "$peers_want" > .venv-peers/.lakefresh-installed
  fi
fi

# 3. The jars, resolved once from Maven Central by Spark's own resolution (cached; see
#    `lakefresh jars --help`). The tests' sessions also load Delta Lake and PostgreSQL's JDBC driver.
jars_step() {
  if [ "$jars" = 1 ]; then
    $venv/bin/lakefresh jars >/dev/null
    # the example pipeline has Delta Lake tables (on the default line)
    if [ "$line" = "$default_line" ]; then
      $venv/bin/lakefresh jars --delta >/dev/null
      $venv/bin/lakefresh jars --delta --no-iceberg >/dev/null  # a pipeline with Delta tables only
    fi
    if [ "${LAKEFRESH_TEST_SERVICES:-0}" = 1 ]; then
      pg="$($venv/bin/python -c 'from lakefresh.lakehouse.jars import postgresql_driver as d; print(d())')"
      $venv/bin/lakefresh jars --package "$pg" >/dev/null
      # the tests' sessions load Delta Lake (on 3.5, for the Delta contract with its control tables)
      $venv/bin/lakefresh jars --delta --package "$pg" >/dev/null
      if [ "$line" = "$default_line" ]; then
        # the lake's tests (tests/lake/): their session with S3's connector, an S3-compatible
        # server and Iceberg's REST catalog server
        $venv/bin/lakefresh jars --delta --s3 --package "$pg" >/dev/null
        $venv/bin/python -c "from lakefresh.lakehouse.jars import main; raise SystemExit(main(['--test-servers']))" >/dev/null
      fi
    fi
  fi
}
with_lock jars_step

# 4. Spark's classes in a class-data archive, once per JDK and Spark install: every later local
#    session starts in about half the CPU (lakehouse/class_archive.py). Skipped without 2 GB free.
if [ "${LAKEFRESH_NO_CLASS_ARCHIVE:-0}" != 1 ]; then
  if ! problem=$($venv/bin/lakefresh jars --class-archive 2>&1 >/dev/null); then
    echo "setup: sessions start without a class archive (${problem#Error: })"
  fi
fi
echo "setup: ready ($venv, Spark $line)"
