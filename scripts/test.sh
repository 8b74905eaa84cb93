#!/usr/bin/env bash
# `make test`: set up, lint and run every test, in two chains side by side from the start.
#
#   this shell:      the default line's setup (with the tests' services and the docs tools but
#                    dbt's environment, which the side chain makes for its dbt test), lint,
#                    the documentation site (--strict), then every test on Spark 4.1 but the
#                    side chain's files
#   in background:   the 3.5 line's setup, the contract suites plus the ANSI and nested JSON
#                    tests and the `key` contract on Delta on Spark 3.5, then (once the default
#                    line is set up, and dbt's environment made) the Delta Lake tests, most of
#                    the peers' examples and slow files of the main suite on 4.1, then the
#                    lake's tests (object storage, a REST catalog) and Spark Connect's (a
#                    Connect server on loopback)
#
# Each pytest run has its one shared SparkSession. A run spends much of its time in
# single-threaded driver work (planning, commits, Py4J), so two of them on two cores take about
# as long as the longer one alone; the two setups (pip, mostly one core each) overlap the same
# way. The background chain's output follows this shell's. Exit status: non-zero when anything
# failed.
set -uo pipefail
cd "$(dirname "$0")/.."

SPARK35_TESTS=(tests/spark/test_contract_strategies.py tests/spark/test_contract_sources.py tests/spark/test_ansi.py
  tests/spark/test_nested_json.py
  # the `key` contract on Delta, its control tables on Delta too, in a session with Iceberg 1.10's
  # extensions (whose row-lineage rule fails an UPDATE statement on a Delta table: the control
  # tables' marks go through Delta's API; docs/jars.md, "Spark lines")
  "tests/spark/test_delta.py::test_the_strategy_contract_holds_on_delta[key]")
DELTA_TESTS=(tests/spark/test_delta.py tests/spark/test_delta_changes.py)
# most of the peers' published examples run in the side chain too, after the Delta tests (the
# change-log and custom ones run in the main run, so that the two chains take about as long)
PEER_TESTS=(tests/spark/test_peer_key.py tests/spark/test_peer_scd2.py tests/spark/test_peer_snapshot.py
  tests/spark/test_peer_range.py)
# and slow files of the main suite, so that the two chains take about as long (the side chain
# ends with the lake's and Spark Connect's runs, whose servers make them slow beside the main
# run's end)
BALANCE_TESTS=(tests/spark/test_rebuild_verbs.py tests/spark/test_native_verbs.py tests/spark/test_overlapping_runs.py
  tests/spark/test_adopt.py tests/spark/test_adopt_dbt.py tests/spark/test_full_refresh.py)
SIDE_TESTS=("${DELTA_TESTS[@]}" "${PEER_TESTS[@]}" "${BALANCE_TESTS[@]}")
# the lake's tests, in a run of their own after them: their session starts with S3's connector,
# on the S3 and REST catalog servers they start (tests/lake/; not in pytest's testpaths)
LAKE_TESTS=(tests/lake)
# and Spark Connect's, in a run of their own too: a process with a Connect session has no classic
# one (tests/connect/; not in pytest's testpaths either)
CONNECT_TESTS=(tests/connect)

work=$(mktemp -d -t lakefresh-test-XXXXXX)
log=$work/side.log
trap 'rm -rf "$work"' EXIT
# what one pytest run makes and another can take instead of making it again (tests/example_run.py:
# the example's first run, made by the main run, taken by the lake's)
export LAKEFRESH_TEST_SHARED=$work

# The side chain waits for the default line's setup (this shell's) before its 4.1 tests.
default_line_ready() {
  while [ ! -e "$work/ready" ] && [ ! -e "$work/failed" ]; do sleep 2; done
  [ -e "$work/ready" ]
}
# (the setups skip the class archive: the default line's is made beside the lint, the 3.5 run's
# only JVM is its session, where making one would cost more than it saves)
(LAKEFRESH_SPARK=3.5 LAKEFRESH_TEST_SERVICES=1 LAKEFRESH_NO_CLASS_ARCHIVE=1 bash scripts/setup.sh &&
  echo "=== the Spark 3.5 tests (at ${SECONDS}s) ===" &&
  LAKEFRESH_TEST_CLASS_ARCHIVE=0 .venv-spark3.5/bin/pytest "${SPARK35_TESTS[@]}" -p no:cacheprovider &&
  default_line_ready &&
  LAKEFRESH_TEST_SERVICES=1 LAKEFRESH_NO_CLASS_ARCHIVE=1 bash scripts/setup.sh &&
  echo && echo "=== the Delta Lake tests, the peers' examples, and the balancing files (Spark 4.1; at ${SECONDS}s) ===" &&
  .venv/bin/pytest "${SIDE_TESTS[@]}" -p no:cacheprovider &&
  echo && echo "=== the lake: an S3-compatible server and a REST catalog on loopback (Spark 4.1; at ${SECONDS}s) ===" &&
  .venv/bin/pytest "${LAKE_TESTS[@]}" -p no:cacheprovider &&
  echo && echo "=== Spark Connect: a Connect server on loopback, this side a client (Spark 4.1; at ${SECONDS}s) ===" &&
  .venv/bin/pytest "${CONNECT_TESTS[@]}" -p no:cacheprovider
  status=$?
  echo "=== the side chain ends at ${SECONDS}s ==="
  exit $status) >"$log" 2>&1 &
side=$!

if LAKEFRESH_TEST_SERVICES=1 LAKEFRESH_NO_CLASS_ARCHIVE=1 LAKEFRESH_NO_PEERS=1 bash scripts/setup.sh; then
  touch "$work/ready"
  # Spark's classes archived for the JVMs the tests start (setup's own step, skipped above), beside
  # the lint; without it (it could not be made) they start as they did before
  .venv/bin/lakefresh jars --class-archive >/dev/null 2>&1 &
  archive=$!
  bash scripts/lint.sh
  lint=$?
  # the documentation site, --strict: a broken link or anchor fails `make test`
  bash scripts/docs.sh
  docs=$?
  wait "$archive"
  echo "=== every test on Spark 4.1 but the side chain's (at ${SECONDS}s) ==="
  .venv/bin/pytest "${SIDE_TESTS[@]/#/--ignore=}"
  main=$?
  echo "=== the main run ends at ${SECONDS}s ==="
else
  touch "$work/failed"
  lint=1 docs=1 main=1
fi
wait "$side"
other=$?

echo
echo "=== the side chain: the Spark 3.5 line's setup and tests, then the Delta tests and the rest (4.1) ==="
cat "$log"
echo
status() { [ "$1" -eq 0 ] && echo passed || echo FAILED; }
echo "make test: lint $(status "$lint"), docs $(status "$docs"), the main run $(status "$main"), the side chain $(status "$other"); ${SECONDS}s"
[ "$lint" -eq 0 ] && [ "$docs" -eq 0 ] && [ "$main" -eq 0 ] && [ "$other" -eq 0 ]
