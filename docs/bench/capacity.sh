#!/usr/bin/env bash
# Capacity (issue 18): events/s of K separate `llmprof streams` JVMs over one pre-loaded input, on a single broker
# (RF 1) or a 3-node cluster (RF 3).
# Usage: RF=1 INSTANCES="1 2 3" REPEAT=2 docs/bench/capacity.sh
#   RF          1: `llmprof broker`; 3: `llmprof cluster --nodes 3` (topics RF 3, min.insync 2). Default 1.
#   PARTITIONS  input/output partitions (default 6: 1, 2 and 3 instances all get whole partitions).
#   RANKS, PASSES, CONFIG   the synth input (default 6 ranks x 100 passes of Qwen3-8B: 1,011,600 events).
#   JOB         job name (default cap119: its 6 ranks hash to 6 different partitions, so 1, 2 and 3 instances get
#               equal shares; with "cap" two partitions get 2 ranks and two none)
#   INSTANCES   instance counts to measure, in order (default "1 2 3"); REPEAT rounds of them (default 1).
#   STREAMS_XMX heap per streams JVM (default 1g).
# Each measurement: a fresh --application-id (so it reads the input from offset 0) and fresh state dirs; a
# read_committed `topic dump --follow` of llmprof.passes started before the instances counts the passes they commit.
# Prints one line per measurement: total_s = launch of the JVMs to the last pass committed; run_s = the first
# instance's `-> RUNNING` (log time) to the last pass, i.e. without JVM start and the first rebalance.
# Ports 19392.. (brokers), 19491.. (streams metrics); kills only the PIDs it started.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$HERE"
export LLMPROF_SKIP_BUILD=1
RF=${RF:-1}; JOB=${JOB:-cap119}; PARTITIONS=${PARTITIONS:-6}; RANKS=${RANKS:-6}; PASSES=${PASSES:-100}
CONFIG=${CONFIG:-../shared/data/model-configs/Qwen--Qwen3-8B_config.json}
INSTANCES=${INSTANCES:-"1 2 3"}; REPEAT=${REPEAT:-1}; STREAMS_XMX=${STREAMS_XMX:-1g}
PORT=19392; MPORT=19491; W=/tmp/capacity-$$; mkdir -p $W
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf $W; }
trap cleanup EXIT

if [ "$RF" = 1 ]; then
  ./llmprof broker --port $PORT --data-dir $W/broker > $W/broker.log 2>&1 & PIDS+=($!)
  BOOT=127.0.0.1:$PORT; PORTS=$PORT
else
  ./llmprof cluster --nodes 3 --port $PORT --data-dir $W/cluster > $W/broker.log 2>&1 & PIDS+=($!)
  BOOT=127.0.0.1:$PORT,127.0.0.1:$((PORT+1)),127.0.0.1:$((PORT+2)); PORTS="$PORT $((PORT+1)) $((PORT+2))"
fi
for p in $PORTS; do
  for i in $(seq 1 120); do (echo > /dev/tcp/127.0.0.1/$p) 2>/dev/null && break; sleep 1; done
done
sleep 2
TOPICS="--partitions $PARTITIONS --replication-factor $RF"

./llmprof synth --config "$CONFIG" --passes $PASSES --ranks $RANKS --job $JOB --gzip --out $W/synth > $W/synth.log 2>&1 \
  || { cat $W/synth.log; exit 1; }
