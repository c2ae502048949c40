#!/bin/bash
# `analyze host` on the largest Nsight SQLite export in ../shared/data and on a synthetic export of 1 million
# kernels (synth-nsys), each against `agent bench` (reading the file alone) on the same machine, one run each.
# Usage: docs/bench/analyze-host.sh [DIR]  (default /tmp)
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=${1:-/tmp}
LARGEST=$(ls -S ../shared/data/*/*.sqlite ../shared/data/*/*/*.sqlite ../shared/data/*/*/*/*.sqlite 2>/dev/null | head -1)
if [ ! -f "$DIR/m1.sqlite" ]; then
  ./llmprof synth-nsys --kernels 1000000 --out "$DIR/m1.sqlite" > /dev/null   # 1,000,192 kernels, 2.02 M rows
fi
peak() {
  python3 - "$1" <<'PY'
import re, sys
peak = max((int(m.group(1)) for l in open(sys.argv[1]) for m in [re.search(r'(\d+)M->\d+M\(\d+M\)', l)] if m), default=0)
print("  peak heap (occupancy before a GC, -Xlog:gc):", peak, "MB")
PY
}
for f in "$LARGEST" "$DIR/m1.sqlite"; do
  echo "== $f ($(stat -c %s "$f") bytes)"
  echo "-- agent bench (read only)"
  LLMPROF_JAVA_OPTS="-Xmx256m" ./llmprof agent bench "$f" | tail -1
  echo "-- analyze host --format json, heap capped at 256 MB"
  LLMPROF_JAVA_OPTS="-Xmx256m -Xlog:gc:file=$DIR/gc-host.log" /usr/bin/time -f "  wall %e s, max RSS %M KB" \
    ./llmprof analyze host --trace "$f" --format json > "$DIR/host.json"
  peak "$DIR/gc-host.log"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('  steps', d['steps']['count'], 'kernels', d['sums']['kernels'], 'verdict', d['verdict'], 'llmprof', d['llmprof_verdict'])" "$DIR/host.json"
done
