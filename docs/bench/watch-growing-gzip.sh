#!/bin/bash
# `agent watch` CPU for a gzipped trace written in place, as torch.profiler's export_chrome_trace writes a .json.gz
# (Python's gzip, level 9, over several seconds), against the same file moved into the watched directory whole.
# With a second, already built checkout (BASELINE_CHECKOUT), both builds run alternately, ROUNDS times each.
# Prints, per run, the seconds Python took to write the file and the agent process's CPU seconds (user + system,
# /proc) spent from the start of the write until the file was sent, and for the moved file.
# Usage: docs/bench/watch-growing-gzip.sh [DIR] [BASELINE_CHECKOUT] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=${1:-/tmp/llmprof-watch-gzip}
BASE=${2:-}
ROUNDS=${3:-2}
CONFIG=../shared/data/model-configs/Qwen--Qwen3-8B_config.json
SRC="$DIR/q130/rank-0.pt.trace.json"
[ -f "$SRC" ] || ./llmprof synth --config "$CONFIG" --passes 190 --ranks 1 --out "$DIR/q130" > /dev/null
./llmprof --version > /dev/null # builds when sources changed
export LLMPROF_SKIP_BUILD=1
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
gzip_to() { python3 -c "import gzip,sys; fin=open(sys.argv[1],'rb'); fout=gzip.open(sys.argv[2],'wb'); fout.writelines(fin); fout.close()" "$SRC" "$1"; }
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done; wait 2> /dev/null || true; }
trap cleanup EXIT
gzip_to "$DIR/whole.json.gz"

one() { # label, launcher
  local label=$1 launcher=$2 w="$DIR/run" port
  rm -rf "$w" && mkdir -p "$w/watch" "$w/stage"
  port=$(free_port)
  "$launcher" broker --port "$port" --data-dir "$w/broker" > "$w/broker.log" 2>&1 &
  pids+=($!)
  local bp=$!
  for _ in $(seq 600); do grep -qs "ready in" "$w/broker.log" && break; sleep 0.1; done
  "$launcher" agent watch "$w/watch" --bootstrap-servers "127.0.0.1:$port" > "$w/agent.log" 2>&1 &
  pids+=($!)
  local ap=$!
  sent() { # waits until the agent logged NAME as sent
    for _ in $(seq 1200); do grep -q "$1/rank-0.pt.trace.json.gz: .* events sent" "$w/agent.log" && return; sleep 0.1; done
    echo "$label: $1 was not sent within 2 min ($w/agent.log)"; exit 1
  }
  moved_in() { mkdir -p "$w/stage/$1" && cp "$DIR/whole.json.gz" "$w/stage/$1/rank-0.pt.trace.json.gz" && mv "$w/stage/$1" "$w/watch/$1"; }
  cpu() { awk '{print $14 + $15}' "/proc/$ap/stat"; }
  for r in warm1 warm2; do moved_in $r; sent $r; done # the JIT compiles the reader on these
  local c0 t0 t1 c1 c2 c3
  c0=$(cpu); t0=$(date +%s.%N)
  mkdir -p "$w/watch/inplace" && gzip_to "$w/watch/inplace/rank-0.pt.trace.json.gz"
  t1=$(date +%s.%N); sent inplace; c1=$(cpu)
  c2=$(cpu); moved_in moved; sent moved; c3=$(cpu)
  kill "$ap" "$bp"; wait "$ap" "$bp" 2> /dev/null || true
  python3 -c "import sys; t0,t1,c0,c1,c2,c3=map(float,sys.argv[2:]); print(f'{sys.argv[1]:9} gzip written in {t1-t0:.1f} s;'
    f' agent CPU: written in place {(c1-c0)/100:.2f} s, moved in whole {(c3-c2)/100:.2f} s')" "$label" "$t0" "$t1" "$c0" "$c1" "$c2" "$c3"
}
for _ in $(seq "$ROUNDS"); do
  [ -z "$BASE" ] || one baseline "$BASE/llmprof"
  one llmprof ./llmprof
done
