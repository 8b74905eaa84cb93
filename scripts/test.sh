#!/usr/bin/env bash
# `make test`'s test runs, three side by side, each with its one shared SparkSession:
#   1. every test on the default Spark line (4.1), but the files the other two take;
#   2. the Spark 3.5 line's setup (its own .venv-spark3.5) and, on it, the contract suites plus
#      the ANSI and nested JSON tests; then, on 4.1, the peers' published examples and some files
#      of the main suite (BALANCE_TESTS);
#   3. the Delta Lake tests and the rebuild verbs (4.1).
# A run alone keeps about 0.85 of a core busy: much of it is single-threaded driver work
# (planning, commits, Py4J round trips) and waiting on them. Two runs left a seventh of two cores
# idle (3,190 CPU-s in 31:19, ci52); three keep both busy. The lists below balance them: 20-21
# minutes of tests each, measured with two runs side by side (ci52, 2026-11-27). The other runs'
# output follows the first's. Exit status: non-zero when any failed.
set -uo pipefail
cd "$(dirname "$0")/.."

SPARK35_TESTS=(tests/spark/test_contract_strategies.py tests/spark/test_contract_sources.py tests/spark/test_ansi.py
  tests/spark/test_nested_json.py)
# the peers' published examples (issue 16)
PEER_TESTS=(tests/spark/test_peer_key.py tests/spark/test_peer_scd2.py tests/spark/test_peer_custom.py
  tests/spark/test_peer_snapshot.py tests/spark/test_peer_range.py)
# slow files of the main suite, after the 3.5 run, so that the three runs take about as long
BALANCE_TESTS=(tests/spark/test_backlog.py tests/spark/test_contract_strategies.py tests/spark/test_exactly_once.py
  tests/spark/test_scd2.py tests/spark/test_rollback.py tests/spark/test_scd2_properties.py
  tests/spark/test_strategy_properties.py)
SECOND_TESTS=("${PEER_TESTS[@]}" "${BALANCE_TESTS[@]}")
THIRD_TESTS=(tests/spark/test_delta.py tests/spark/test_delta_changes.py tests/spark/test_rebuild_verbs.py)

second=$(mktemp -t lakefresh-second-XXXXXX.log)
third=$(mktemp -t lakefresh-third-XXXXXX.log)
trap 'rm -f "$second" "$third"' EXIT

(LAKEFRESH_SPARK=3.5 LAKEFRESH_TEST_SERVICES=1 bash scripts/setup.sh &&
  LAKEFRESH_TEST_DELTA=0 .venv-spark3.5/bin/pytest "${SPARK35_TESTS[@]}" -p no:cacheprovider &&
  echo && echo "=== the peers' examples and the balancing files (Spark 4.1) ===" &&
  .venv/bin/pytest "${SECOND_TESTS[@]}" -p no:cacheprovider) >"$second" 2>&1 &
second_run=$!
.venv/bin/pytest "${THIRD_TESTS[@]}" -p no:cacheprovider >"$third" 2>&1 &
third_run=$!
.venv/bin/pytest "${SECOND_TESTS[@]/#/--ignore=}" "${THIRD_TESTS[@]/#/--ignore=}"
main=$?
wait "$second_run"
other=$?
wait "$third_run"
delta=$?

echo
echo "=== the Spark 3.5 run (contract suites, ANSI and nested JSON tests), then the peers' examples and the balancing files ==="
cat "$second"
echo
echo "=== the Delta Lake tests and the rebuild verbs (Spark 4.1), beside the two above ==="
cat "$third"
[ "$main" -eq 0 ] && [ "$other" -eq 0 ] && [ "$delta" -eq 0 ]
