#!/usr/bin/env bash
# `make test`'s test runs, side by side: every test on the default Spark line (4.1) and, beside
# it, the contract suites plus the ANSI and nested JSON tests on Spark 3.5, then the Delta Lake
# tests and the peers' examples (4.1). Each run has its one shared SparkSession; a
# run spends much of its time in single-threaded driver work (planning, commits, Py4J), so two
# of them on two cores take about as long as the longer one alone. The 3.5 run's output (its
# setup's too) follows the 4.1 run's. Exit status: non-zero when either failed.
set -uo pipefail
cd "$(dirname "$0")/.."

SPARK35_TESTS=(tests/spark/test_contract_strategies.py tests/spark/test_contract_sources.py tests/spark/test_ansi.py
  tests/spark/test_nested_json.py)
log=$(mktemp -t lakefresh-spark35-XXXXXX.log)
trap 'rm -f "$log"' EXIT

DELTA_TESTS=(tests/spark/test_delta.py tests/spark/test_delta_changes.py)
# the peers' published examples (issue 16) run beside the main run too, after the Delta tests,
# so that the two sides take about as long
PEER_TESTS=(tests/spark/test_peer_key.py tests/spark/test_peer_scd2.py tests/spark/test_peer_custom.py
  tests/spark/test_peer_snapshot.py tests/spark/test_peer_range.py)
# and slow files of the main suite, so that the two sides take about as long (23-24 minutes each
# on 2 cores with the 3.5 run's setup, measured 2026-11-26 with the cluster test in the main run)
BALANCE_TESTS=(tests/spark/test_rebuild_verbs.py tests/spark/test_backlog.py)
SIDE_TESTS=("${DELTA_TESTS[@]}" "${PEER_TESTS[@]}" "${BALANCE_TESTS[@]}")

# the 3.5 line's setup (its own .venv-spark3.5) runs in the background too, then the Delta Lake
# tests on the default line, in a session of their own
(LAKEFRESH_SPARK=3.5 LAKEFRESH_TEST_SERVICES=1 bash scripts/setup.sh &&
  LAKEFRESH_TEST_DELTA=0 .venv-spark3.5/bin/pytest "${SPARK35_TESTS[@]}" -p no:cacheprovider &&
  echo && echo "=== the Delta Lake tests, the peers' examples, and the balancing files (Spark 4.1) ===" &&
  .venv/bin/pytest "${SIDE_TESTS[@]}" -p no:cacheprovider) >"$log" 2>&1 &
spark35=$!
.venv/bin/pytest "${SIDE_TESTS[@]/#/--ignore=}"
main=$?
wait "$spark35"
other=$?

echo
echo "=== the Spark 3.5 run (contract suites, ANSI tests), then the Delta tests, beside the one above ==="
cat "$log"
[ "$main" -eq 0 ] && [ "$other" -eq 0 ]
