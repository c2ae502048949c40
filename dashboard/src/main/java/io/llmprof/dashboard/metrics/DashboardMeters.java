package io.llmprof.dashboard.metrics;

import io.llmprof.events.Anomaly;
import io.llmprof.events.LayerRecord;
import io.llmprof.events.PassRecord;
import io.llmprof.events.RankHardware;
import io.llmprof.events.RankKey;
import io.llmprof.events.host.HostAssessment;
import io.llmprof.events.host.HostDrillDown;
import io.llmprof.events.host.HostMetrics;
import io.llmprof.events.host.HostThresholdSet;
import io.llmprof.events.host.HostVerdict;
import io.llmprof.events.metrics.BoundedTagValues;
import io.llmprof.events.service.BatchRecord;
import io.llmprof.events.service.ForwardRecord;
import io.llmprof.events.service.RequestRecord;
import io.llmprof.events.service.RequestStateRecord;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;
import java.util.function.ToDoubleFunction;

/**
 * Every meter of the dashboard, its names and tag keys. Meters count what the dashboard consumes from
 * the topics, so their values agree whichever process produced the records.
 *
 * <p>Names are dot names without unit suffix; the Prometheus registry renders {@code llmprof.pass.wall}
 * as {@code llmprof_pass_wall_seconds_*} and counters with {@code _total}. Tag values are bounded: at
 * most {@code maxRankTags} (job, rank) pairs, {@value #MAX_LAYER_TYPES} layer types and {@value #MAX_CATEGORIES}
 * kernel categories get their own series, the rest share the value {@code other}; pass phases are a fixed set.
 * Series that describe one rank (host gauges, {@value #RANK_HARDWARE_INFO}) exist only for admitted pairs.
 *
 * <p>A (job, rank) or (job, instance) pair that has had nothing for {@link BoundedTagValues#DEFAULT_IDLE} gives its
 * place to the next new pair once the limit is reached, and its series leave {@code /metrics}: a dashboard that runs
 * for weeks gives each new job series of its own as old ones end. Pairs in use are never pushed out.
 */
public final class DashboardMeters {
    public static final String PASS_WALL = "llmprof.pass.wall";
    public static final String LAYER_WALL = "llmprof.layer.wall";
    public static final String PASSES_CLOSED = "llmprof.passes.closed";
    public static final String LAYERS_CLOSED = "llmprof.layers.closed";
    public static final String LAYER_KERNEL_TIME = "llmprof.layer.kernel.time";
    public static final String ANOMALIES = "llmprof.anomalies";
    public static final String DEAD_LETTERS = "llmprof.dead.letters";
    public static final String BAD_RECORDS = "llmprof.dashboard.bad.records";
    public static final String UNAUTHORIZED = "llmprof.dashboard.unauthorized";
    public static final String BUILD_INFO = "llmprof.build.info";
    // Where each rank ran, from llmprof.rank-hardware: value 1, tags job, rank, gpu, tp, ep, world_size.
    public static final String RANK_HARDWARE_INFO = "llmprof.rank.hardware.info";
    public static final String LIVE_CLIENTS = "llmprof.dashboard.live.clients";
    public static final String LIVE_EVENTS = "llmprof.dashboard.live.events";

    // Host overhead (ANALYSIS.md section 3), from llmprof.host-verdicts, -steps and -baselines.
    public static final String HOST_GPU_IDLE_RATIO = "llmprof.host.gpu.idle.ratio";
    public static final String HOST_LAUNCH_OVERHEAD_RATIO = "llmprof.host.launch.overhead.ratio";
    public static final String HOST_GPU_UTILIZATION = "llmprof.host.gpu.utilization";
    public static final String HOST_PREP_EXPOSED_RATIO = "llmprof.host.prep.exposed.ratio";
    public static final String HOST_PREP_PERF_IMPACT = "llmprof.host.prep.perf.impact";
    public static final String HOST_PREP_IDLE_ATTRIBUTION = "llmprof.host.prep.idle.attribution";
    public static final String HOST_NCCL_RATIO = "llmprof.host.nccl.ratio";
    public static final String HOST_VERDICT = "llmprof.host.verdict";
    public static final String HOST_CROSSED_COUNT = "llmprof.host.crossed.count";
    public static final String HOST_KERNEL_GAPS = "llmprof.host.kernel.gaps";
    public static final String HOST_GRAPH_COVERAGE = "llmprof.host.graph.coverage";
    public static final String HOST_STRAGGLER = "llmprof.host.straggler";
    public static final String HOST_REGRESSION_RATIO = "llmprof.host.regression.ratio";