t=$(date +%s.%N)
./llmprof agent replay --bootstrap-servers $BOOT $TOPICS --speed max --job $JOB --no-checkpoint $W/synth/$JOB/*.gz \
  > $W/replay.log 2>&1 || { cat $W/replay.log; exit 1; }
EVENTS=$(grep -o 'replayed .* file(s): [0-9,]* events' $W/replay.log | grep -o '[0-9,]* events' | tr -d ', events')
echo "rf=$RF partitions=$PARTITIONS ranks=$RANKS passes=$PASSES input_events=$EVENTS replay_s=$(echo "$(date +%s.%N) - $t" | bc)"
EXPECT=$((RANKS * PASSES))

load1() { cut -d' ' -f1 /proc/loadavg; }
epoch_of() { date -d "$(date +%F) $1" +%s.%N; } # HH:MM:SS.mmm of today

measure() { # $1 = instances, $2 = round
  local k=$1 r=$2 m=$W/m-$1-$2 app=cap-$$-$1-$2 spids=() i n now
  mkdir -p $m
  ./llmprof topic dump --bootstrap-servers $BOOT --topic llmprof.passes --follow > $m/passes.jsonl 2> $m/dump.log &
  local dpid=$!; PIDS+=($dpid)
  # the dump starts at the end offsets: wait until it holds a connection to the cluster, then a little more
  for i in $(seq 1 100); do
    ss -tnp 2>/dev/null | grep -q "pid=$dpid," && break; sleep 0.2
  done
  sleep 2
  local l0; l0=$(load1)
  local t0; t0=$(date +%s.%N)
  for i in $(seq 1 $k); do
    LLMPROF_JAVA_OPTS="-Xmx$STREAMS_XMX -Dorg.slf4j.simpleLogger.showDateTime=true -Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS" \
      ./llmprof streams --bootstrap-servers $BOOT $TOPICS --config "$CONFIG" --application-id $app \
        --state-dir $m/state-$i --metrics-port $((MPORT + i)) > $m/streams-$i.log 2>&1 &
    spids+=($!); PIDS+=($!)
  done
  n=0
  for i in $(seq 1 3000); do
    n=$(wc -l < $m/passes.jsonl)
    [ "$n" -ge $EXPECT ] && break
    sleep 0.2
  done
  now=$(date +%s.%N)
  local l1; l1=$(load1)
  # events each instance ingested (how the partitions were split)
  local split=""
  for i in $(seq 1 $k); do
    split="$split$(curl -s http://127.0.0.1:$((MPORT + i))/metrics | awk '/^llmprof_trace_events_ingested_total/ {s+=$2} END {printf "%d", s/1000}')k/"
  done
  local first=""
  for i in $(seq 1 $k); do
    local t; t=$(grep -m1 -- '-> RUNNING' $m/streams-$i.log | cut -c1-12)
    [ -n "$t" ] && { t=$(epoch_of "$t"); if [ -z "$first" ] || [ "$(echo "$t < $first" | bc)" = 1 ]; then first=$t; fi; }
  done
  for p in "${spids[@]}" $dpid; do kill $p 2>/dev/null; done
  for p in "${spids[@]}" $dpid; do wait $p 2>/dev/null; done
  local total; total=$(echo "$now - $t0" | bc)
  local run=NA eps_run=NA
  if [ -n "$first" ]; then run=$(echo "$now - $first" | bc); eps_run=$(echo "$EVENTS / $run" | bc); fi
  local ok=""; [ "$n" -ge $EXPECT ] || ok=" INCOMPLETE"
  printf 'rf=%s k=%s round=%s passes=%s/%s total_s=%.1f run_s=%.1f events/s(total)=%d events/s(run)=%s per_instance(run)=%s per_partition(run)=%s ingested=%s load1=%s->%s%s\n' \
    $RF $k $r $n $EXPECT $total ${run/NA/0} $(echo "$EVENTS / $total" | bc) $eps_run \
    $([ "$eps_run" = NA ] && echo NA || echo $((eps_run / k))) $([ "$eps_run" = NA ] && echo NA || echo $((eps_run / PARTITIONS))) \
    "${split%/}" $l0 $l1 "$ok"
  grep -h -E 'ERROR|Exception' $m/streams-*.log | head -3
}

for r in $(seq 1 $REPEAT); do
  for k in $INSTANCES; do measure $k $r; done
done
