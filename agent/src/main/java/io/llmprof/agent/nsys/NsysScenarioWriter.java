package io.llmprof.agent.nsys;

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonGenerator;
import io.llmprof.agent.kineto.TraceFiles;
import io.llmprof.agent.nsys.NsysScenario.Layout;
import io.llmprof.agent.nsys.NsysScenario.NvtxStrings;
import io.llmprof.agent.nsys.NsysScenario.Straddle;
import io.llmprof.events.Json;
import io.llmprof.events.host.HostMetrics;
import io.llmprof.events.host.HostSums;
import io.llmprof.events.host.HostThresholdSet;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Writes an {@link NsysScenario} as Nsight Systems export(s) with {@link NsysExportWriter}, and its truth
 * ({@link NsysTruth}) as {@code <out>.truth.json}. All ranks advance in lockstep, kernel by kernel, so a
 * collective ends when its last rank has arrived; rows are streamed to SQLite as they are made, and memory holds
 * one step's GPU idle intervals per rank plus the truth's step list (capped), whatever the run's size.
 *
 * <p>One step of one rank, all times ns (ANALYSIS.md section 3 terms):
 *
 * <pre>
 * previous E ..          the scenario's GAP host ranges, back to back from the previous window's end (step > 0)
 * S                      window start (NVTX "[Executor] _forward_step i: c ctx reqs, g gen reqs", push/pop)
 * [P0, P1]               prep range (NONE: [S, S+prep]; LEAD: starts straddle before S; TRAIL: see Straddle)
 * h = max(S, P1)         host cursor: the scenario's STEP host ranges back to back, then API calls back to
 *                        back, each launchNs long, launchGapNs apart
 * GPU op start           max(call start + launchLatencyNs, previous GPU end + kernelGapNs); in a graph launch,
 *                        kernels after the first start at previous end + kernelGapNs
 * comm kernel            starts when its rank is ready, ends at the latest rank's ready + commNs
 * D2H + sync             cudaMemcpyAsync, the copy, cudaStreamSynchronize until the copy ends
 * E                      (sync end, or max(host cursor, GPU end)) + tailNs
 * next S                 E + hostGapNs * gapScale
 * </pre>
 *
 * Busy = the step's GPU operations (they never overlap and all lie inside [S, E]); idle = the window minus busy;
 * prep = the union of the prep ranges clipped to the window; exposed = prep overlapping idle.
 */
public final class NsysScenarioWriter {
    static final int STREAM = 7;
    static final long SYNC_MIN_NS = 1_000;
    static final long MEMSET_NS = 2_000;
    static final long MEMSET_BYTES = 1L << 20;
    static final long GRAPH_ID = 1;

    /** Compute kernels of a layer by position modulo 8 (generation steps; attention differs in context steps). */
    static final String[] KERNELS = {
        "void tensorrt_llm::kernels::generalRmsNorm<__nv_bfloat16>(tensorrt_llm::kernels::GeneralRmsNormParams)",
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel"
                + "__5x_cublas",
        "void tensorrt_llm::kernels::applyBiasRopeUpdateKVCacheV2<__nv_bfloat16, __nv_bfloat16, false>"
                + "(tensorrt_llm::kernels::QKVPreprocessingParams<__nv_bfloat16, __nv_bfloat16>)",
        "void tensorrt_llm::kernels::mmha::masked_multihead_attention_kernel<__nv_bfloat16, 128>"
                + "(tensorrt_llm::kernels::Multihead_attention_params<__nv_bfloat16, false>)",
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel"
                + "__5x_cublas",
        "void tensorrt_llm::kernels::fusedAddRmsNorm<__nv_bfloat16>(tensorrt_llm::kernels::GeneralRmsNormParams)",
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel"
                + "__5x_cublas_swiglu",
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel"
                + "__5x_cublas",
    };

    static final String CONTEXT_ATTENTION = "fmha_v2_flash_attention_bf16_64_128_S_qkv_128_causal_sm90_kernel_nl_tiled";
    static final String ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";

    private NsysScenarioWriter() {}

    /** Where the truth of an export written to {@code out} goes. */
    public static Path truthPath(Path out) {
        return out.resolveSibling(out.getFileName() + ".truth.json");
    }