    // Service level (ANALYSIS.md section 4), vLLM/SGLang meanings, from the llmprof.service-* topics.
    public static final String SERVICE_TTFT = "llmprof.service.time.to.first.token";
    public static final String SERVICE_TPOT = "llmprof.service.time.per.output.token";
    public static final String SERVICE_E2E = "llmprof.service.e2e.request.latency";
    public static final String SERVICE_QUEUE = "llmprof.service.request.queue.time";
    public static final String SERVICE_RUNNING = "llmprof.service.requests.running";
    public static final String SERVICE_WAITING = "llmprof.service.requests.waiting";
    public static final String SERVICE_SWAPPED = "llmprof.service.requests.swapped";
    public static final String SERVICE_KV_USAGE = "llmprof.service.kv.cache.usage";
    public static final String SERVICE_BATCH_SIZE = "llmprof.service.batch.size";
    public static final String SERVICE_BUBBLE = "llmprof.service.forward.bubble";
    public static final String SERVICE_OVERLAPS = "llmprof.service.forward.overlaps";
    public static final String SERVICE_PROMPT_TOKENS = "llmprof.service.prompt.tokens";
    public static final String SERVICE_GENERATION_TOKENS = "llmprof.service.generation.tokens";
    public static final String SERVICE_FINISHED = "llmprof.service.requests.finished";

    public static final String TAG_JOB = "job";
    public static final String TAG_INSTANCE = "instance";
    public static final String TAG_REASON = "reason";
    public static final String TAG_RANK = "rank";
    public static final String TAG_LAYER_TYPE = "layer_type";
    public static final String TAG_COMPLETE = "complete";
    public static final String TAG_STEADY = "steady";
    public static final String TAG_CATEGORY = "category";
    public static final String TAG_KIND = "kind";
    public static final String TAG_SEVERITY = "severity";
    public static final String TAG_ORIGIN = "origin";
    public static final String TAG_TOPIC = "topic";
    public static final String TAG_VERSION = "version";
    public static final String TAG_PHASE = "phase";
    public static final String TAG_BUCKET = "bucket";
    public static final String TAG_METRIC = "metric";
    /** Server-Sent Event name: hello, pass, changed. */
    public static final String TAG_EVENT = "event";
    // Rank hardware info: the GPU name (cut to 128 characters), TP, EP and world size; unknown when not stated.
    public static final String TAG_GPU = "gpu";
    public static final String TAG_TP = "tp";
    public static final String TAG_EP = "ep";
    public static final String TAG_WORLD_SIZE = "world_size";

    /** {@value #HOST_VERDICT} kinds. */
    public static final String KIND_SEED = "seed";

    public static final String KIND_LLMPROF = "llmprof";
    /** {@value #HOST_VERDICT} values: YES 1, NO 0, INCONCLUSIVE -1. */
    public static final double VERDICT_YES = 1;

    public static final double VERDICT_NO = 0;
    public static final double VERDICT_INCONCLUSIVE = -1;

    private static final Set<String> HOST_PHASES =
            Set.of(HostThresholdSet.ALL, HostThresholdSet.CONTEXT, HostThresholdSet.GENERATION);

    /** {@value #PASS_WALL} phases: a step marker's phase, {@code all} without one; anything else is {@code other}. */
    private static final Set<String> PASS_PHASES =
            Set.of(PassRecord.PREFILL, PassRecord.DECODE, PassRecord.MIXED, "all");

    static final int MAX_LAYER_TYPES = 32;
    static final int MAX_CATEGORIES = 32;
    static final int MAX_FINISH_REASONS = 16;
    /** {@value #SERVICE_FINISHED} reason of a request that never finished. */
    public static final String REASON_TIMEOUT = "timeout";

