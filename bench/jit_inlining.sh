#!/usr/bin/env bash
# The example's first `lakefresh run` in a fresh process, with the JDK's default inlining and with
# lakefresh's shallow inlining (lakehouse/session.py, SHALLOW_INLINING): machine CPU-seconds from
# /proc/stat and wall seconds, rounds alternating. Freshly generated data in a new folder each
# time. Linux only; one Spark JVM at a time. bench/README.md, "C2's inlining".
# Usage: bash bench/jit_inlining.sh [rounds]   (from the repository's root)
set -euo pipefail
root=$(pwd)
# the JDK's defaults, named (any inlining option of the pipeline's replaces lakefresh's)
default='-XX:MaxInlineLevel=15 -XX:InlineSmallCode=2500 -XX:MaxInlineSize=35 -XX:FreqInlineSize=325'
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cpu() { awk '/^cpu /{print $2 + $3 + $4}' /proc/stat; }
for round in $(seq "${1:-2}"); do
  for options in default shallow; do
    rm -rf "$work/example" && mkdir -p "$work/example"
    cp examples/orders/pipeline.yml "$work/example/"
    .venv/bin/python examples/orders/generate.py "$work/example/data" > /dev/null
    conf='{}'  # lakefresh's own
    [ "$options" = default ] && conf="{\"spark.driver.extraJavaOptions\": \"$default\"}"
    c0=$(cpu) t0=$(date +%s.%N)
    (cd "$work/example" && LAKEFRESH_SPARK_CONF="$conf" "$root/.venv/bin/lakefresh" run pipeline.yml --output json > out.json)
    c1=$(cpu) t1=$(date +%s.%N)
    echo "round $round, $options inlining: $(( (c1 - c0) / $(getconf CLK_TCK) )) CPU-s, $(echo "$t1 - $t0" | bc) s wall"
  done
done