    /** The files the scenario's layout writes for {@code out}: {@code out} itself, or one per rank. */
    public static List<Path> files(NsysScenario s, Path out) {
        if (s.layout() != Layout.FILES) {
            return List.of(out);
        }
        String name = out.getFileName().toString();
        String stem = name.toLowerCase(Locale.ROOT).endsWith(".sqlite") ? name.substring(0, name.length() - 7) : name;
        List<Path> files = new ArrayList<>();
        for (int r = 0; r < s.ranks(); r++) {
            files.add(out.resolveSibling(stem + "_rank" + r + ".sqlite"));
        }
        return files;
    }

    /** Writes the export(s) and {@link #truthPath(Path)}; returns the truth. */
    public static NsysTruth write(NsysScenario scenario, Path out) throws IOException {
        return new Run(scenario, out.toAbsolutePath().normalize()).run();
    }

    /** GPU idle intervals of the current window, growable. */
    private static final class Gaps {
        long[] start = new long[64];
        long[] end = new long[64];
        int n;

        void add(long a, long b) {
            if (b <= a) {
                return;
            }
            if (n == start.length) {
                start = Arrays.copyOf(start, n * 2);
                end = Arrays.copyOf(end, n * 2);
            }
            start[n] = a;
            end[n] = b;
            n++;
        }

        long overlap(long a, long b) {
            long sum = 0;
            for (int i = 0; i < n; i++) {
                long lo = Math.max(a, start[i]);
                long hi = Math.min(b, end[i]);
                if (hi > lo) {
                    sum += hi - lo;
                }
            }
            return sum;
        }
    }

    /** SplitMix64, one stream per (seed, rank, step). */
    private static final class Mix {
        private long state;

        Mix(long seed, long rank, long step) {
            long s = mix(seed ^ 0x9E3779B97F4A7C15L);
            s = mix(s ^ (rank * 0xC2B2AE3D27D4EB4FL));
            state = mix(s ^ (step * 0x165667B19E3779F9L));
        }

        double nextDouble() {
            return (mix(state += 0x9E3779B97F4A7C15L) >>> 11) * 0x1.0p-53;
        }

        private static long mix(long z) {
            z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
            z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
            return z ^ (z >>> 31);
        }
    }

    /** One rank's state while generating. */
    private static final class RankState {
        final int r;
        final String label;
        final String file;
        final long pid;
        final long tid;
        final int device;
        final int proc;
        final NsysExportWriter w;
        final Gaps gaps = new Gaps();
        final Map<String, HostSums> sums = new LinkedHashMap<>();
        final Map<String, long[]> gapSums = new LinkedHashMap<>();
        /** The scenario's host ranges of the current step: inside the window, and in the gap before it. */
        final Map<String, Long> ranges = new LinkedHashMap<>();

        final Map<String, Long> gapRanges = new LinkedHashMap<>();
        long collectives;
        long collectivesLast;

        long start;
        long prevEnd;
        long host;
        long gpuFree;
        long lastBusyEnd;
        long prepStart;
        long prepEnd;
        long nextPrepStart = -1;
        long nextPrepEnd = -1;
        long busy;
        long launchNs;
        long launches;
        long apis;
        long comm;
        long kernels;
        long graphKernels;
        long memops;
        long graphLaunchStart;
        long graphCorrelation;
        Mix mix;

        RankState(int r, String label, String file, long pid, long tid, int device, int proc, NsysExportWriter w) {
            this.r = r;
            this.label = label;
            this.file = file;
            this.pid = pid;
            this.tid = tid;
            this.device = device;
            this.proc = proc;
            this.w = w;
        }

        /** A GPU operation [a, b] of this window. */
        void busy(long a, long b) {
            busy += b - a;
            gaps.add(lastBusyEnd, a);
            lastBusyEnd = b;
            gpuFree = b;
        }
    }

    private static final class Run {
        private final NsysScenario s;
        private final Path out;
        private final List<Path> files;
        private final List<NsysExportWriter> writers = new ArrayList<>();
        private final RankState[] ranks;
        private final long[] correlation;
        private final String launch;
        private final String launchEx;
        private final String graphLaunch;
        private final String memcpyAsync;
        private final String sync;
        private final String memsetAsync;
        private final boolean stepTextId;
        private final boolean prepTextId;
        private final List<NsysTruth.Step> kept = new ArrayList<>();
        private boolean stepsComplete = true;
        private long kernels;
        private JsonGenerator json;