    // vLLM's defaults (vllm/v1/metrics/loggers.py, PrometheusStatLogger, vllm-project/vllm@005a810b):
    // time_to_first_token_seconds, time_per_output_token_seconds, and request_latency_buckets shared by
    // e2e_request_latency_seconds and request_queue_time_seconds. Same boundaries, so dashboards built for vLLM fit.
    static final double[] TTFT_BUCKETS_S = {
        0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
        160.0, 640.0, 2560.0
    };
    static final double[] TPOT_BUCKETS_S = {
        0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0
    };
    static final double[] REQUEST_LATENCY_BUCKETS_S = {
        0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0,
        1920.0, 7680.0
    };
    // Ours (vLLM has neither): batch sizes in powers of two; bubbles 1 us to 1 s in 1-2-5 steps.
    static final double[] BATCH_SIZE_BUCKETS = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
    static final Duration[] BUBBLE_BUCKETS = micros(
            1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000,
            1_000_000);

    // Explicit buckets (1-2-5 steps) instead of Micrometer's ~70 percentile buckets per series.
    private static final Duration[] PASS_BUCKETS = micros(
            1_000,
            2_000,
            5_000,
            10_000,
            20_000,
            50_000,
            100_000,
            200_000,
            500_000,
            1_000_000,
            2_000_000,
            5_000_000,
            10_000_000,
            30_000_000);
    static final Duration[] LAYER_BUCKETS =
            micros(10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 1_000_000);

    /** Who wrote a dead letter, from its headers. */
    public enum DeadLetterOrigin {
        AGENT,
        STREAMS,
        UNKNOWN;

        public String tag() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    private final BoundedTagValues rankKeys;
    private final BoundedTagValues layerTypes = new BoundedTagValues(MAX_LAYER_TYPES);
    private final BoundedTagValues categories = new BoundedTagValues(MAX_CATEGORIES);
    private final Meter.MeterProvider<Timer> passWall;
    private final Meter.MeterProvider<Timer> layerWall;
    private final Meter.MeterProvider<Counter> passesClosed;
    private final Counter layersClosed;
    private final Meter.MeterProvider<Counter> layerKernelTime;
    private final Meter.MeterProvider<Counter> anomalies;
    private final Meter.MeterProvider<Counter> deadLetters;
    private final Meter.MeterProvider<Counter> badRecords;
    private final Counter unauthorized;
    private final Meter.MeterProvider<Counter> liveEvents;
    private final MeterRegistry registry;
    private final BoundedTagValues regressionJobs;
    private final GaugeValues gauges;
    private final ServiceMeters service;
    private final HardwareMeters hardware;
    /**
     * Layer meters by admitted layer type (at most {@value #MAX_LAYER_TYPES} + 2 with unknown and other), so a layer
     * record costs map lookups, not a registry lookup per meter (a tenth of the feed's CPU at production rates).
     */
    private final Map<String, LayerSeries> layerSeries = new ConcurrentHashMap<>();

    private final Set<String> stragglerGauges = ConcurrentHashMap.newKeySet();
    private final Map<String, List<Meter>> regressionGauges = new ConcurrentHashMap<>();

    /** The meters whose series describe one (job, rank), removed with it when it gives its place to another. */
    static final Set<String> RANK_SERIES = Set.of(
            PASS_WALL,
            RANK_HARDWARE_INFO,
            HOST_GPU_IDLE_RATIO,
            HOST_LAUNCH_OVERHEAD_RATIO,
            HOST_GPU_UTILIZATION,
            HOST_PREP_EXPOSED_RATIO,
            HOST_PREP_PERF_IMPACT,
            HOST_PREP_IDLE_ATTRIBUTION,
            HOST_NCCL_RATIO,
            HOST_VERDICT,
            HOST_CROSSED_COUNT,
            HOST_KERNEL_GAPS,
            HOST_GRAPH_COVERAGE,
            HOST_STRAGGLER);

    /**
     * Registers the meters that exist from the start (build info, layer counter) on {@code registry}.
     *
     * @param maxRankTags how many (job, rank) pairs get their own {@value #PASS_WALL} series
     */
    public DashboardMeters(MeterRegistry registry, int maxRankTags) {
        this(registry, maxRankTags, System::nanoTime);
    }

