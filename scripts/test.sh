#!/usr/bin/env bash
# `make test`'s two test runs, side by side: every test on the default Spark line (4.1) and the
# contract suites plus the ANSI tests on Spark 3.5. Each run has its one shared SparkSession; a
# run spends much of its time in single-threaded driver work (planning, commits, Py4J), so two
# of them on two cores take about as long as the longer one alone. The 3.5 run's output (its
# setup's too) follows the 4.1 run's. Exit status: non-zero when either failed.
set -uo pipefail
cd "$(dirname "$0")/.."

SPARK35_TESTS=(tests/spark/test_contract_strategies.py tests/spark/test_contract_sources.py tests/spark/test_ansi.py)
log=$(mktemp -t lakefresh-spark35-XXXXXX.log)
trap 'rm -f "$log"' EXIT

# the 3.5 line's setup (its own .venv-spark3.5) runs in the background too
(LAKEFRESH_SPARK=3.5 LAKEFRESH_TEST_SERVICES=1 bash scripts/setup.sh &&
  .venv-spark3.5/bin/pytest "${SPARK35_TESTS[@]}" -p no:cacheprovider) >"$log" 2>&1 &
spark35=$!
.venv/bin/pytest
main=$?
wait "$spark35"
other=$?

echo
echo "=== the Spark 3.5 run (contract suites, ANSI tests), beside the one above ==="
cat "$log"
[ "$main" -eq 0 ] && [ "$other" -eq 0 ]