        Run(NsysScenario s, Path out) {
            this.s = s;
            this.out = out;
            this.files = files(s, out);
            this.ranks = new RankState[s.ranks()];
            this.correlation = new long[s.ranks()];
            String v = s.apiVersionSuffix() ? "_v" : null;
            launch = v == null ? "cudaLaunchKernel" : "cudaLaunchKernel_v7000";
            launchEx = v == null ? "cudaLaunchKernelExC" : "cudaLaunchKernelExC_v11060";
            graphLaunch = v == null ? "cudaGraphLaunch" : "cudaGraphLaunch_v10000";
            memcpyAsync = v == null ? "cudaMemcpyAsync" : "cudaMemcpyAsync_v3020";
            sync = v == null ? "cudaStreamSynchronize" : "cudaStreamSynchronize_v3020";
            memsetAsync = v == null ? "cudaMemsetAsync" : "cudaMemsetAsync_v3020";
            stepTextId = s.nvtxStrings() == NvtxStrings.TEXT_ID;
            prepTextId = s.nvtxStrings() != NvtxStrings.TEXT;
        }

        NsysTruth run() throws IOException {
            Path truth = truthPath(out);
            Path truthTemp = truth.resolveSibling("." + truth.getFileName() + ".tmp");
            boolean ok = false;
            try {
                open();
                Files.createDirectories(truth.getParent());
                json = Json.mapper().getFactory().createGenerator(truthTemp.toFile(), JsonEncoding.UTF8);
                json.useDefaultPrettyPrinter();
                json.writeStartObject();
                json.writeStringField("format", NsysTruth.FORMAT);
                json.writeFieldName("scenario");
                Json.mapper().writeValue(json, s);
                json.writeFieldName("files");
                Json.mapper().writeValue(json, fileNames());
                json.writeArrayFieldStart("steps");
                long steps = s.effectiveSteps();
                List<Boolean> pattern = s.phasePattern();
                for (long i = 0; i < steps; i++) {
                    step(i, pattern.get((int) (i % pattern.size())));
                }
                json.writeEndArray();
                ok = true;
            } finally {
                if (!ok) {
                    writers.forEach(NsysExportWriter::discard);
                }
                IOException first = null;
                for (NsysExportWriter w : writers) {
                    try {
                        w.close();
                    } catch (IOException e) {
                        first = first == null ? e : first;
                    }
                }
                if (!ok || first != null) {
                    if (json != null) {
                        json.close();
                    }
                    Files.deleteIfExists(truthTemp);
                }
                if (first != null) {
                    throw first;
                }
            }
            long rows = writers.stream().mapToLong(NsysExportWriter::rows).sum();
            List<NsysTruth.Rank> rankTruths = new ArrayList<>();
            for (RankState st : ranks) {
                Map<String, NsysTruth.Phase> phases = new LinkedHashMap<>();
                for (Map.Entry<String, HostSums> e : st.sums.entrySet()) {
                    long[] g = st.gapSums.get(e.getKey());
                    phases.put(e.getKey(), new NsysTruth.Phase(e.getValue(), HostMetrics.of(e.getValue()), g[0], g[1]));
                }
                rankTruths.add(new NsysTruth.Rank(
                        st.label, st.file, st.pid, st.tid, st.device, phases, st.collectives, st.collectivesLast));
            }
            NsysTruth result = new NsysTruth(
                    NsysTruth.FORMAT,
                    s,
                    fileNames(),
                    s.effectiveSteps(),
                    kernels,
                    rows,
                    rankTruths,
                    kept,
                    stepsComplete);
            try (JsonGenerator j = json) {
                j.writeNumberField("stepsPerRank", result.stepsPerRank());
                j.writeNumberField("kernels", kernels);
                j.writeNumberField("rows", rows);
                j.writeFieldName("ranks");
                Json.mapper().writeValue(j, rankTruths);
                j.writeBooleanField("stepsComplete", true);
                j.writeEndObject();
            }
            Files.move(truthTemp, truth, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            return result;
        }

        private List<String> fileNames() {
            return files.stream().map(Path::toString).toList();
        }

        private void open() throws IOException {
            int n = s.ranks();
            switch (s.layout()) {
                case PROCESSES -> {
                    NsysExportWriter w = NsysExportWriter.create(files.get(0));
                    writers.add(w);
                    String fileRank = fileRank(files.get(0));
                    for (int r = 0; r < n; r++) {
                        long pid = s.basePid() + r;
                        String base = "pid" + pid;
                        String label = n == 1
                                ? (fileRank != null ? fileRank : base)
                                : (fileRank != null ? fileRank + "." + base : base);
                        ranks[r] = new RankState(r, label, files.get(0).toString(), pid, pid, r, r, w);
                        w.process(pid, "python3");
                        w.gpu(r, s.gpuName());
                    }
                }
                case DEVICES -> {
                    NsysExportWriter w = NsysExportWriter.create(files.get(0));
                    writers.add(w);
                    long pid = s.basePid();
                    String fileRank = fileRank(files.get(0));
                    String base = fileRank != null ? fileRank : "pid" + pid;
                    w.process(pid, "python3");
                    for (int r = 0; r < n; r++) {
                        String label = r == 0 ? base : base + ".dev" + r;
                        ranks[r] = new RankState(r, label, files.get(0).toString(), pid, pid + r, r, 0, w);
                        w.gpu(r, s.gpuName());
                    }
                }
                case FILES -> {
                    for (int r = 0; r < n; r++) {
                        NsysExportWriter w = NsysExportWriter.create(files.get(r));
                        writers.add(w);
                        long pid = s.basePid() + r;
                        String fileRank = fileRank(files.get(r));
                        ranks[r] = new RankState(
                                r,
                                fileRank != null ? fileRank : "pid" + pid,
                                files.get(r).toString(),
                                pid,
                                pid,
                                r,
                                r,
                                w);
                        w.process(pid, "python3");
                        w.gpu(r, s.gpuName());
                    }
                }
            }
            for (RankState st : ranks) {
                st.gpuFree = 0;
                st.prevEnd = 0;
            }
        }

        private static String fileRank(Path file) {
            return TraceFiles.rankFromFileName(file.getFileName().toString()).orElse(null);
        }

        private long nextCorrelation(RankState st) {
            return ++correlation[st.proc];
        }

        private void step(long i, boolean context) throws IOException {
            int ctxReqs = context ? s.ctxReqs() : 0;
            String label = "[Executor] _forward_step " + i + ": " + ctxReqs + " ctx reqs, " + s.genReqs() + " gen reqs";
            boolean graphStep = s.graph() && !context;
            long prep = s.effectivePrepNs();
            long lat = s.launchLatencyNs();
            long kgap = s.kernelGapNs();
            for (RankState st : ranks) {
                begin(st, i, prep);
                if (s.memset()) {
                    long c = nextCorrelation(st);
                    long call = st.host;
                    st.w.runtime(st.pid, st.tid, call, call + s.launchNs(), c, memsetAsync);
                    st.apis++;
                    long a = Math.max(call + lat, st.gpuFree + kgap);
                    st.w.memset(st.pid, st.device, STREAM, a, a + MEMSET_NS, c, MEMSET_BYTES);
                    st.memops++;
                    st.busy(a, a + MEMSET_NS);
                    st.host = call + s.launchNs() + s.launchGapNs();
                }
                if (graphStep) {
                    st.graphCorrelation = nextCorrelation(st);
                    st.graphLaunchStart = st.host;
                    st.w.runtime(
                            st.pid, st.tid, st.host, st.host + s.graphLaunchNs(), st.graphCorrelation, graphLaunch);
                    st.apis++;
                    st.launches++;
                    st.launchNs += s.graphLaunchNs();
                    st.host += s.graphLaunchNs() + s.launchGapNs();
                }
            }
            int k = s.kernelsPerLayer();
            int commFirst = k / 2;
            long node = 0;
            long[] ready = new long[ranks.length];
            long[] corr = new long[ranks.length];
            for (int layer = 0; layer < s.layers(); layer++) {
                for (int j = 0; j < k; j++) {
                    boolean beforeComm = s.ranks() > 1 && (j == commFirst || j == k - 1);
                    String name = context && j % 8 == 3 ? CONTEXT_ATTENTION : KERNELS[j % 8];
                    long base = NsysScenario.WEIGHTS.get(j % 8) * s.kernelNs() * (context ? s.contextKernelScale() : 1);
                    for (RankState st : ranks) {
                        long dur = base + (long) (st.mix.nextDouble() * base * s.jitter());
                        if (beforeComm && s.stragglerRank() != null && s.stragglerRank() == st.r) {
                            dur += s.stragglerDelayNs();
                        }
                        long c;
                        long a;
                        if (graphStep) {
                            c = st.graphCorrelation;
                            a = node == 0 ? Math.max(st.graphLaunchStart + lat, st.gpuFree + kgap) : st.gpuFree + kgap;
                        } else {
                            c = nextCorrelation(st);
                            a = Math.max(st.host + lat, st.gpuFree + kgap);
                            eagerLaunch(st, c, launch);
                        }
                        kernel(st, a, a + dur, c, name, graphStep, node);
                    }
                    node++;
                    if (!beforeComm) {
                        continue;
                    }
                    // Two all-reduces per layer: after kernel k/2 and after the last (both after it when k < 3).
                    int comms = j == commFirst && j == k - 1 ? 2 : 1;
                    for (int m = 0; m < comms; m++) {
                        long last = Long.MIN_VALUE;
                        for (RankState st : ranks) {
                            if (graphStep) {
                                corr[st.r] = st.graphCorrelation;
                                ready[st.r] = st.gpuFree + kgap;
                            } else {
                                corr[st.r] = nextCorrelation(st);
                                ready[st.r] = Math.max(st.host + lat, st.gpuFree + kgap);
                                eagerLaunch(st, corr[st.r], launchEx);
                            }
                            last = Math.max(last, ready[st.r]);
                        }
                        long end = last + s.commNs();
                        int arrivedLast = 0;
                        int lastRank = -1;
                        for (RankState st : ranks) {
                            if (ready[st.r] == last) {
                                arrivedLast++;
                                lastRank = st.r;
                            }
                            kernel(st, ready[st.r], end, corr[st.r], ALL_REDUCE, graphStep, node);
                            st.comm += end - ready[st.r];
                            st.collectives++;
                        }
                        if (arrivedLast == 1) {
                            ranks[lastRank].collectivesLast++;
                        }
                        node++;
                    }
                }
            }
            for (RankState st : ranks) {
                long end;
                if (s.d2hSync()) {
                    long c = nextCorrelation(st);
                    long call = st.host;
                    st.w.runtime(st.pid, st.tid, call, call + s.launchNs(), c, memcpyAsync);
                    st.apis++;
                    long a = Math.max(call + lat, st.gpuFree + kgap);
                    long copyEnd = a + s.d2hNs();
                    st.w.memcpy(
                            st.pid,
                            st.device,
                            STREAM,
                            a,
                            copyEnd,
                            c,
                            NsysExportWriter.COPY_DTOH,
                            4L * (ctxReqs + s.genReqs()));
                    st.memops++;
                    st.busy(a, copyEnd);
                    long syncStart = call + s.launchNs() + s.launchGapNs();
                    long syncEnd = Math.max(syncStart + SYNC_MIN_NS, copyEnd);
                    st.w.runtime(st.pid, st.tid, syncStart, syncEnd, nextCorrelation(st), sync);
                    st.apis++;
                    end = syncEnd + s.tailNs();
                } else {
                    end = Math.max(st.host, st.gpuFree) + s.tailNs();
                }
                finish(st, i, label, context, end, prep);
            }
        }

        private void eagerLaunch(RankState st, long c, String name) throws IOException {
            st.w.runtime(st.pid, st.tid, st.host, st.host + s.launchNs(), c, name);
            st.apis++;
            st.launches++;
            st.launchNs += s.launchNs();
            st.host += s.launchNs() + s.launchGapNs();
        }

        private void kernel(RankState st, long a, long b, long c, String name, boolean graphStep, long node)
                throws IOException {
            st.w.kernel(
                    st.pid,
                    st.device,
                    STREAM,
                    a,
                    b,
                    c,
                    name,
                    graphStep ? GRAPH_ID : null,
                    graphStep ? GRAPH_ID * 100_000 + node + 1 : null);
            st.kernels++;
            if (graphStep) {
                st.graphKernels++;
            }
            kernels++;
            st.busy(a, b);
        }

        private void begin(RankState st, long i, long prep) throws IOException {
            st.start = i == 0 ? s.startNs() : st.prevEnd + s.effectiveGapNs();
            long a;
            if (s.prepStraddle() == Straddle.LEAD) {
                a = st.start - s.straddleNs();
                a = Math.max(0, i == 0 ? a : Math.max(a, st.prevEnd));
            } else if (s.prepStraddle() == Straddle.TRAIL && i > 0) {
                a = st.nextPrepStart;
            } else {
                a = st.start;
            }
            st.prepStart = a;
            st.prepEnd = a + prep;
            boolean carried = s.prepStraddle() == Straddle.TRAIL && i > 0;
            if (!carried && prep > 0) {
                st.w.nvtx(
                        st.pid,
                        st.tid,
                        st.prepStart,
                        st.prepEnd,
                        s.prepName(),
                        prepTextId,
                        a < st.start ? NsysExportWriter.NVTX_START_END : NsysExportWriter.NVTX_PUSH_POP);
            }
            st.host = Math.max(st.start, st.prepEnd);
            st.ranges.clear();
            st.gapRanges.clear();
            long gapCursor = st.prevEnd;
            for (NsysScenario.HostRange r : s.hostRanges()) {
                if (r.place() == NsysScenario.Place.GAP) {
                    if (i > 0) { // the first step has no gap before it
                        st.w.nvtx(
                                st.pid,
                                st.tid,
                                gapCursor,
                                gapCursor + r.durNs(),
                                r.name(),
                                prepTextId,
                                NsysExportWriter.NVTX_START_END);
                        st.gapRanges.merge(r.name(), r.durNs(), Long::sum);
                        gapCursor += r.durNs();
                    }
                } else {
                    st.w.nvtx(st.pid, st.tid, st.host, st.host + r.durNs(), r.name(), prepTextId);
                    st.ranges.merge(r.name(), r.durNs(), Long::sum);
                    st.host += r.durNs();
                }
            }
            st.lastBusyEnd = st.start;
            st.gaps.n = 0;
            st.busy = 0;
            st.launchNs = 0;
            st.launches = 0;
            st.apis = 0;
            st.comm = 0;
            st.kernels = 0;
            st.graphKernels = 0;
            st.memops = 0;
            st.mix = new Mix(s.seed(), st.r, i);
        }

        private void finish(RankState st, long i, String label, boolean context, long end, long prep)
                throws IOException {
            long start = st.start;
            st.gaps.add(st.lastBusyEnd, end);
            st.w.nvtx(st.pid, st.tid, start, end, label, stepTextId, NsysExportWriter.NVTX_PUSH_POP);
            // Prep ranges that touch this window: its own, and with TRAIL the next step's, begun before it ends.
            long[][] pieces = {{st.prepStart, st.prepEnd}, {-1, -1}};
            if (s.prepStraddle() == Straddle.TRAIL) {
                st.nextPrepStart = Math.max(start, end - s.straddleNs());
                st.nextPrepEnd = st.nextPrepStart + prep;
                if (prep > 0) {
                    st.w.nvtx(
                            st.pid,
                            st.tid,
                            st.nextPrepStart,
                            st.nextPrepEnd,
                            s.prepName(),
                            prepTextId,
                            st.nextPrepEnd > end ? NsysExportWriter.NVTX_START_END : NsysExportWriter.NVTX_PUSH_POP);
                }
                pieces[1] = new long[] {st.nextPrepStart, st.nextPrepEnd};
            }
            long prepNs = 0;
            long exposed = 0;
            // Union of the (at most two) pieces clipped to the window, then its overlap with the idle intervals.
            for (long[] p : pieces) {
                p[0] = Math.max(p[0], start);
                p[1] = Math.min(p[1], end);
            }
            Arrays.sort(pieces, (x, y) -> Long.compare(x[0], y[0]));
            long coveredTo = Long.MIN_VALUE;
            for (long[] p : pieces) {
                long a = Math.max(p[0], coveredTo);
                if (p[1] > a) {
                    prepNs += p[1] - a;
                    exposed += st.gaps.overlap(a, p[1]);
                    coveredTo = p[1];
                }
            }
            HostSums sums = new HostSums(
                    1,
                    end - start,
                    st.busy,
                    st.launchNs,
                    st.launches,
                    st.apis,
                    prepNs,
                    exposed,
                    st.comm,
                    st.kernels,
                    st.graphKernels,
                    st.memops);
            String phase = context ? HostThresholdSet.CONTEXT : HostThresholdSet.GENERATION;
            Long gapBefore = i == 0 ? null : start - st.prevEnd;
            for (String key : new String[] {NsysTruth.ALL, phase}) {
                st.sums.merge(key, sums, HostSums::plus);
                long[] g = st.gapSums.computeIfAbsent(key, x -> new long[2]);
                if (gapBefore != null) {
                    g[0]++;
                    g[1] += gapBefore;
                }
            }
            NsysTruth.Step step =
                    new NsysTruth.Step(st.label, i, label, phase, start, end, gapBefore, sums, st.ranges, st.gapRanges);
            Json.mapper().writeValue(json, step);
            if (kept.size() < NsysTruth.MAX_STEPS_KEPT) {
                kept.add(step);
            } else {
                stepsComplete = false;
            }
            st.prevEnd = end;
        }
    }
}
