#!/usr/bin/env bash
# CPU of each thread of a pytest run's JVM, by thread name (numbers folded to N), sampled from
# /proc/<pid>/task/*/stat every second; threads that end between two samples are counted
# together as "ended between samples". Needs Linux's /proc; one Spark JVM at a time.
# Usage: bash bench/jvm_threads.sh <pytest arguments>   (from the repository's root)
set -uo pipefail
samples=$(mktemp)
trap 'rm -f "$samples"' EXIT
.venv/bin/pytest "$@" -p no:cacheprovider -q > "$samples.log" 2>&1 &
pid=$!
while kill -0 "$pid" 2>/dev/null; do
  sleep 1
  jvm=$(pgrep -f "org.apache.spark.deploy.SparkSubmit" | head -1)
  [ -z "$jvm" ] && continue
  {
    echo "PROC $(cut -d' ' -f14,15 "/proc/$jvm/stat" 2>/dev/null)"
    for task in /proc/"$jvm"/task/*; do
      echo "$(basename "$task") $(tr ' ' '_' < "$task/comm" 2>/dev/null) $(awk '{print $14, $15}' "$task/stat" 2>/dev/null)"
    done
  } >> "$samples"
done
tail -1 "$samples.log"
rm -f "$samples.log"
python3 - "$samples" <<'PY'
import collections, os, re, sys

ticks = os.sysconf("SC_CLK_TCK")
last, process = {}, 0
for line in open(sys.argv[1]):
    parts = line.split()
    if parts[0] == "PROC":
        if len(parts) == 3:
            process = int(parts[1]) + int(parts[2])
    elif len(parts) == 4:
        last[parts[0]] = (parts[1], int(parts[2]) + int(parts[3]))
threads = collections.Counter()
for name, used in last.values():
    threads[re.sub(r"\d+", "N", name)] += used
threads["(ended between samples)"] = process - sum(threads.values())
print(f"the JVM: {process / ticks:.1f} CPU-s")
for name, used in threads.most_common(15):
    print(f"{used / ticks:8.1f} CPU-s  {name}")
PY
