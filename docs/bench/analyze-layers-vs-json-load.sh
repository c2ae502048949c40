#!/bin/bash
# `analyze layers` on a ~140 MB synth Kineto trace against Python's json.load of the same file (issue 15),
# with an optional older build run beside this one, alternating (A B C A B C ...) because a shared box is noisy.
# Prints wall and user+sys CPU seconds of every run, then the medians.
# Usage: docs/bench/analyze-layers-vs-json-load.sh [DIR] [BASELINE_CHECKOUT] [ROUNDS]
#   BASELINE_CHECKOUT: another worktree, already built (./llmprof --version once), e.g.
#   `git worktree add /tmp/base <commit> && (cd /tmp/base && ./llmprof --version)`
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=${1:-/tmp}
BASE=${2:-}
ROUNDS=${3:-5}
CONFIG=../shared/data/model-configs/Qwen--Qwen3-8B_config.json
TRACE="$DIR/q130/rank-0.pt.trace.json"
[ -f "$TRACE" ] || ./llmprof synth --config "$CONFIG" --passes 190 --ranks 1 --out "$DIR/q130"
./llmprof --version > /dev/null   # builds when sources changed
LOG="$DIR/q130-runs.txt"; : > "$LOG"
run() { # label, command...
  local label=$1; shift
  /usr/bin/time -f "$label %e %U %S %M" -a -o "$LOG" "$@" > "$DIR/q130-$label.out"
}
for _ in $(seq "$ROUNDS"); do
  if [ -n "$BASE" ]; then
    run baseline env LLMPROF_SKIP_BUILD=1 LLMPROF_JAVA_OPTS=-Xmx256m "$BASE/llmprof" analyze layers \
      --trace "$TRACE" --config "$CONFIG" --format json
  fi
  run llmprof env LLMPROF_SKIP_BUILD=1 LLMPROF_JAVA_OPTS=-Xmx256m ./llmprof analyze layers \
    --trace "$TRACE" --config "$CONFIG" --format json
  run json.load python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$TRACE"
  # start-up and picocli with the same JIT flags as the analyze run (the launcher picks them by command)
  run jvm-start env LLMPROF_SKIP_BUILD=1 LLMPROF_JAVA_OPTS=-Xmx256m ./llmprof analyze layers --help
done
if [ -n "$BASE" ]; then cmp "$DIR/q130-baseline.out" "$DIR/q130-llmprof.out" && echo "same JSON output as the baseline"; fi
python3 - "$LOG" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    label, wall, user, sys_, rss = line.split()
    runs.setdefault(label, []).append((float(wall), float(user) + float(sys_), int(rss)))
print(f"{'what':10} {'n':>2} {'wall s (median)':>16} {'CPU s (median)':>15} {'max RSS MB':>11}   all walls")
for label, rs in runs.items():
    print(f"{label:10} {len(rs):2} {statistics.median(r[0] for r in rs):16.2f} {statistics.median(r[1] for r in rs):15.2f}"
          f" {max(r[2] for r in rs) / 1024:11.0f}   {' '.join(f'{r[0]:.2f}' for r in rs)}")
PY
