#!/usr/bin/env bash
# Benchmark: a fresh `lakefresh run` process that takes one small batch (a scheduled run), with
# and without the class archive of Spark's classes (src/lakefresh/lakehouse/class_archive.py).
# Machine CPU-seconds (all processes, /proc/stat) and wall seconds per run, rounds alternated;
# the first run creates the tables and is not counted. Makes the archive first if missing.
#
# Usage: bash bench/bench_start.sh [ROUNDS]   (default 3)
set -uo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
root=$(mktemp -d -t lakefresh-start-XXXXXX)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/in"
cat > "$root/p.yml" <<YML
catalog:
  name: lake
  warehouse: $root/wh
spark:
  master: local[2]
defaults:
  namespace: s
tables:
  - name: t
    source: {kind: files, path: $root/in, format: csv, schema: {id: int, v: string}}
    strategy: {kind: key, keys: [id]}
YML
.venv/bin/lakefresh jars --class-archive >/dev/null || exit 1

cpu() { read -r _ u n s _ < /proc/stat; echo $((u + n + s)); }
hz=$(getconf CLK_TCK)
n=0
modes=(first)
for _ in $(seq "$rounds"); do modes+=(with without); done
for mode in "${modes[@]}"; do
  n=$((n + 1))
  printf 'id,v\n%d,a\n%d,b\n' "$n" "$((n + 100))" > "$root/in/b$n.csv"
  c0=$(cpu); t0=$(date +%s.%N)
  if [ "$mode" = without ]; then
    LAKEFRESH_CLASS_ARCHIVE=0 .venv/bin/lakefresh run "$root/p.yml" >/dev/null 2>&1 || exit 1
  else
    .venv/bin/lakefresh run "$root/p.yml" >/dev/null 2>&1 || exit 1
  fi
  c1=$(cpu); t1=$(date +%s.%N)
  [ "$mode" = first ] && continue
  printf '%-8s CPU-s %5.1f  wall-s %5.1f\n' "$mode" "$(echo "($c1 - $c0) / $hz" | bc -l)" "$(echo "$t1 - $t0" | bc)"
done
