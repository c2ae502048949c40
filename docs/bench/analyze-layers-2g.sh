#!/bin/bash
# `analyze layers` on a 2 GB synth trace against the floor no parser can beat (gzip -dc of the same file),
# measured in one run on the same machine. Usage: docs/bench/analyze-layers-2g.sh [DIR]  (default /tmp)
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=${1:-/tmp}
CONFIG=../shared/data/model-configs/Qwen--Qwen3-8B_config.json
if [ ! -f "$DIR/q2g.json.gz" ]; then
  ./llmprof synth --config "$CONFIG" --target-size 2GB --out "$DIR/q2g.json"   # 2.16 GB of Kineto JSON
  gzip -1 -c "$DIR/q2g.json" > "$DIR/q2g.json.gz" && rm "$DIR/q2g.json"
fi
echo "== gzip -dc q2g.json.gz > /dev/null"
/usr/bin/time -f "wall %e s, max RSS %M KB" gzip -dc "$DIR/q2g.json.gz" > /dev/null
echo "== analyze layers, heap capped at 256 MB"
LLMPROF_JAVA_OPTS="-Xmx256m -Xlog:gc:file=$DIR/gc2g.log" /usr/bin/time -f "wall %e s, max RSS %M KB" \
  ./llmprof analyze layers --trace "$DIR/q2g.json.gz" --config "$CONFIG" --no-show-all-passes > "$DIR/an2g.txt"
python3 - "$DIR/gc2g.log" <<'PY'
import re, sys
peak = max((int(m.group(1)) for l in open(sys.argv[1]) for m in [re.search(r'(\d+)M->\d+M\(\d+M\)', l)] if m), default=0)
print("peak heap (occupancy before a GC, -Xlog:gc):", peak, "MB")
PY
sed -n 1,6p "$DIR/an2g.txt"
