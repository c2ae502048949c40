package io.llmprof.agent.synth;

import io.llmprof.agent.synth.KernelSpec.Geometry;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * Writes one rank's trace in the spelling of a raw Kineto file (PyTorch profiler, CUPTI): top-level keys, then
 * the host part of every pass (ProfilerStep annotations, cpu_ops, and runtime calls unless the layout is
 * {@link TraceLayout#KINETO}), then the GPU part of every pass, then process and thread metadata. Every constant
 * fragment is encoded once; the hot path only copies bytes and prints numbers.
 */
final class KinetoWriter {
    static final int COMPUTE_STREAM = 7;
    static final int COPY_STREAM = 20;
    static final int COMM_STREAM = 24;

    private final JsonSink out;
    private final SynthSpec spec;
    private final PassTemplate template;
    private final int rank;
    private final int device;
    private final int pid;
    private boolean first = true;
    private long evIdx;

    private final byte[][] kernelHead;
    private final byte[][] kernelMid;
    private final byte[][] kernelTail;
    private final byte[][] opHead;
    private final byte[][] opMid;
    private final byte[][] launchHead;
    private final byte[][] launchMid;
    private final byte[] flowStartHead;
    private final byte[] flowStartTail;
    private final byte[] stepHead;
    private final byte[] gpuStepHead;
    private final byte[] markerHead;
    private final byte[] gpuMarkerHead;
    private final byte[] gpuStepIds;
    private final byte[] copyOpHead;
    private final byte[] copyOpMid;
    private final byte[] memcpyAsyncHead;
    private final byte[] syncHead;
    private final byte[] graphLaunchHead;
    private final byte[] h2dHead;
    private final byte[] h2dMid;
    private final byte[] h2dTail;
    private final byte[] d2hHead;
    private final byte[] d2hMid;
    private final byte[] d2hTail;
    private final byte[] hostIds;
    private final byte[] computeIds;
    private final byte[] commIds;
    private final byte[] copyIds;

    private static final byte[] TS = b(",\n    \"ts\": ");
    private static final byte[] DUR = b(", \"dur\": ");
    private static final byte[] EXT_OPEN = b(",\n    \"args\": {\n      \"External id\": ");
    private static final byte[] ARGS_OPEN = b(",\n    \"args\": {\n      ");
    private static final byte[] ARGS_CLOSE = b("\n    }\n  }");
    private static final byte[] EV_IDX = b(", \"Ev Idx\": ");
    private static final byte[] CORR = b(", \"correlation\": ");
    private static final byte[] SEP = b(",\n  ");
    private static final byte[] FIRST = b("\n  ");

    KinetoWriter(JsonSink out, SynthSpec spec, PassTemplate template, int rank) {
        this.out = out;
        this.spec = spec;
        this.template = template;
        this.rank = rank;
        this.device = rank % 8;
        this.pid = hostPid(spec, rank);
        KernelSpec[] ks = template.kernels;
        int n = ks.length;
        kernelHead = new byte[n][];
        kernelMid = new byte[n][];
        kernelTail = new byte[n][];
        opHead = new byte[n][];
        opMid = new byte[n][];
        launchHead = new byte[n][];
        launchMid = new byte[n][];
        String host = "\"pid\": " + pid + ", \"tid\": " + pid;
        for (int i = 0; i < n; i++) {
            KernelSpec k = ks[i];
            int stream = k.comm().onCommStream() ? COMM_STREAM : COMPUTE_STREAM;
            kernelHead[i] = b("{\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"" + escape(k.name())
                    + "\", \"pid\": " + device + ", \"tid\": " + stream);
            kernelMid[i] = b("\"queued\": 0, \"device\": " + device + ", \"context\": 1,      \"stream\": " + stream
                    + ", \"correlation\": ");
            kernelTail[i] = b(geometryArgs(k.geometry()) + commArgs(k) + "\n    }\n  }");
            if (k.op() != null) {
                opHead[i] = b("{\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"" + escape(k.op().name()) + "\", "
                        + host);
                opMid[i] = b(",\"Record function id\": 0, \"Input Dims\": " + k.op().inputDims() + ", \"Input type\": "
                        + k.op().inputTypes());
            }
            launchHead[i] = b("{\n    \"ph\": \"X\", \"cat\": \"" + k.api().cat + "\", \"name\": \"" + k.api().apiName
                    + "\", " + host);
            launchMid[i] = b(",      \"cbid\": " + k.api().cbid + ", \"correlation\": ");
        }
        hostIds = b(", \"pid\": " + pid + ", \"tid\": " + pid + ", \"ts\": ");
        computeIds = b(", \"pid\": " + device + ", \"tid\": " + COMPUTE_STREAM + ", \"ts\": ");
        commIds = b(", \"pid\": " + device + ", \"tid\": " + COMM_STREAM + ", \"ts\": ");
        copyIds = b(", \"pid\": " + device + ", \"tid\": " + COPY_STREAM + ", \"ts\": ");
        flowStartHead = b("{\n    \"ph\": \"s\", \"id\": ");
        flowStartTail = b(",\n    \"cat\": \"ac2g\", \"name\": \"ac2g\"\n  }");
        stepHead = b("{\n    \"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#");
        markerHead = b("{\n    \"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"");
        gpuStepHead = b("{\n    \"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": \"ProfilerStep#");
        gpuMarkerHead = b("{\n    \"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": \"");
        gpuStepIds = b("\", \"pid\": " + device + ", \"tid\": " + COMPUTE_STREAM);
        copyOpHead = b("{\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::copy_\", " + host);
        copyOpMid = b(",\"Record function id\": 0, \"Input Dims\": [[" + spec.batchSize() + "], [" + spec.batchSize()
                + "], []], \"Input type\": [\"long int\", \"long int\", \"Scalar\"]");
        memcpyAsyncHead = b("{\n    \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaMemcpyAsync\", " + host);
        syncHead = b("{\n    \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaStreamSynchronize\", " + host);
        graphLaunchHead = b("{\n    \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaGraphLaunch\", " + host);
        long bytes = 8L * spec.batchSize();
        h2dHead = b(
                "{\n    \"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD (Pinned -> Device)\", \"pid\": "
                        + device + ", \"tid\": " + COPY_STREAM);
        h2dMid = b(
                "\"device\": " + device + ", \"context\": 1,      \"stream\": " + COPY_STREAM + ", \"correlation\": ");
        h2dTail = b(",      \"bytes\": " + bytes + ", \"memory bandwidth (GB/s)\": " + bandwidth(bytes, 1.8)
                + "\n    }\n  }");
        d2hHead = b(
                "{\n    \"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy DtoH (Device -> Pinned)\", \"pid\": "
                        + device + ", \"tid\": " + COMPUTE_STREAM);
        d2hMid = b("\"device\": " + device + ", \"context\": 1,      \"stream\": " + COMPUTE_STREAM
                + ", \"correlation\": ");
        d2hTail = b(",      \"bytes\": " + bytes + ", \"memory bandwidth (GB/s)\": " + bandwidth(bytes, 2.1)
                + "\n    }\n  }");
    }

    static int hostPid(SynthSpec spec, int rank) {
        return 31_000 + (int) Math.floorMod(spec.seed() * 131, 2_000) + rank * 37;
    }

    int device() {
        return device;
    }

    int pid() {
        return pid;
    }

    void header(String traceId) throws IOException {
        StringBuilder sb = new StringBuilder(4096);
        sb.append("{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [");
        int devices = Math.min(8, spec.ranks());
        for (int d = 0; d < devices; d++) {
            sb.append(d == 0 ? "\n" : ",\n");
            sb.append("    {\n      \"id\": ")
                    .append(d)
                    .append(", \"name\": \"NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": 85024112640,\n")
                    .append("      \"computeMajor\": 9, \"computeMinor\": 0,\n")
                    .append("      \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048,\n")
                    .append("      \"regsPerBlock\": 65536, \"regsPerMultiprocessor\": 65536, \"warpSize\": 32,\n")
                    .append("      \"sharedMemPerBlock\": 49152, \"sharedMemPerMultiprocessor\": 233472,\n")
                    .append("      \"numSms\": 132, \"sharedMemPerBlockOptin\": 232448\n    }");
        }
        sb.append("\n  ],\n");
        sb.append("  \"cupti_version\": 24,\n  \"cuda_runtime_version\": 12080,\n  \"cuda_driver_version\": 12080,\n");
        sb.append("  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": ")
                .append(rank)
                .append(", \"world_size\": ")
                .append(spec.ranks())
                .append(", \"pg_count\": 1, \"pg_config\": [{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\",")
                .append(" \"backend_config\": \"cuda:nccl\", \"pg_size\": ")
                .append(spec.ranks())
                .append(", \"ranks\": ")
                .append(rankList())
                .append("}], \"nccl_version\": \"2.21.5\"},\n");
        sb.append("  \"record_shapes\": 1,\n  \"with_stack\": 0,\n");
        sb.append("  \"trace_id\": \"").append(traceId).append("\",\n");
        if (spec.job() != null) {
            sb.append("  \"job_name\": \"").append(spec.job()).append("\",\n");
        }
        sb.append("  \"displayTimeUnit\": \"ms\",\n");
        sb.append("  \"traceEvents\": [");
        out.ascii(sb.toString());
    }

    /**
     * Host part of one pass, in start-time order: the ProfilerStep range and the cpu_ops; with the host-first
     * layout also the runtime/driver calls (and their flow starts) inside their cpu_ops.
     */
    void host(RankPass rp, boolean graph) throws IOException {
        boolean runtime = spec.layout() == TraceLayout.HOST_FIRST;
        boolean partial = startsInside(rp);
        if (spec.stepMarkers() && !partial) {
            begin();
            stepName(rp);
            out.ascii("\", \"pid\": " + pid + ", \"tid\": " + pid);
            times(rp.stepStart, rp.stepEnd - rp.stepStart);
            out.raw(EXT_OPEN);
            out.num(rp.stepExt);
            out.raw(EV_IDX);
            out.num(evIdx++);
            out.raw(ARGS_CLOSE);
        }
        if (!partial) {
            copyOp(rp.h2dOpStart, rp.h2dOpEnd, rp.h2dExt);
            if (runtime) {
                h2dLaunch(rp);
            }
        }
        KernelSpec[] ks = template.kernels;
        if (graph) {
            if (runtime && !partial) {
                graphLaunch(rp);
            }
        } else {
            for (int i = partial ? spec.edits().startInsideKernels() : 0; i < rp.count; i++) {
                if (ks[i].op() != null) {
                    cpuOp(rp, i);
                }
                if (runtime) {
                    launch(rp, i);
                }
            }
        }
        copyOp(rp.d2hOpStart, rp.d2hOpEnd, rp.d2hExt);
        if (runtime) {
            d2hLaunchAndSync(rp);
        }
    }

    /**
     * GPU part of one pass. Host-first layout: GPU events only, in start-time order. Kineto layout: each GPU event
     * followed by its launch (as CUPTI buffers flush), the GPU step annotation last.
     */
    void activity(RankPass rp, boolean graph) throws IOException {
        boolean kineto = spec.layout() == TraceLayout.KINETO;
        boolean partial = startsInside(rp);
        if (spec.stepMarkers() && !kineto && !partial) {
            gpuStep(rp);
        }
        if (!partial) {
            h2dCopy(rp);
            if (kineto) {
                h2dLaunch(rp);
                if (graph) {
                    graphLaunch(rp);
                }
            }
        }
        for (int i = partial ? spec.edits().startInsideKernels() : 0; i < rp.count; i++) {
            if (template.written(spec.edits(), rp.pass, i)) {
                kernel(rp, i, graph);
            }
            if (kineto && !graph) {
                launch(rp, i);
            }
        }
        d2hCopy(rp);
        if (kineto) {
            d2hLaunchAndSync(rp);
            if (spec.stepMarkers() && !partial) {
                gpuStep(rp);
            }
        }
    }

    /** Pass 0 of a trace that starts inside it (SynthEdits#startInsideKernels): its head is not written. */
    private boolean startsInside(RankPass rp) {
        return rp.pass == 0 && spec.edits().startInsideKernels() > 0;
    }

    private void cpuOp(RankPass rp, int i) throws IOException {
        begin();
        out.raw(opHead[i]);
        times(rp.opStart[i], rp.opEnd[i] - rp.opStart[i]);
        out.raw(EXT_OPEN);
        out.num(rp.kExt[i]);
        out.raw(opMid[i]);
        out.raw(EV_IDX);
        out.num(evIdx++);
        out.raw(ARGS_CLOSE);
    }

    private void launch(RankPass rp, int i) throws IOException {
        begin();
        out.raw(launchHead[i]);
        times(rp.launchStart[i], rp.launchDur[i]);
        out.raw(EXT_OPEN);
        out.num(rp.kExt[i]);
        out.raw(launchMid[i]);
        out.num(rp.kCorr[i]);
        out.raw(ARGS_CLOSE);
        flowStart(rp.kCorr[i], rp.launchStart[i]);
    }

    private void kernel(RankPass rp, int i, boolean graph) throws IOException {
        begin();
        out.raw(kernelHead[i]);
        times(rp.kStart[i], rp.kDur[i]);
        out.raw(ARGS_OPEN);
        if (!graph) {
            out.raw(EXT_LABEL);
            out.num(rp.kExt[i]);
            out.raw(ARG_SEP);
        }
        out.raw(kernelMid[i]);
        out.num(rp.kCorr[i]);
        out.raw(kernelTail[i]);
        int stream = template.kernels[i].comm().onCommStream() ? COMM_STREAM : COMPUTE_STREAM;
        flowEnd(rp.kCorr[i], stream, rp.kStart[i]);
    }

    private void graphLaunch(RankPass rp) throws IOException {
        begin();
        out.raw(graphLaunchHead);
        times(rp.graphLaunchStart, rp.graphLaunchDur);
        out.raw(ARGS_OPEN);
        out.raw(GRAPH_CBID);
        out.raw(CORR);
        out.num(rp.graphCorr);
        out.raw(ARGS_CLOSE);
        flowStart(rp.graphCorr, rp.graphLaunchStart);
    }

    /** Input ids: host -> device on the copy stream. */
    private void h2dCopy(RankPass rp) throws IOException {
        copy(h2dHead, h2dMid, h2dTail, rp.h2dStart, rp.h2dDur, rp.h2dExt, rp.h2dCorr, COPY_STREAM);
    }

    private void h2dLaunch(RankPass rp) throws IOException {
        runtime(memcpyAsyncHead, rp.h2dLaunchStart, rp.h2dLaunchDur, rp.h2dExt, MEMCPY_CBID, rp.h2dCorr);
        flowStart(rp.h2dCorr, rp.h2dLaunchStart);
    }

    /** Sampled tokens: device -> host on the compute stream. */
    private void d2hCopy(RankPass rp) throws IOException {
        copy(d2hHead, d2hMid, d2hTail, rp.d2hStart, rp.d2hDur, rp.d2hExt, rp.d2hCorr, COMPUTE_STREAM);
    }

    /** A gpu_memcpy event and the end of its launch flow. */
    private void copy(byte[] head, byte[] mid, byte[] tail, long start, long dur, long ext, long corr, int stream)
            throws IOException {
        begin();
        out.raw(head);
        times(start, dur);
        out.raw(EXT_OPEN);
        out.num(ext);
        out.raw(ARG_SEP);
        out.raw(mid);
        out.num(corr);
        out.raw(tail);
        flowEnd(corr, stream, start);
    }

    private void d2hLaunchAndSync(RankPass rp) throws IOException {
        runtime(memcpyAsyncHead, rp.d2hLaunchStart, rp.d2hLaunchDur, rp.d2hExt, MEMCPY_CBID, rp.d2hCorr);
        flowStart(rp.d2hCorr, rp.d2hLaunchStart);
        runtime(syncHead, rp.syncStart, rp.syncDur, rp.d2hExt, SYNC_CBID, rp.syncCorr);
    }

    /** The host step annotation's head up to the end of its name: the marker style's text. */
    private void stepName(RankPass rp) throws IOException {
        if (spec.steps().style() == StepStyle.Style.PROFILER) {
            out.raw(stepHead);
            out.num(rp.pass);
            return;
        }
        out.raw(markerHead);
        out.ascii(spec.steps().hostText(rp.pass, spec.batchSize())); // digits, letters, [ ] ( ) = _ only
    }

    private void gpuStep(RankPass rp) throws IOException {
        if (!spec.steps().gpuAnnotation()) {
            return;
        }
        begin();
        if (spec.steps().style() == StepStyle.Style.PROFILER) {
            out.raw(gpuStepHead);
            out.num(rp.pass);
        } else {
            out.raw(gpuMarkerHead);
            out.ascii(spec.steps().hostText(rp.pass, spec.batchSize()));
        }
        out.raw(gpuStepIds);
        times(rp.h2dStart, rp.d2hStart + rp.d2hDur - rp.h2dStart);
        out.raw(EXT_OPEN);
        out.num(rp.stepExt);
        out.raw(ARGS_CLOSE);
    }

    /** Process/thread metadata and the profiler's own span, as Kineto ends a trace; then the closing keys. */
    void footer(long traceStartNs, long traceEndNs, String traceName) throws IOException {
        long ts = traceStartNs;
        meta("process_name", pid, 0, ts, "\"name\": \"python3\"");
        meta("process_labels", pid, 0, ts, "\"labels\": \"CPU\"");
        meta("process_sort_index", pid, 0, ts, "\"sort_index\": " + pid);
        meta("process_name", device, 0, ts, "\"name\": \"python3\"");
        meta("process_labels", device, 0, ts, "\"labels\": \"GPU " + device + "\"");
        meta("process_sort_index", device, 0, ts, "\"sort_index\": " + (16_777_216 + device));
        int[] streams = spec.ranks() > 1
                ? new int[] {COMPUTE_STREAM, COPY_STREAM, COMM_STREAM}
                : new int[] {COMPUTE_STREAM, COPY_STREAM};
        for (int s : streams) {
            meta("thread_name", device, s, ts, "\"name\": \"stream " + s + " \"");
            meta("thread_sort_index", device, s, ts, "\"sort_index\": " + s);
        }
        meta("thread_name", pid, pid, ts, "\"name\": \"thread " + pid + " (python3)\"");
        meta("thread_sort_index", pid, pid, ts, "\"sort_index\": " + pid);
        begin();
        out.ascii("{\n    \"ph\": \"X\", \"cat\": \"Trace\", \"ts\": ");
        out.micros(ts);
        out.raw(DUR);
        out.micros(traceEndNs - ts);
        out.ascii(",\n    \"pid\": \"Spans\", \"tid\": \"PyTorch Profiler\",\n"
                + "    \"name\": \"PyTorch Profiler (0)\",\n    \"args\": {\n      \"Op count\": 0\n    }\n  }");
        begin();
        out.ascii("{\n    \"name\": \"Iteration Start: PyTorch Profiler\", \"ph\": \"i\", \"s\": \"g\",\n"
                + "    \"pid\": \"Traces\", \"tid\": \"Trace PyTorch Profiler\", \"ts\": ");
        out.micros(ts);
        out.ascii("\n  }");
        begin();
        out.ascii("{\n    \"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\",\n"
                + "    \"pid\": \"\", \"tid\": \"\", \"ts\": ");
        out.micros(traceEndNs + 1_000);
        out.ascii("\n  }");
        out.ascii("\n  ],\n  \"traceName\": \"" + escape(traceName) + "\"\n}\n");
    }

    private static final byte[] EXT_LABEL = b("\"External id\": ");
    private static final byte[] CBID = b(",      \"cbid\": ");
    private static final byte[] GRAPH_CBID = b("\"cbid\": 311");
    private static final int MEMCPY_CBID = 41;
    private static final int SYNC_CBID = 131;
    private static final byte[] ARG_SEP = b(",      ");

    private void copyOp(long start, long end, long ext) throws IOException {
        begin();
        out.raw(copyOpHead);
        times(start, end - start);
        out.raw(EXT_OPEN);
        out.num(ext);
        out.raw(copyOpMid);
        out.raw(EV_IDX);
        out.num(evIdx++);
        out.raw(ARGS_CLOSE);
    }

    private void runtime(byte[] head, long start, long dur, long ext, int cbid, long correlation) throws IOException {
        begin();
        out.raw(head);
        times(start, dur);
        out.raw(EXT_OPEN);
        out.num(ext);
        out.raw(CBID);
        out.num(cbid);
        out.raw(CORR);
        out.num(correlation);
        out.raw(ARGS_CLOSE);
    }

    private void flowStart(long id, long ts) throws IOException {
        if (!spec.flows()) {
            return;
        }
        begin();
        out.raw(flowStartHead);
        out.num(id);
        out.raw(hostIds);
        out.micros(ts);
        out.raw(flowStartTail);
    }

    private void flowEnd(long id, int stream, long ts) throws IOException {
        if (!spec.flows()) {
            return;
        }
        begin();
        out.raw(FLOW_END_HEAD);
        out.num(id);
        out.raw(stream == COMPUTE_STREAM ? computeIds : stream == COMM_STREAM ? commIds : copyIds);
        out.micros(ts);
        out.raw(FLOW_END_TAIL);
    }

    private static final byte[] FLOW_END_HEAD = b("{\n    \"ph\": \"f\", \"id\": ");
    private static final byte[] FLOW_END_TAIL = b(",\n    \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"\n  }");

    private void meta(String name, int metaPid, int tid, long ts, String args) throws IOException {
        begin();
        out.ascii("{\n    \"name\": \"" + name + "\", \"ph\": \"M\", \"ts\": ");
        out.micros(ts);
        out.ascii(", \"pid\": " + metaPid + ", \"tid\": " + tid + ",\n    \"args\": {\n      " + args + "\n    }\n  }");
    }

    private void times(long start, long dur) throws IOException {
        out.raw(TS);
        out.micros(start);
        out.raw(DUR);
        out.micros(dur);
    }

    private void begin() throws IOException {
        out.raw(first ? FIRST : SEP);
        first = false;
    }

    private String rankList() {
        StringBuilder sb = new StringBuilder("[");
        for (int r = 0; r < spec.ranks(); r++) {
            if (r > 0) {
                sb.append(", ");
            }
            sb.append(r);
        }
        return sb.append(']').toString();
    }

    private String commArgs(KernelSpec k) {
        if (!k.comm().onCommStream()) {
            return "";
        }
        boolean reduce = k.comm() == KernelSpec.Comm.ALL_REDUCE;
        return ",      \"Collective name\": \"" + (reduce ? "allreduce" : "allgather") + "\", \"In msg nelems\": "
                + (long) spec.batchSize() * 1024 + ", \"Out msg nelems\": " + (long) spec.batchSize() * 1024
                + ", \"Group size\": " + spec.ranks() + ", \"dtype\": \"BFloat16\", \"In split size\": \"[]\","
                + " \"Out split size\": \"[]\", \"Process Group Name\": \"0\", \"Process Group Description\":"
                + " \"default_pg\", \"Process Group Ranks\": \"" + rankList() + "\"";
    }

    private static String geometryArgs(Geometry g) {
        return ",      \"registers per thread\": " + g.regs() + ",      \"shared memory\": " + g.smem()
                + ",      \"blocks per SM\": " + String.format(Locale.ROOT, "%.6f", g.blocksPerSm())
                + ",      \"warps per SM\": " + String.format(Locale.ROOT, "%.6f", g.warpsPerSm())
                + ",      \"grid\": [" + g.gx() + ", " + g.gy() + ", " + g.gz() + "],      \"block\": [" + g.bx()
                + ", 1, 1],      \"est. achieved occupancy %\": " + g.occupancyPercent();
    }

    private static String bandwidth(long bytes, double us) {
        return String.format(Locale.ROOT, "%.6f", bytes / (us * 1000.0));
    }

    static String escape(String s) {
        StringBuilder sb = null;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\' || c < 0x20) {
                if (sb == null) {
                    sb = new StringBuilder(s.length() + 8).append(s, 0, i);
                }
                switch (c) {
                    case '"' -> sb.append("\\\"");
                    case '\\' -> sb.append("\\\\");
                    case '\n' -> sb.append("\\n");
                    case '\t' -> sb.append("\\t");
                    default -> sb.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                }
            } else if (sb != null) {
                sb.append(c);
            }
        }
        return sb == null ? s : sb.toString();
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