    /** @param clock nanoseconds, for how long a pair has been idle ({@link BoundedTagValues#recycling}) */
    DashboardMeters(MeterRegistry registry, int maxRankTags, LongSupplier clock) {
        this.registry = Objects.requireNonNull(registry, "registry");
        this.rankKeys = BoundedTagValues.recycling(maxRankTags, BoundedTagValues.DEFAULT_IDLE, clock, this::retireRank);
        this.regressionJobs = new BoundedTagValues(maxRankTags);
        this.passWall = Timer.builder(PASS_WALL)
                .description("Wall time of complete forward passes (max end - min start of their kernels), by step"
                        + " phase and steady (true) or cold (false)")
                .serviceLevelObjectives(PASS_BUCKETS)
                .withRegistry(registry);
        this.layerWall = Timer.builder(LAYER_WALL)
                .description("Wall time of layers of closed passes")
                .serviceLevelObjectives(LAYER_BUCKETS)
                .withRegistry(registry);
        this.passesClosed = Counter.builder(PASSES_CLOSED)
                .description("Passes closed by the streams app; complete=false when closed early, steady=false for"
                        + " cold (warm-up) passes")
                .withRegistry(registry);
        this.layersClosed = Counter.builder(LAYERS_CLOSED)
                .description("Layers of closed passes")
                .register(registry);
        this.layerKernelTime = Counter.builder(LAYER_KERNEL_TIME)
                .description("Kernel time of layers of closed passes by layer type and kernel category (sum of kernel"
                        + " durations, concurrent streams counted twice)")
                .baseUnit("seconds")
                .withRegistry(registry);
        this.anomalies = Counter.builder(ANOMALIES)
                .description("Data-quality anomalies reported by agent and streams app")
                .withRegistry(registry);
        this.deadLetters = Counter.builder(DEAD_LETTERS)
                .description("Records sent to the dead-letter topic, by who sent them")
                .withRegistry(registry);
        this.badRecords = Counter.builder(BAD_RECORDS)
                .description("Records the dashboard could not read (skipped, logged with topic/partition/offset)")
                .withRegistry(registry);
        this.unauthorized = Counter.builder(UNAUTHORIZED)
                .description("Requests refused for want of the API token (401)")
                .register(registry);
        this.liveEvents = Counter.builder(LIVE_EVENTS)
                .description("Server-Sent Events written to web pages, by event name")
                .withRegistry(registry);
        this.gauges = new GaugeValues(registry);
        this.service = new ServiceMeters(registry, maxRankTags, gauges, clock);
        this.hardware = new HardwareMeters(registry, rankKeys);
        Gauge.builder(BUILD_INFO, () -> 1)
                .description("Build of llmprof running in this process")
                .tag(TAG_VERSION, version())
                .strongReference(true)
                .register(registry);
    }

    /** Upper bounds of the batch-size histogram buckets (the web page's summary uses the same). */
    public static double[] batchSizeBounds() {
        return BATCH_SIZE_BUCKETS.clone();
    }

    /** Upper bounds of the forward-bubble histogram buckets, ns. */
    public static long[] bubbleBoundsNs() {
        long[] out = new long[BUBBLE_BUCKETS.length];
        for (int i = 0; i < out.length; i++) {
            out[i] = BUBBLE_BUCKETS[i].toNanos();
        }
        return out;
    }

    /** The live hub's open streams; the hub is held by the registry from here on. */
    public void liveClients(java.util.function.IntSupplier clients) {
        Gauge.builder(LIVE_CLIENTS, clients::getAsInt)
                .description("Web pages connected to the live event stream (/api/live)")
                .strongReference(true)
                .register(registry);
    }

    /** One Server-Sent Event written to one client. */
    public void liveEvent(String event) {
        liveEvents.withTags(TAG_EVENT, event).increment();
    }

    /**
     * Counts the pass by complete and steady; times a complete one by (job, rank), phase ({@value
     * PassRecord#PREFILL}, {@value PassRecord#DECODE}, {@value PassRecord#MIXED}, {@code all} without step marker,
     * {@code other} for anything else) and steady.
     */
    public void passClosed(PassRecord pass) {
        String steady = Boolean.toString(pass.steady());
        passesClosed
                .withTags(TAG_COMPLETE, Boolean.toString(pass.complete()), TAG_STEADY, steady)
                .increment();
        // An incomplete pass was cut short (resync, trace end): its wall is not a pass latency.
        if (pass.complete()) {
            // Bound on (job, rank) pairs: rank "0" of every job is its own series until the limit.
            boolean admitted = rankAdmitted(pass.key());
            passWall.withTags(
                            TAG_JOB,
                            admitted ? orUnknown(pass.job()) : BoundedTagValues.OTHER,
                            TAG_RANK,
                            admitted ? orUnknown(pass.rank()) : BoundedTagValues.OTHER,
                            TAG_PHASE,
                            passPhase(pass),
                            TAG_STEADY,
                            steady)
                    .record(pass.wallNs(), TimeUnit.NANOSECONDS);
        }
    }

