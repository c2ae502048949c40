#!/bin/bash
# The live path as a user runs it: `llmprof broker`, `llmprof streams`, `llmprof dashboard` and the agent each in
# processes of their own (JVMs side by side on this box), against `bench live`, which runs all of them in one JVM, in
# the same run and on the same inputs (bench live's, kept in WORK_DIR/inproc).
#
# Two kinds of agent, each timed from the moment its input is there until the dashboard holds every pass (its
# /metrics counter, read every 20 ms over one kept connection) or REST holds every request:
# - long-running, as on a serving node: `agent watch` (each round's trace files hard-linked into its directory under
#   a new run name) and `agent ingest` (each round's service events POSTed in bodies of at most 8 MB, cut at lines);
# - a new JVM per round: `agent replay --speed max` and `agent service`, start-up included ("agent JVM" = its life).
# The warm-up rounds run the same way first, so that the long-running JVMs are compiled (bench live's --settle-jit
# does this in its one JVM).
#
# Usage: docs/bench/live-separate-processes.sh [WORK_DIR] [PASSES] [SERVICE_REQUESTS] [ROUNDS] [WARMUP]
# Prints bench live's output, then per round and as medians: events, seconds, events/s, agent JVM seconds.
set -euo pipefail
cd "$(dirname "$0")/../.."
W=${1:-/tmp/llmprof-live-separate}
PASSES=${2:-3000}
REQUESTS=${3:-200000}
ROUNDS=${4:-3}
WARMUP=${5:-6}
rm -rf "$W" && mkdir -p "$W"
./llmprof --version > /dev/null # builds when sources changed
export LLMPROF_SKIP_BUILD=1

echo "== bench live: broker, streams, dashboard and agent in one JVM"
./llmprof bench live --passes "$PASSES" --service-requests "$REQUESTS" --probes 0 --warmup 2 --settle-jit 15 \
  --rounds "$ROUNDS" --work-dir "$W/inproc" | tee "$W/inproc.txt" | grep -E "^(input|traces|service|  end to end|  agent|  streams|  dashboard|  offline|  gunzip)" || true

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
KP=$(free_port); HP=$(free_port)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done; wait 2> /dev/null || true; }
trap cleanup EXIT
./llmprof broker --port "$KP" --data-dir "$W/sep/broker" > "$W/broker.log" 2>&1 &
pids+=($!)
for _ in $(seq 600); do grep -q "ready in" "$W/broker.log" && break; sleep 0.1; done
grep -q "ready in" "$W/broker.log" || { echo "the broker did not start: $W/broker.log"; exit 1; }
B=127.0.0.1:$KP
MODEL=deploy/src/main/resources/io/llmprof/deploy/demo-model.json
./llmprof streams --bootstrap-servers "$B" --config "$MODEL" --state-dir "$W/sep/state" > "$W/streams.log" 2>&1 &
pids+=($!)
./llmprof dashboard --bootstrap-servers "$B" --port "$HP" > "$W/dashboard.log" 2>&1 &
pids+=($!)
mkdir -p "$W/watch"
./llmprof agent watch "$W/watch" --job bench --poll-interval 20ms --checkpoint "$W/sep/watch.checkpoint" \
  --bootstrap-servers "$B" > "$W/watch.log" 2>&1 &
pids+=($!)
IP=$(free_port)
./llmprof agent ingest --port "$IP" --bootstrap-servers "$B" > "$W/ingest.log" 2>&1 &
pids+=($!)

echo "== separate processes: broker, streams, dashboard, and a new agent JVM per round (logs in $W)"
python3 - "$W" "$B" "$HP" "$PASSES" "$ROUNDS" "$WARMUP" "$IP" <<'PY'
import glob, http.client, json, os, re, statistics, subprocess, sys, time
w, bootstrap, port, passes, rounds, warmup = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
ingest_port = int(sys.argv[7])
traces = sorted(glob.glob(f"{w}/inproc/trace/**/*.json.gz", recursive=True))
svc = f"{w}/inproc/svc"
truth = json.load(open(f"{svc}/truth.json"))
conn = [None]

def get(path):
    for _ in range(2):
        try:
            if conn[0] is None:
                conn[0] = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn[0].request("GET", path)
            r = conn[0].getresponse()
            return r.status, r.read().decode()
        except (OSError, http.client.HTTPException):
            conn[0] = None
    return 0, ""

def passes_closed():
    status, body = get("/metrics?name[]=llmprof_passes_closed_total")
    return sum(float(l.split()[-1]) for l in body.splitlines() if l.startswith("llmprof_passes_closed_total")) if status == 200 else -1

def requests_seen(instance):
    status, body = get(f"/api/requests?limit=1&job=bench&instance={instance}")
    return json.loads(body).get("requests_seen", 0) if status == 200 else 0

