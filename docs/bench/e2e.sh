#!/usr/bin/env bash
# End-to-end: broker, replay, then time `streams` until all passes are on the dashboard.
# Usage: docs/bench/e2e.sh [ROOT]   (ROOT = a built checkout to take `streams` from; default: this one)
# Ports 19092 (broker), 18081 (dashboard), 18091 (streams metrics); kills only the PIDs it started.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ROOT=${1:-$HERE}
cd "$HERE"
export LLMPROF_SKIP_BUILD=1
PORT=19092; DPORT=18081; W=/tmp/e2e-$$; mkdir -p $W
EXPECT=${EXPECT:-600}
./llmprof broker --port $PORT --data-dir $W/broker > $W/broker.log 2>&1 & BPID=$!
for i in $(seq 1 60); do (echo > /dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 1; done
./llmprof agent replay --bootstrap-servers 127.0.0.1:$PORT --speed max --job x samples/demo/*.gz > $W/replay.log 2>&1
tail -1 $W/replay.log
./llmprof dashboard --bootstrap-servers 127.0.0.1:$PORT --port $DPORT > $W/dash.log 2>&1 & DPID=$!
sleep 6
t0=$(date +%s.%N)
LLMPROF_JAVA_OPTS="-Xmx2g -Dorg.slf4j.simpleLogger.showDateTime=true -Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS ${EXTRA_OPTS:-}" \
  $ROOT/llmprof streams --bootstrap-servers 127.0.0.1:$PORT --config samples/demo/demo-model.json --state-dir $W/state --metrics-port 18091 > $W/streams.log 2>&1 & SPID=$!
first=""; last_n=-1; last_ing=-1; trace=""
for i in $(seq 1 2400); do
  n=$(curl -s http://127.0.0.1:$DPORT/api/ranks | python3 -c 'import sys,json
d=json.load(sys.stdin); r=d if isinstance(d,list) else d.get("ranks",[]); print(sum(x.get("passes_seen",0) for x in r))' 2>/dev/null || echo 0)
  now=$(date +%s.%N)
  ing=$(curl -s http://127.0.0.1:18091/metrics 2>/dev/null | awk '/^llmprof_trace_events_ingested_total/ {s+=$2} END {printf "%d", s/1000}')
  if [ "$n" != "$last_n" ] || [ "$ing" != "$last_ing" ]; then trace="$trace $(printf '%.1f' $(echo "$now - $t0" | bc)):$n/${ing}k"; last_n=$n; last_ing=$ing; fi
  if [ -n "${PSLOG:-}" ]; then ps -o pid,pcpu,cputime,args -p $SPID,$DPID,$BPID | cut -c1-60 >> $PSLOG; fi
  if false; then trace="$trace $(printf '%.1f' $(echo "$now - $t0" | bc)):$n"; last_n=$n; fi
  if [ -z "$first" ] && [ "${n:-0}" -gt 0 ]; then first=$now; fi
  if [ "${n:-0}" -ge $EXPECT ]; then break; fi
  sleep 0.1
done
running=$(grep -m1 'REBALANCING -> RUNNING' $W/streams.log | cut -c1-12)
echo "ROOT=$ROOT passes=$n total_s=$(echo "$now - $t0" | bc) first_pass_s=$(echo "$first - $t0" | bc) first_to_last_s=$(echo "$now - $first" | bc) t0=$(date -d @$t0 +%T.%N | cut -c1-12) running=$running"
echo "timeline:$trace"
curl -s http://127.0.0.1:18091/metrics | grep -E "^kafka_stream_thread_(commit|poll|process|punctuate)_(ratio|latency_avg|rate|total)" | grep -v "^#" | sed "s/{.*}//" | tr "\n" " "; echo
kill $SPID; wait $SPID 2>/dev/null; kill $DPID; wait $DPID 2>/dev/null; kill $BPID; wait $BPID 2>/dev/null
cp $W/streams.log /tmp/last-streams.log; rm -rf $W