    /**
     * Counts the layer, times its wall by layer type and adds its kernel time per category ({@link
     * LayerRecord#categories()}, ns) to {@value #LAYER_KERNEL_TIME}; at most {@value #MAX_CATEGORIES} categories get
     * their own series, a negative sum (never written by the streams app) adds nothing.
     */
    public void layerClosed(LayerRecord layer) {
        layersClosed.increment();
        String type = layerTypes.admit(layer.type());
        LayerSeries series = layerSeries.get(type);
        if (series == null) {
            series = layerSeries.computeIfAbsent(
                    type, t -> new LayerSeries(t, layerWall.withTags(TAG_LAYER_TYPE, t), new ConcurrentHashMap<>()));
        }
        series.wall().record(layer.wallNs(), TimeUnit.NANOSECONDS);
        LayerSeries s = series;
        layer.categories().forEach((category, ns) -> {
            if (ns != null && ns >= 0) {
                s.kernelTime(categories.admit(category), layerKernelTime).increment(ns / 1e9);
            }
        });
    }

    /** One layer type's wall timer and its kernel-time counters by admitted category (registered on first use). */
    private record LayerSeries(String type, Timer wall, Map<String, Counter> kernelTimeByCategory) {
        Counter kernelTime(String category, Meter.MeterProvider<Counter> provider) {
            Counter c = kernelTimeByCategory.get(category);
            return c != null
                    ? c
                    : kernelTimeByCategory.computeIfAbsent(
                            category, k -> provider.withTags(TAG_LAYER_TYPE, type, TAG_CATEGORY, k));
        }
    }

    private static String passPhase(PassRecord pass) {
        String phase = pass.phaseOrAll();
        return PASS_PHASES.contains(phase) ? phase : BoundedTagValues.OTHER;
    }

    public void anomaly(Anomaly anomaly) {
        anomalies
                .withTags(
                        TAG_KIND,
                        anomaly.kind().tag(),
                        TAG_SEVERITY,
                        anomaly.severity().name().toLowerCase(Locale.ROOT))
                .increment();
    }

    public void deadLetter(DeadLetterOrigin origin) {
        deadLetters.withTags(TAG_ORIGIN, origin.tag()).increment();
    }

    /** A request refused with 401 (no or wrong API token). */
    public void unauthorized() {
        unauthorized.increment();
    }

    /** A record of {@code topic} that could not be read; topic names are a fixed set. */
    public void badRecord(String topic) {
        badRecords.withTags(TAG_TOPIC, topic).increment();
    }

