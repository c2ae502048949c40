#!/bin/bash
# RSS of the demo JVM before/after a 16 MB POST of one-character bad lines to the ingest.
cd "$(dirname "$0")/../.."
python3 -c "import sys; sys.stdout.write('x\n'*(8*1024*1024))" > /tmp/bad16.ndjson
ls -l /tmp/bad16.ndjson
LLMPROF_SKIP_BUILD=1 ./llmprof demo --kafka-port 0 --http-port 18090 --ingest-port 18092 --passes 20 --service-requests 200 > /tmp/demo16.log 2>&1 &
DEMO=$!
for i in $(seq 1 120); do grep -q "Service sample shipped" /tmp/demo16.log && break; sleep 1; done
sleep 5
JPID=$(pgrep -f "io.llmprof.deploy.cli.Llmprof demo" | head -1)
[ -z "$JPID" ] && JPID=$(pgrep -f "llmprof.*demo" | tail -1)
m() { curl -s http://127.0.0.1:18090/metrics | grep -E "^llmprof_(dead_letters_total|anomalies_total|agent_bad_input_total|agent_ingest_requests_total|service_anomalies_total)" | awk '{s[$1]+=$2} END {for (k in s) print k, s[k]}' | sort; }
echo "pid $JPID"; echo "before: RSS $(ps -o rss= -p $JPID) kB"; m
for n in 1 2 3; do
  curl -s -o /tmp/post.out -w "POST $n: HTTP %{http_code} in %{time_total}s\n" -H 'Content-Type: application/x-ndjson' --data-binary @/tmp/bad16.ndjson "http://127.0.0.1:18092/ingest/service-events?job=attack&instance=i0"
  head -c 300 /tmp/post.out; echo
  echo "after $n: RSS $(ps -o rss= -p $JPID) kB"
done
sleep 3; m
curl -s "http://127.0.0.1:18090/api/dead-letters" | head -c 600; echo
kill $DEMO; wait $DEMO 2>/dev/null