deadline = time.monotonic() + 120
while passes_closed() < 0:
    if time.monotonic() > deadline:
        sys.exit("the dashboard did not answer within 120 s")
    time.sleep(0.2)

def round_(cmd, done, pattern):
    t0 = time.monotonic()
    agent = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    agent_s, out, end = None, "", t0 + 600
    while time.monotonic() < end:
        if agent_s is None and agent.poll() is not None:
            agent_s, out = time.monotonic() - t0, agent.stdout.read()
            if agent.returncode != 0:
                sys.exit(f"agent exit {agent.returncode}: {out}")
        if agent_s is not None and done():
            break
        time.sleep(0.02)
    else:
        sys.exit(f"not done within 600 s: {cmd}")
    m = re.search(pattern, out)
    return int(m.group(1).replace(",", "")), time.monotonic() - t0, agent_s

def report(what, rs):
    for i, (events, s, agent_s) in enumerate(rs):
        print(f"  {what} round {i + 1}: {events:,} events in {s:.2f} s = {events / s:,.0f} events/s"
              + ("" if agent_s is None else f" (agent JVM {agent_s:.2f} s)"))
    med = statistics.median(e / s for e, s, _ in rs)
    print(f"  {what}: end to end, median of {len(rs)}: {med:,.0f} events/s (min {min(e / s for e, s, _ in rs):,.0f}, max {max(e / s for e, s, _ in rs):,.0f})")

expected = passes * len(traces)
trace_events = None

def wait_until(done, t0, what):
    while not done():
        if time.monotonic() - t0 > 600:
            sys.exit(f"not done within 600 s: {what}")
        time.sleep(0.02)
    return time.monotonic() - t0

# Long-running agents first.
rs = []
for i in range(warmup + rounds):
    before = passes_closed()
    t0 = time.monotonic()
    for k, f in enumerate(traces):
        d = f"{w}/watch/rank-{k}"
        os.makedirs(d, exist_ok=True)
        os.link(f, f"{d}/watch-{i}.json.gz")  # the run is the file name: watch-i, both ranks
    s = wait_until(lambda: passes_closed() >= before + expected, t0, f"watch round {i}")
    if i >= warmup:
        rs.append((None, s, None))
n = int(re.search(r"traces \(([\d,]+) events\)", open(f"{w}/inproc.txt").read()).group(1).replace(",", ""))
rs = [(n, s, a) for _, s, a in rs]
report("traces, agent watch (long-running)", rs)

lines = open(f"{svc}/events.jsonl", "rb").read().splitlines(keepends=True)
bodies, cur, size = [], [], 0
for l in lines:
    if size + len(l) > 8 << 20 and cur:
        bodies.append(b"".join(cur)); cur, size = [], 0
    cur.append(l); size += len(l)
if cur:
    bodies.append(b"".join(cur))
del lines
svc_events = sum(b.count(b"\n") for b in bodies)
rs = []
for i in range(warmup + rounds):
    inst = f"ingest-{i}"
    t0 = time.monotonic()
    c = http.client.HTTPConnection("127.0.0.1", ingest_port, timeout=60)
    for b in bodies:
        c.request("POST", f"/ingest/service-events?job=bench&instance={inst}", body=b,
                  headers={"Content-Type": "application/x-ndjson"})
        r = c.getresponse(); r.read()
        if r.status != 200 and r.status != 202:
            sys.exit(f"ingest answered {r.status}")
    c.close()
    posted = time.monotonic() - t0
    s = wait_until(lambda: requests_seen(inst) >= truth["requests"], t0, f"ingest round {i}")
    if i >= warmup:
        rs.append((svc_events, s, posted))
report("service events, agent ingest (long-running; 'agent JVM' = posting time)", rs)

# A new agent JVM per round.
tr = []
for i in range(warmup + rounds):
    before = passes_closed()
    r = round_(["./llmprof", "agent", "replay", "--speed", "max", "--job", "bench", "--run", f"replay-{i}", "--no-progress",
                "--no-checkpoint", "--bootstrap-servers", bootstrap] + traces,
               lambda: passes_closed() >= before + expected, r"replayed \d+ file\(s\): ([\d,]+) events")
    if i >= warmup:
        tr.append(r)
report("traces, agent replay (a new JVM per round)", tr)
sr = []
for i in range(warmup + rounds):
    inst = f"service-{i}"
    r = round_(["./llmprof", "agent", "service", "--input", svc, "--job", "bench", "--instance", inst, "--no-checkpoint",
                "--bootstrap-servers", bootstrap],
               lambda: requests_seen(inst) >= truth["requests"], r": ([\d,]+) events in")
    if i >= warmup:
        sr.append(r)
report("service events, agent service (a new JVM per round)", sr)
PY