    /**
     * The gauges of one rank and phase from its latest verdict: M1..M5 (NaN when not applicable), both verdicts
     * ({@value #VERDICT_YES} YES, {@value #VERDICT_NO} NO, {@value #VERDICT_INCONCLUSIVE} INCONCLUSIVE), the crossed
     * count; for phase all also the kernel gap counts per bucket (summed over streams) and graph coverage. Ranks
     * beyond the (job, rank) limit get no host gauges: a shared {@code other} series would mix ranks' ratios.
     */
    public void hostVerdict(HostVerdict v) {
        if (!hostAdmitted(v.job(), v.rank()) || !HOST_PHASES.contains(v.phase())) {
            return;
        }
        Tags tags = Tags.of(TAG_JOB, v.job(), TAG_RANK, v.rank(), TAG_PHASE, v.phase());
        HostAssessment a = v.assessment();
        HostMetrics m = a == null ? null : a.metrics();
        setGauge(
                HOST_GPU_IDLE_RATIO, "M1: GPU idle time / step window time", tags, m == null ? null : m.gpuIdleRatio());
        setGauge(
                HOST_LAUNCH_OVERHEAD_RATIO,
                "M2: launch API time / step window time",
                tags,
                m == null ? null : m.launchOverheadRatio());
        setGauge(
                HOST_GPU_UTILIZATION,
                "M4: GPU busy time / step window time (time-based)",
                tags,
                m == null ? null : m.gpuUtilization());
        setGauge(
                HOST_PREP_EXPOSED_RATIO,
                "M3a: exposed host prep / host prep",
                tags,
                m == null ? null : m.hostPrepExposedRatio());
        setGauge(
                HOST_PREP_PERF_IMPACT,
                "M3b: exposed host prep / step window time",
                tags,
                m == null ? null : m.hostPrepPerfImpact());
        setGauge(
                HOST_PREP_IDLE_ATTRIBUTION,
                "M3c: exposed host prep / GPU idle time",
                tags,
                m == null ? null : m.hostPrepIdleAttribution());
        setGauge(
                HOST_NCCL_RATIO,
                "M5: communication kernel time / GPU busy time (caveat)",
                tags,
                m == null ? null : m.ncclRatio());
        String verdictHelp = "Host-overhead verdict: 1 YES, 0 NO, -1 INCONCLUSIVE";
        setGauge(HOST_VERDICT, verdictHelp, tags.and(TAG_KIND, KIND_SEED), a == null ? null : verdict(a.verdict()));
        setGauge(
                HOST_VERDICT,
                verdictHelp,
                tags.and(TAG_KIND, KIND_LLMPROF),
                a == null ? null : verdict(a.llmprofVerdict()));
        setGauge(
                HOST_CROSSED_COUNT,
                "Metrics among M1, M2, M4, M3a-c that crossed their threshold",
                tags,
                a == null ? null : (double) a.crossedCount());
        if (HostThresholdSet.ALL.equals(v.phase()) && v.drilldown() != null) {
            Tags rankTags = Tags.of(TAG_JOB, v.job(), TAG_RANK, v.rank());
            HostDrillDown d = v.drilldown();
            for (int b = 0; b < HostDrillDown.GAP_BUCKETS.size(); b++) {
                long count = 0;
                for (HostDrillDown.StreamGaps g : d.gaps()) {
                    count += b < g.counts().size() ? g.counts().get(b) : 0;
                }
                setGauge(
                        HOST_KERNEL_GAPS,
                        "Inter-kernel gaps of the rank so far, all streams, by size bucket",
                        rankTags.and(TAG_BUCKET, HostDrillDown.GAP_BUCKETS.get(b)),
                        (double) count);
            }
            Double coverage = d.graph() != null ? d.graph().ratio() : m == null ? null : m.graphCoverage();
            setGauge(HOST_GRAPH_COVERAGE, "Kernels launched by graph launches / kernels", rankTags, coverage);
        }
    }

    /**
     * Registers, once per (job, rank), {@value #HOST_STRAGGLER}: 1 when the rank is a straggler of its job's latest
     * run, 0 when not, NaN without a verdict; {@code value} is read at each scrape.
     */
    public void hostStraggler(String job, String rank, DoubleSupplier value) {
        if (!hostAdmitted(job, rank) || !stragglerGauges.add(RankKey.of(job, rank))) {
            return;
        }
        Gauge.builder(HOST_STRAGGLER, value, DoubleSupplier::getAsDouble)
                .description("1 when the rank arrives last at more than 80% of its collectives (latest run), else 0;"
                        + " NaN with too few collectives")
                .tags(TAG_JOB, job, TAG_RANK, rank)
                .strongReference(true)
                .register(registry);
    }

    /**
     * While the job has a baseline: {@value #HOST_REGRESSION_RATIO} per metric (step_duration, inter_step_gap,
     * host_prep), target / baseline mean, read at each scrape. {@code ratio} null unmarks: the series go away.
     */
    public void hostRegression(String job, ToDoubleFunction<String> ratio, List<String> metrics) {
        List<Meter> old = regressionGauges.remove(job);
        if (old != null) {
            old.forEach(registry::remove);
        }
        if (ratio == null) {
            // unmarked: the job's place goes to the next job that marks a baseline
            regressionJobs.release(job);
            return;
        }
        String tag = regressionJobs.admit(job);
        if (BoundedTagValues.OTHER.equals(tag)) {
            return;
        }
        List<Meter> meters = new ArrayList<>();
        for (String metric : metrics) {
            meters.add(Gauge.builder(HOST_REGRESSION_RATIO, () -> ratio.applyAsDouble(metric))
                    .description("Target run / baseline run mean of the metric; only while a baseline is marked")
                    .tags(TAG_JOB, tag, TAG_METRIC, metric)
                    .strongReference(true)
                    .register(registry));
        }
        regressionGauges.put(job, List.copyOf(meters));
    }

