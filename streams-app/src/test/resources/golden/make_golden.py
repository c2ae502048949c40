#!/usr/bin/env python3
"""Writes the golden input/expected pairs of TopologyGoldenTest.

The expected outputs are derived here from the rules in ANALYSIS.md section 2 (anchor role `opens`,
1 block per layer, cut at the largest idle gap, wall = max(end) - min(start), busy = union, sum =
total duration), independently of the Java implementation. Run it from this directory after changing
a case on purpose: python3 make_golden.py
"""
import json
import os

JOB = "llama-test"
SOURCE = "rank0.pt.trace.json"
T0_MS = 1767225600000  # 2026-01-01T00:00:00Z: record timestamps (agent send time)
ANCHOR = "fused_add_rmsnorm"
SEGMENTER = {"profile": "generic", "anchor_kernel": ANCHOR, "num_layers": 2}

# One forward pass of a 2-layer model, offsets in ns from the pass start:
# (kind, name, start, dur, category)
PASS = [
    ("MEMCPY", "Memcpy HtoD (Pageable -> Device)", 0, 2000, "memcpy"),
    ("KERNEL", "void fused_add_rmsnorm_kernel<c10::BFloat16, 8>(c10::BFloat16*, int)", 3000, 1000, "rmsnorm"),
    ("KERNEL", "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTN", 4500, 3000, "gemm_bf16"),
    ("KERNEL", "void fused_add_rmsnorm_kernel<c10::BFloat16, 8>(c10::BFloat16*, int)", 8000, 1000, "rmsnorm"),
    ("KERNEL", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 9500, 3000, "allreduce"),
    ("KERNEL", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", 13000, 2000, "gemm_bf16"),
]
PASS_PERIOD_NS = 100_000  # 85 us of host gap between passes: the largest gap, so the cut


def event(kind, name, start, dur):
    e = {"kind": kind, "name": name, "startNs": start, "durNs": dur, "device": 0, "stream": 7}
    return e


def gpu_events(base_ns, passes, partial_last=None):
    out = []
    for p in range(passes):
        for kind, name, off, dur, _ in PASS:
            out.append(event(kind, name, base_ns + p * PASS_PERIOD_NS + off, dur))
    if partial_last:
        for kind, name, off, dur, _ in PASS[:partial_last]:
            out.append(event(kind, name, base_ns + passes * PASS_PERIOD_NS + off, dur))
    return out


def batches(run, rank, events, size, end_of_trace, t_ms, lane="GPU"):
    recs = []
    for i in range(0, max(len(events), 1), size):
        chunk = events[i:i + size]
        last = i + size >= len(events)
        recs.append({
            "key": f"{JOB}/{rank}",
            "timestamp_ms": t_ms,
            "value": {"job": JOB, "run": run, "rank": rank, "lane": lane, "source": SOURCE,
                      "firstIndex": i, "events": chunk, "endOfTrace": end_of_trace and last},
        })
        t_ms += 100
    return recs, t_ms


def host_batch(run, rank, t_ms):
    evs = [{"kind": "RUNTIME", "name": "cudaLaunchKernel", "startNs": 1000 * i, "durNs": 500, "stream": 11,
            "correlation": i} for i in range(3)]
    return {"key": f"{JOB}/{rank}", "timestamp_ms": t_ms,
            "value": {"job": JOB, "run": run, "rank": rank, "lane": "HOST", "source": SOURCE, "firstIndex": 0,
                      "events": evs, "endOfTrace": True}}


def stats(rows):
    """rows: (start, dur, category, is_kernel, is_allreduce)"""
    if not rows:
        return dict(start=0, end=0, wall=0, busy=0, sum=0, kernels=0, ar=0, cats={})
    start = min(r[0] for r in rows)
    end = max(r[0] + r[1] for r in rows)
    busy, cur_s, cur_e = 0, None, None
    for s, d, *_ in sorted(rows):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                busy += cur_e - cur_s
            cur_s, cur_e = s, s + d
        else:
            cur_e = max(cur_e, s + d)
    busy += cur_e - cur_s
    cats = {}
    for r in rows:
        cats[r[2]] = cats.get(r[2], 0) + r[1]
    return dict(start=start, end=end, wall=end - start, busy=busy, sum=sum(r[1] for r in rows),
                kernels=sum(1 for r in rows if r[3]), ar=sum(1 for r in rows if r[4]), cats=dict(sorted(cats.items())))


def family(kind, name):
    """The simplified display name (profiles.json display_names): canonical name (no `void `, no argument
    list), template arguments as <…>, namespaces dropped; memcpy / memset by kind."""
    if kind != "KERNEL":
        return kind.lower()
    n = name[5:] if name.startswith("void ") else name
    if n.endswith(")"):
        depth = 0
        for i in range(len(n) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(n[i], 0)
            if depth == 0:
                n = n[:i]
                break
    if "<" in n:
        n = n[:n.index("<")] + "<" + kinds(n[n.index("<") + 1:n.rindex(">")]) + ">" + n[n.rindex(">") + 1:]
    return n.split("::")[-1]


BUILTIN = {"void", "bool", "char", "short", "int", "long", "float", "double", "unsigned", "signed", "half"}


def kinds(args):
    """docs/analysis.md "Kernel families": the kinds of the template arguments (type names without namespace or
    arguments; numbers, flags and built-in types left out), at most two; "…" when there is none."""
    out = []
    for a in args.split(","):  # the names used here have no nested argument lists
        a = a.strip()
        if not a or a[0].isdigit() or a in ("true", "false") or a in BUILTIN:
            continue
        k = a.split("<")[0].split("::")[-1]
        if k not in out:
            out.append(k)
    return ", ".join(out[:2]) or "…"


def families(events, top=16):
    """Per family: count, sum, max, first kernel's category; by sum (ties: name), top 16 (never more here)."""
    acc = {}  # keyed by (label, category): docs/analysis.md "Kernel families"
    for kind, name, _off, dur, cat in events:
        f = acc.setdefault((family(kind, name), cat), {"family": family(kind, name), "category": cat, "count": 0,
                                                       "sumNs": 0, "maxNs": 0})
        f["count"] += 1
        f["sumNs"] += dur
        f["maxNs"] = max(f["maxNs"], dur)
    out = sorted(acc.values(), key=lambda f: (-f["sumNs"], f["family"], f["category"]))
    assert len(out) <= top
    return out


def expected_pass(run, rank, index, base_ns, n_events, complete, steady, closed_by, notes, trace_start):
    """trace_start: min start of every event of the run given so far (host lane included)."""
    rows = []
    for kind, name, off, dur, cat in PASS[:n_events]:
        rows.append((base_ns + index * PASS_PERIOD_NS + off, dur, cat, kind == "KERNEL", cat == "allreduce"))
    anchors = [i for i, (_, name, *_r) in enumerate(PASS[:n_events]) if ANCHOR in name]
    prologue = rows[:anchors[0]]
    layers = []
    for li, a in enumerate(anchors):  # role `opens`: block = [anchor_i, anchor_i+1); the last runs to the cut
        to = anchors[li + 1] if li + 1 < len(anchors) else len(rows)
        s = stats(rows[a:to])
        layers.append({"key": f"{JOB}/{rank}", "value": {
            "job": JOB, "run": run, "rank": rank, "passIndex": index, "layer": li,
            "type": "FIRST" if li == 0 else "FINAL" if li == SEGMENTER["num_layers"] - 1 else "LAYER",
            "startNs": s["start"], "endNs": s["end"], "wallNs": s["wall"], "busyNs": s["busy"], "sumNs": s["sum"],
            "kernels": s["kernels"], "allreduceCount": s["ar"], "categories": s["cats"],
            "families": families(PASS[:n_events][a:to]), "halves": []}})
    a = stats(rows)
    p = stats(prologue)
    passrec = {"key": f"{JOB}/{rank}", "value": {
        "job": JOB, "run": run, "rank": rank, "profile": SEGMENTER["profile"], "anchor": ANCHOR,
        "numLayers": SEGMENTER["num_layers"], "blocksPerLayer": 1, "index": index,
        "startNs": a["start"], "endNs": a["end"], "wallNs": a["wall"], "busyNs": a["busy"], "sumNs": a["sum"],
        "kernels": a["kernels"], "complete": complete, "steady": steady,
        "prologue": {"wallNs": p["wall"], "sumNs": p["sum"], "kernels": p["kernels"]},
        "epilogue": {"wallNs": 0, "sumNs": 0, "kernels": 0},
        "layerCount": len(layers), "closedBy": closed_by, "notes": notes,
        "boundary": "anchor", "traceStartNs": trace_start}}
    return passrec, layers


def full_run(run, rank, base_ns, passes, last_closed_by, trace_start):
    """Every pass complete; steady once 3 earlier complete passes have the same wall and kernel count."""
    out_p, out_l = [], []
    for i in range(passes):
        pr, ls = expected_pass(run, rank, i, base_ns, len(PASS), True, i >= 3,
                               "next_pass" if i < passes - 1 else last_closed_by, [], trace_start)
        out_p.append(pr)
        out_l.extend(ls)
    return out_p, out_l


def write(case, records, passes, layers, anomalies, description):
    os.makedirs(case, exist_ok=True)
    with open(os.path.join(case, "input.json"), "w") as f:
        json.dump({"description": description, "segmenter": SEGMENTER, "records": records}, f, indent=1)
        f.write("\n")
    with open(os.path.join(case, "expected.json"), "w") as f:
        json.dump({"passes": passes, "layers": layers, "anomalies": anomalies}, f, indent=2, ensure_ascii=False)
        f.write("\n")


# 1. Five passes of one rank, GPU batches of 7 events, host lane first, end of trace on the last batch.
base = 5_000_000_000
recs = [host_batch("trace-0", "0", T0_MS)]
gpu, _ = batches("trace-0", "0", gpu_events(base, 5), 7, True, T0_MS + 100)
recs += gpu
p, l = full_run("trace-0", "0", base, 5, "end_of_trace", 0)  # the host lane's first launch starts at 0
write("five-passes", recs, p, l, [],
      "5 passes of a 2-layer model (anchor opens each layer), 30 GPU events in batches of 7; the last"
      " batch carries endOfTrace and closes pass 4")

# 2. Same events without endOfTrace; a record of another rank 61 s later advances stream time past
#    the 60 s idle timeout, so the open pass 4 is closed by the idle punctuator.
gpu, t = batches("trace-0", "0", gpu_events(base, 5), 7, False, T0_MS)
other = host_batch("trace-0", "1", t - 100 + 61_000)
other["value"]["endOfTrace"] = False
p, l = full_run("trace-0", "0", base, 5, "idle", base)  # GPU lane only: its first event
write("idle-flush", gpu + [other], p, l, [],
      "no endOfTrace: rank 1's record 61 s after rank 0's last one makes the punctuator close rank 0's"
      " open pass 4 (closedBy idle)")

# 3. A second run of the same rank starts fresh (pass index 0, its own steady history); it ends with a
#    pass that has 1 of its 2 anchors: incomplete, with an INCOMPLETE_PASS anomaly.
base2 = 9_000_000_000
r1, t = batches("trace-0", "0", gpu_events(base, 5), 7, True, T0_MS)
r2, _ = batches("trace-1", "0", gpu_events(base2, 2, partial_last=3), 5, True, t + 1000)
p1, l1 = full_run("trace-0", "0", base, 5, "end_of_trace", base)
p2, l2 = full_run("trace-1", "0", base2, 2, "next_pass", base2)
why = "end_of_trace after 1 of 2 anchors"
pi, li = expected_pass("trace-1", "0", 2, base2, 3, False, False, "end_of_trace", [why], base2)
anomaly = {"key": f"{JOB}/0", "value": {"job": JOB, "rank": "0", "kind": "INCOMPLETE_PASS",
                                        "message": "rank 0: pass 2: " + why, "where": "run trace-1, rank 0"}}
write("two-runs", r1 + r2, p1 + p2 + [pi], l1 + l2 + li, [anomaly],
      "run trace-0 (5 passes) then run trace-1 of the same rank: pass indexes restart at 0; trace-1 ends"
      " inside its pass 2 (1 of 2 anchors): incomplete pass and an INCOMPLETE_PASS anomaly")

# 4. Step markers, the host lane late: SGLang steps (decode, prefill, decode x3) each inside a vLLM-style
#    execute_ wrapper that also launches one kernel of its own (it runs in the host gap before the step).
#    Records: the host lane's first 5 events, then the whole GPU lane (its end of trace included), then the
#    rest of the host lane. GPU events wait for the host lane; the GPU lane's end waits for the host lane's.
#    Each step is one pass (closedBy step_marker, the last end_of_trace); the wrapper's own kernel belongs to
#    no pass and is noted on the step's pass. The prefill step's kernels take twice as long, so the last
#    decode pass is steady only when steady state compares passes of the same phase.
HOST_BASE = base - 400_000
STEPS = [("step[DECODE bs=4]", "decode", 4, None, 1), ("step[EXTEND bs=2 toks=256]", "prefill", 2, 256, 2),
         ("step[DECODE bs=4]", "decode", 4, None, 1), ("step[DECODE bs=4]", "decode", 4, None, 1),
         ("step[DECODE bs=4]", "decode", 4, None, 1)]
WRAPPER_KERNEL = "void at::native::arange_kernel<long>(long*, long)"


def marker_case():
    host, gpu = [], []
    corr = 1000
    passes, layers = [], []
    steady_hist = {}
    for i, (text, phase, bs, toks, scale) in enumerate(STEPS):
        h = HOST_BASE + i * PASS_PERIOD_NS
        ctx = 0 if phase == "decode" else bs
        gen = bs if phase == "decode" else 0
        host.append({"kind": "USER_ANNOTATION", "name": f"execute_{toks or bs}_context_{ctx}()_generation_{gen}()",
                     "startNs": h, "durNs": 60_000, "stream": 11})
        host.append({"kind": "RUNTIME", "name": "cudaLaunchKernel", "startNs": h + 2_000, "durNs": 1_000,
                     "stream": 11, "correlation": corr})
        g0 = base + i * PASS_PERIOD_NS
        gpu.append({"kind": "KERNEL", "name": WRAPPER_KERNEL, "startNs": g0 - 20_000, "durNs": 1_000,
                    "device": 0, "stream": 7, "correlation": corr})
        corr += 1
        host.append({"kind": "USER_ANNOTATION", "name": text, "startNs": h + 5_000, "durNs": 45_000, "stream": 11})
        rows = []
        for j, (kind, name, off, dur, cat) in enumerate(PASS):
            host.append({"kind": "RUNTIME", "name": "cudaLaunchKernel", "startNs": h + 10_000 + 3_000 * j,
                         "durNs": 1_000, "stream": 11, "correlation": corr})
            start = g0 + off * scale
            gpu.append({"kind": kind, "name": name, "startNs": start, "durNs": dur * scale, "device": 0,
                        "stream": 7, "correlation": corr})
            rows.append((start, dur * scale, cat, kind == "KERNEL", cat == "allreduce"))
            corr += 1
        anchors = [j for j, (_, name, *_r) in enumerate(PASS) if ANCHOR in name]
        lays = []
        for li, a in enumerate(anchors):
            to = anchors[li + 1] if li + 1 < len(anchors) else len(rows)
            s = stats(rows[a:to])
            lays.append({"key": f"{JOB}/0", "value": {
                "job": JOB, "run": "trace-m", "rank": "0", "passIndex": i, "layer": li,
                "type": "FIRST" if li == 0 else "FINAL",
                "startNs": s["start"], "endNs": s["end"], "wallNs": s["wall"], "busyNs": s["busy"],
                "sumNs": s["sum"], "kernels": s["kernels"], "allreduceCount": s["ar"], "categories": s["cats"],
                "families": families([(k, n, o, d * scale, c) for k, n, o, d, c in PASS[a:to]]), "halves": []}})
        a = stats(rows)
        p = stats(rows[:anchors[0]])
        hist = steady_hist.setdefault(phase, [])
        walls = sorted(w for w, _ in hist[-3:])
        med = (walls[1] if len(walls) == 3 else None)
        steady = len(hist) >= 3 and all(k == a["kernels"] for _, k in hist[-3:]) and abs(a["wall"] - med) <= 0.05 * med
        hist.append((a["wall"], a["kernels"]))
        pv = {"job": JOB, "run": "trace-m", "rank": "0", "profile": SEGMENTER["profile"], "anchor": ANCHOR,
              "numLayers": SEGMENTER["num_layers"], "blocksPerLayer": 1, "index": i,
              "startNs": a["start"], "endNs": a["end"], "wallNs": a["wall"], "busyNs": a["busy"], "sumNs": a["sum"],
              "kernels": a["kernels"], "complete": True, "steady": steady,
              "prologue": {"wallNs": p["wall"], "sumNs": p["sum"], "kernels": p["kernels"]},
              "epilogue": {"wallNs": 0, "sumNs": 0, "kernels": 0},
              "layerCount": len(lays), "closedBy": "step_marker" if i < len(STEPS) - 1 else "end_of_trace",
              "notes": ["1 GPU event(s) launched inside a wrapper marker but outside its inner step markers belong"
                        " to no pass"],
              "phase": phase, "batchSize": bs, "step": text, "boundary": "marker", "traceStartNs": HOST_BASE}
        if toks is not None:
            pv["tokens"] = toks
        passes.append({"key": f"{JOB}/0", "value": pv})
        layers.extend(lays)
    host.sort(key=lambda e: e["startNs"])
    h0, t = batches("trace-m", "0", host[:5], 5, False, T0_MS, lane="HOST")
    g, t = batches("trace-m", "0", gpu, 7, True, t)
    rest = [dict(r) for r in batches("trace-m", "0", host[5:], 10, True, t, lane="HOST")[0]]
    for r in rest:
        r["value"]["firstIndex"] += 5
    return h0 + g + rest, passes, layers


recs, p, l = marker_case()
write("marker-steps", recs, p, l, [],
      "5 SGLang steps (decode, prefill, decode x3) inside execute_ wrappers; host lane's first 5 events, then the"
      " whole GPU lane, then the rest of the host lane; one pass per step, the wrapper's own kernels in no pass")