    /**
     * The rank's current {@code llmprof.rank-hardware} record: registers its {@value #RANK_HARDWARE_INFO} series, or
     * replaces it when the tags changed (one series per rank). Ranks beyond the (job, rank) limit get none.
     */
    public void rankHardware(RankHardware record) {
        hardware.put(record);
    }

    /** The record of {@code key} ({@code job/rank}) is gone (tombstone, or dropped by the store): so is its series. */
    public void rankHardwareRemoved(String key) {
        hardware.remove(key);
    }

    /**
     * One ended request: the finish counter by reason ({@value #REASON_TIMEOUT} when it never finished), TTFT when it
     * got a first token, TPOT, e2e and queue time when it finished, its tokens. Observed when the record arrives, that
     * is when the request ends, not at its first token as vLLM does.
     */
    public void serviceRequest(RequestRecord r) {
        service.request(r);
    }

    /** Batch size of a scheduled or executed batch, tagged with its kind. */
    public void serviceBatch(BatchRecord b) {
        service.batch(b);
    }

    /** The bubble after a forward step; a negative one (overlap) is counted, a histogram cannot hold it. */
    public void serviceForward(ForwardRecord f) {
        service.forward(f);
    }

    /** Running, waiting and swapped gauges from the latest snapshot of the instance. */
    public void serviceStates(RequestStateRecord s) {
        service.states(s);
    }

    /** KV cache usage 0-1 of the instance now (used / total blocks over its dp ranks); null: not known yet (NaN). */
    public void serviceKvUsage(String job, String instance, Double usage) {
        service.kvUsage(job, instance, usage);
    }

    /** (job, instance) pairs with service meters of their own; the rest share {@code other}. */
    int serviceSeriesCount() {
        return service.admittedPairs();
    }

    /** Ranks with a {@value #RANK_HARDWARE_INFO} series. */
    int hardwareSeriesCount() {
        return hardware.size();
    }

    /** Layer types with a wall timer of their own, unknown and other included. */
    int layerSeriesCount() {
        return layerSeries.size();
    }

    private boolean hostAdmitted(String job, String rank) {
        return job != null && rank != null && rankAdmitted(RankKey.of(job, rank));
    }

    /** Admits the pair while there is room (or an idle one to retire), and brings back its hardware series. */
    private boolean rankAdmitted(String key) {
        if (BoundedTagValues.OTHER.equals(rankKeys.admit(key))) {
            return false;
        }
        hardware.readmitted(key);
        return true;
    }

    /**
     * A (job, rank) idle for {@link BoundedTagValues#DEFAULT_IDLE} gave its place to a new one: its series leave the
     * registry (a later pass of it, once admitted again, starts them afresh). Runs under the bound's lock.
     */
    private void retireRank(String key) {
        // every series whose (job, rank) makes this key: a job or rank with a '/' in it can share a key with another
        // pair, and then shared its place
        java.util.function.Predicate<Meter.Id> ofRank = id ->
                RANK_SERIES.contains(id.getName()) && key.equals(RankKey.of(id.getTag(TAG_JOB), id.getTag(TAG_RANK)));
        gauges.forget(ofRank);
        stragglerGauges.remove(key);
        hardware.retired(key);
    }

    private void setGauge(String name, String description, Tags tags, Double value) {
        gauges.holder(name, description, null, tags).set(value);
    }

    private static Double verdict(String verdict) {
        if (verdict == null) {
            return null;
        }
        return switch (verdict) {
            case HostAssessment.YES -> VERDICT_YES;
            case HostAssessment.NO -> VERDICT_NO;
            default -> VERDICT_INCONCLUSIVE;
        };
    }

    /** Version from the jar manifest, {@code dev} when run from classes. */
    public static String version() {
        String v = DashboardMeters.class.getPackage().getImplementationVersion();
        return v == null ? "dev" : v;
    }

    private static String orUnknown(String value) {
        return value == null || value.isBlank() ? BoundedTagValues.UNKNOWN : value;
    }

    private static Duration[] micros(long... values) {
        Duration[] out = new Duration[values.length];
        for (int i = 0; i < values.length; i++) {
            out[i] = Duration.ofNanos(values[i] * 1_000);
        }
        return out;
    }
}
