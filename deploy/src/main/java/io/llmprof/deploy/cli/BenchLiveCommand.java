package io.llmprof.deploy.cli;

import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.agent.produce.TraceBatcher;
import io.llmprof.agent.produce.TraceReaders;
import io.llmprof.agent.replay.Replayer;
import io.llmprof.agent.service.ServiceFixtures;
import io.llmprof.agent.service.ServiceJsonLines;
import io.llmprof.agent.service.ServiceShipper;
import io.llmprof.agent.service.ServiceSynth;
import io.llmprof.agent.synth.LaunchMode;
import io.llmprof.agent.synth.StepStyle;
import io.llmprof.agent.synth.SynthResult;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import io.llmprof.dashboard.DashboardServer;
import io.llmprof.dashboard.metrics.DashboardMeters;
import io.llmprof.deploy.FileTrees;
import io.llmprof.events.Topics;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.service.ServiceEvent;
import io.llmprof.streams.metrics.StreamsMeters;
import io.llmprof.streams.offline.AnalyzeCommand;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.Writer;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.DoubleSupplier;
import java.util.zip.GZIPInputStream;
import org.apache.kafka.common.serialization.Serializer;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * The live path's figures, each beside its floor, in one JVM on an embedded broker: trace events/s end to end and
 * per stage (agent, streams, dashboard) beside the gunzip floor, the agent alone and offline {@code analyze layers}
 * of the same files; service events/s the same way; and the delay from an event's arrival at the HTTP ingest to
 * {@code /metrics} under a sustained load at a fraction of the measured maximum.
 */
@Command(
        name = "live",
        mixinStandardHelpOptions = true,
        description = {
            "Measures the live path on an embedded broker and prints each figure beside its floor:",
            "  traces: gunzip floor, agent alone (read, batch, encode), offline analyze layers, and",
            "          agent -> Kafka -> streams -> dashboard end to end with each stage's rate;",
            "  service events: agent alone, end to end, and per stage;",
            "  latency: HTTP ingest -> /metrics p50/p99 under a sustained load at --load x the service maximum."
        })
public final class BenchLiveCommand implements Callable<Integer> {
    static final String JOB = "bench";
    static final String SHIPPED = "synth";
    static final String LOAD = "load";
    static final String PROBED = "probe";
    static final String WARMUP = "warmup-";
    /** The most warm-up rounds of one part under --settle-jit. */
    static final int MAX_WARMUP = 40;

    private static final String DEMO_MODEL = "/io/llmprof/deploy/demo-model.json";

    @Spec
    CommandLine.Model.CommandSpec spec;

    @Option(names = "--ranks", defaultValue = "2", description = "Ranks of the synth trace. Default: ${DEFAULT-VALUE}.")
    int ranks;

    @Option(
            names = "--passes",
            defaultValue = "300",
            description = "Passes per rank of the synth trace (demo model). Default: ${DEFAULT-VALUE}.")
    int passes;

    @Option(
            names = "--service-requests",
            defaultValue = "20000",
            description = "Requests of the synth-service run (0: no service part). Default: ${DEFAULT-VALUE}.")
    long serviceRequests;

    @Option(
            names = "--probes",
            defaultValue = "100",
            description = "Ingest -> /metrics probes under load (0: none). Default: ${DEFAULT-VALUE}.")
    int probes;

    @Option(
            names = "--probe-warmup",
            defaultValue = "100",
            description = "Unmeasured probes under the same load before the measured ones. The load's events are"
                    + " shaped unlike the rounds' (ids that are not numbers, the HTTP ingest), and the JIT recompiles"
                    + " the pipeline's hot code for them in the first 15-20 s: without these, the slowest probes"
                    + " measure that. Default: ${DEFAULT-VALUE}.")
    int probeWarmup;

    @Option(
            names = "--probe-whole-scrape",
            description = "Probes read the whole of /metrics at every look, as before the fourteenth session, instead"
                    + " of only the counter they wait for (name[]): every look then renders every Kafka meter on the"
                    + " box being measured.")
    boolean probeWholeScrape;

    @Option(
            names = "--load",
            defaultValue = "0.5",
            description = "Sustained service load during the probes, as a fraction of the measured end-to-end"
                    + " service maximum. Default: ${DEFAULT-VALUE}.")
    double loadFraction;

    @Option(
            names = "--timeout",
            defaultValue = "10m",
            converter = io.llmprof.streams.cli.DurationConverter.class,
            description = "Deadline of each part: 90s, 10m, 500ms or ISO-8601 (PT10M). Default: ${DEFAULT-VALUE}.")
    Duration timeout;

    @Option(
            names = "--batch-size",
            defaultValue = "" + TraceBatcher.DEFAULT_BATCH_EVENTS,
            description = "Events per trace batch the agent sends, as agent replay --batch-size. Default:"
                    + " ${DEFAULT-VALUE}.")
    int batchSize;

    @Option(
            names = "--warmup",
            defaultValue = "1",
            description = "Unmeasured rounds of the same traces and service file (another run and instance) before the"
                    + " measured ones, so that the live path is compiled by the JIT as the floors are (0: measure it"
                    + " cold). Default: ${DEFAULT-VALUE}.")
    int warmup;

    @Option(
            names = "--settle-jit",
            paramLabel = "PCT",
            description = "After the --warmup rounds, more warm-up rounds until the JIT compiler threads took at most"
                    + " PCT %% of the process CPU in one (at most " + MAX_WARMUP + " warm-up rounds per part; Linux,"
                    + " which shows those threads' CPU). For steady-state figures: a live monitor runs for hours, and"
                    + " on two cores the JIT takes about half the CPU for the first minute. Unset: --warmup rounds"
                    + " only.")
    Double settleJit;

    @Option(
            names = "--rounds",
            defaultValue = "1",
            description = "Measured rounds after the warm-up, each another run and instance (a later round runs on a"
                    + " JVM the earlier ones warmed). With more than one, each live figure is the round with the"
                    + " median rate, followed by min, median and max over the rounds, and the latency load is a"
                    + " fraction of the median. Default: ${DEFAULT-VALUE}.")
    int rounds;

    @Option(
            names = "--streams-property",
            paramLabel = "KEY=VALUE",
            description = "A Kafka Streams property for the streams app (e.g. commit.interval.ms=200), applied last;"
                    + " repeatable. To compare settings side by side.")
    java.util.Map<String, String> streamsProperties = new java.util.LinkedHashMap<>();

    @Option(names = "--work-dir", description = "Where the inputs and the broker's data go. Default: a temp dir.")
    Path workDir;

    /** One figure: what was measured, how many events, in how many seconds. */
    record Figure(String what, long events, double seconds) {
        double perSecond() {
            return seconds <= 0 ? 0 : events / seconds;
        }

        String line() {
            return String.format(
                    Locale.ROOT,
                    "  %-46s %,12d events in %7.2f s = %,12.0f events/s",
                    what,
                    events,
                    seconds,
                    perSecond());
        }
    }

    @Override
    public Integer call() throws Exception {
        if (rounds < 1 || warmup < 0) {
            throw new picocli.CommandLine.ParameterException(
                    spec.commandLine(), "--rounds must be at least 1 and --warmup at least 0");
        }
        if (probeWarmup < 0) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--probe-warmup must be at least 0");
        }
        if (settleJit != null && !(settleJit > 0 && settleJit <= 100)) {
            throw new picocli.CommandLine.ParameterException(
                    spec.commandLine(), "--settle-jit must be a percentage above 0 and at most 100");
        }
        PrintWriter out = spec.commandLine().getOut();
        Path dir =
                workDir != null ? Files.createDirectories(workDir) : Files.createTempDirectory("llmprof-bench-live-");
        try {
            Path model = dir.resolve("demo-model.json");
            try (InputStream in = BenchLiveCommand.class.getResourceAsStream(DEMO_MODEL)) {
                Files.copy(in, model, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            }
            long t = System.nanoTime();
            SynthResult synth = SynthTrace.write(
                    SynthSpec.builder(model)
                            .passes(passes)
                            .ranks(ranks)
                            .launch(LaunchMode.GRAPH)
                            .steps(StepStyle.parse("sglang", DemoCommand.DEMO_PHASES))
                            .gzip(true)
                            .build(),
                    dir.resolve("trace"));
            List<Path> traces = synth.files();
            out.printf(
                    Locale.ROOT,
                    "input: synth %d ranks x %d passes (demo model, SGLang markers, graph launches), %.1f MB gzip,"
                            + " written in %.1f s%n",
                    ranks,
                    passes,
                    synth.totalBytes() / 1e6,
                    seconds(t));
            ServiceSynth.Truth service = null;
            if (serviceRequests > 0) {
                service = ServiceSynth.write(
                        new ServiceSynth.Spec(serviceRequests, 2, 1), ServiceFixtures.Format.JSONL, dir.resolve("svc"));
                out.printf(
                        Locale.ROOT,
                        "input: synth-service %,d requests, %,d events%n",
                        service.requests(),
                        service.events());
            }
            out.flush();

            List<Figure> traceFigures = new ArrayList<>();
            long traceEvents = floors(out, traces, model, traceFigures);

            int exit = 0;
            try (BenchStack stack = new BenchStack(dir, model, streamsProperties)) {
                PrometheusMeterRegistry registry = stack.registry;
                String bootstrap = stack.bootstrap;
                DashboardServer dashboard = stack.dashboard;
                long expectedPasses = (long) passes * traces.size();
                // Same files under another run: the JIT compiles the live path (broker, streams, dashboard) here,
                // as the floors warm the agent, so that the figures below are not mostly compilation.
                exit |= warmUp(
                        out,
                        "traces",
                        name -> liveTraces(out, registry, bootstrap, traces, expectedPasses, name, null));
                Measured traceRounds = measure((suffix, live) ->
                        liveTraces(out, registry, bootstrap, traces, expectedPasses, "live" + suffix, live));
                exit |= traceRounds.exit();
                traceFigures.addAll(medians(traceRounds.rounds()));
                printFigures(out, "traces", traceFigures, traceEvents);
                printSpread(out, traceRounds.rounds());
                printNote(out, jitNote(traceRounds.jitShares()));
                if (service != null) {
                    List<Figure> serviceFigures = new ArrayList<>();
                    ServiceShipper shipper = stack.shipper();
                    ServiceSynth.Truth truth = service;
                    exit |= warmUp(
                            out,
                            "service events",
                            name -> liveService(
                                    out, registry, shipper, dir.resolve("svc"), truth, dashboard, name, null));
                    Measured serviceRounds = measure((suffix, live) -> liveService(
                            out, registry, shipper, dir.resolve("svc"), truth, dashboard, SHIPPED + suffix, live));
                    exit |= serviceRounds.exit();
                    serviceFigures.addAll(medians(serviceRounds.rounds()));
                    printFigures(out, "service events", serviceFigures, service.events());
                    printSpread(out, serviceRounds.rounds());
                    printNote(out, jitNote(serviceRounds.jitShares()));
                    double max = serviceFigures.stream()
                            .filter(f -> f.what().startsWith("end to end"))
                            .mapToDouble(Figure::perSecond)
                            .findFirst()
                            .orElse(0);
                    if (probes > 0 && max > 0) {
                        exit |= latencyUnderLoad(
                                out, shipper, stack.ingest.port(), dashboard.url(), max * loadFraction);
                    }
                }
            }
            return exit;
        } finally {
            if (workDir == null) {
                FileTrees.deleteTree(dir);
            }
        }
    }

    /** The floors of the trace files: gunzip alone, the agent alone (read, batch, encode), offline analyze layers. */
    private long floors(PrintWriter out, List<Path> traces, Path model, List<Figure> figures) throws Exception {
        // Warm the JIT once on the whole path, so the three floors compare like with like.
        agentAlone(traces);
        long events = agentAlone(traces)[0];
        long t = System.nanoTime();
        long bytes = 0;
        byte[] buf = new byte[1 << 16];
        for (Path f : traces) {
            try (InputStream in = new GZIPInputStream(Files.newInputStream(f), 1 << 16)) {
                for (int n; (n = in.read(buf)) > 0; ) {
                    bytes += n;
                }
            }
        }
        figures.add(
                new Figure(String.format(Locale.ROOT, "gunzip floor (%.0f MB JSON)", bytes / 1e6), events, seconds(t)));
        t = System.nanoTime();
        long[] agent = agentAlone(traces);
        figures.add(new Figure(
                String.format(
                        Locale.ROOT, "agent alone: read, batch, encode (%.0f B/event)", (double) agent[1] / events),
                events,
                seconds(t)));
        List<String> args = new ArrayList<>(List.of("layers", "--config", model.toString(), "--format", "json"));
        for (Path f : traces) {
            args.add("--trace");
            args.add(f.toString());
        }
        t = System.nanoTime();
        int code = AnalyzeCommand.commandLine()
                .setOut(new PrintWriter(Writer.nullWriter()))
                .setErr(new PrintWriter(new StringWriter()))
                .execute(args.toArray(String[]::new));
        figures.add(
                new Figure("offline analyze layers" + (code == 0 ? "" : " (exit " + code + ")"), events, seconds(t)));
        out.flush();
        return events;
    }

    /** Reads, batches and encodes the files as the agent does, without Kafka: {events, encoded bytes}. */
    private static long[] agentAlone(List<Path> traces) throws IOException {
        Serializer<TraceBatch> encoder = Topics.TRACE_EVENTS.valueSerde().serializer();
        long[] totals = new long[2];
        for (Path f : traces) {
            TraceBatcher batcher = new TraceBatcher(
                    "bench",
                    "floor",
                    f.toString(),
                    TraceBatcher.DEFAULT_BATCH_EVENTS,
                    TraceBatcher.DEFAULT_MAX_BATCH_BYTES,
                    b -> totals[1] += encoder.serialize(Topics.TRACE_EVENTS.name(), b).length,
                    p -> {});
            totals[0] += TraceReaders.read(f, ReaderOptions.shipping(), batcher).eventsRead();
        }
        return totals;
    }

    /**
     * Replays the traces at full speed under run {@code run} and times each stage until the dashboard holds every
     * pass; adds the figures and prints where the CPU went, unless {@code figures} is null (a warm-up).
     */
    private RoundOutcome liveTraces(
            PrintWriter out,
            MeterRegistry registry,
            String bootstrap,
            List<Path> traces,
            long expectedPasses,
            String run,
            List<Figure> figures)
            throws InterruptedException {
        Stage agent = new Stage(sum(registry, AgentMeters.EVENTS));
        Stage streams = new Stage(sum(registry, StreamsMeters.INGESTED));
        Stage dashboard = new Stage(sum(registry, DashboardMeters.PASSES_CLOSED));
        double agent0 = agent.value.getAsDouble();
        double streams0 = streams.value.getAsDouble();
        double dashboard0 = dashboard.value.getAsDouble();
        Sampler sampler = new Sampler(List.of(agent, streams, dashboard)).start();
        ThreadCpu cpu = ThreadCpu.start();
        long t0 = System.nanoTime();
        Replayer.Options defaults = Replayer.Options.defaults(bootstrap);
        Replayer.Options options = new Replayer.Options(
                defaults.kafka(),
                JOB,
                run + "-" + System.currentTimeMillis(),
                defaults.speed(),
                false,
                defaults.topics(),
                batchSize,
                defaults.readerOptions());
        Replayer.Summary replay = new Replayer(options, registry).replay(traces);
        long events = replay.events();
        boolean done = sampler.awaitAll(
                new double[] {agent0 + events, streams0 + events, dashboard0 + expectedPasses}, t0 + timeout.toNanos());
        sampler.stop();
        if (!done) {
            out.printf(
                    "traces (%s): not every pass reached the dashboard within %s (passes %,.0f of %,d)%n",
                    run, timeout, dashboard.value.getAsDouble() - dashboard0, expectedPasses);
        }
        ThreadCpu.Usage used = cpu.stop();
        if (figures == null) {
            return new RoundOutcome(done ? 0 : 1, used.jitShare());
        }
        figures.add(new Figure("agent -> Kafka (acknowledged)", events, agent.lastSeconds(t0)));
        figures.add(new Figure("streams: first to last event ingested", events, streams.activeSeconds()));
        figures.add(new Figure("dashboard: first to last pass in REST", events, dashboard.activeSeconds()));
        figures.add(new Figure("end to end: start -> every pass in REST", events, dashboard.lastSeconds(t0)));
        out.println(used.line("traces"));
        out.println(firstMoved(t0, agent, streams, dashboard));
        out.println(streamThread(registry));
        return new RoundOutcome(done ? 0 : 1, used.jitShare());
    }

    /**
     * Ships the service run at full speed as instance {@code instance} and times each stage until REST holds every
     * request; adds the figures and prints where the CPU went, unless {@code figures} is null (a warm-up).
     */
    private RoundOutcome liveService(
            PrintWriter out,
            MeterRegistry registry,
            ServiceShipper shipper,
            Path input,
            ServiceSynth.Truth truth,
            DashboardServer dashboard,
            String instance,
            List<Figure> figures)
            throws IOException, InterruptedException {
        BenchHttp http = new BenchHttp();
        URI requests = URI.create(dashboard.url() + "/api/requests?limit=1&job=" + JOB + "&instance=" + instance);
        Stage agent = new Stage(sum(registry, AgentMeters.SERVICE_EVENTS));
        Stage streams = new Stage(sum(registry, StreamsMeters.SERVICE_EVENTS));
        // Every 25 ms, not 5: each read is a REST call the dashboard answers on the same two cores.
        Stage rest = new Stage(() -> http.requestsSeen(requests), TimeUnit.MILLISECONDS.toNanos(25));
        double agent0 = agent.value.getAsDouble();
        double streams0 = streams.value.getAsDouble();
        Sampler sampler = new Sampler(List.of(agent, streams, rest)).start();
        ThreadCpu cpu = ThreadCpu.start();
        long t0 = System.nanoTime();
        long events = shipper.shipFile(input, JOB, instance).events();
        boolean done = sampler.awaitAll(
                new double[] {agent0 + events, streams0 + events, truth.requests()}, t0 + timeout.toNanos());
        sampler.stop();
        if (!done) {
            out.printf("service (%s): not every request reached REST within %s%n", instance, timeout);
        }
        ThreadCpu.Usage used = cpu.stop();
        if (figures == null) {
            return new RoundOutcome(done ? 0 : 1, used.jitShare());
        }
        figures.add(new Figure("agent -> Kafka (acknowledged)", events, agent.lastSeconds(t0)));
        figures.add(new Figure("streams: first to last event ingested", events, streams.activeSeconds()));
        figures.add(new Figure("dashboard: first to last request in REST", events, rest.activeSeconds()));
        figures.add(new Figure("end to end: start -> every request in REST", events, rest.lastSeconds(t0)));
        out.println(used.line("service events"));
        out.println(firstMoved(t0, agent, streams, rest));
        out.println(streamThread(registry));
        return new RoundOutcome(done ? 0 : 1, used.jitShare());
    }

    /** Probes ingest -> /metrics while a load thread ships finished requests at {@code rate} events/s. */
    private int latencyUnderLoad(
            PrintWriter out, ServiceShipper shipper, int ingestPort, String dashboardUrl, double rate)
            throws InterruptedException {
        AtomicBoolean running = new AtomicBoolean(true);
        AtomicLong shipped = new AtomicLong();
        long[] loadNs = new long[2];
        Thread load = new Thread(
                () -> {
                    // A batch every 20 ms; each finished request is 5 events (probeBody's shape).
                    long start = System.nanoTime();
                    loadNs[0] = start;
                    long request = 0;
                    while (running.get()) {
                        double due = rate * (System.nanoTime() - start) / 1e9;
                        List<ServiceEvent> batch = new ArrayList<>();
                        while (shipped.get() + batch.size() + 5 <= due && batch.size() < 50_000) {
                            for (String line : BenchServiceCommand.probeBody((int) (request++ % Integer.MAX_VALUE))
                                    .split("\n")) {
                                batch.add(ServiceJsonLines.parse(line.replace("probe-", "load-" + request + "-")));
                            }
                        }
                        if (!batch.isEmpty()) {
                            shipper.ship(JOB, LOAD, "bench:load", batch, false);
                            shipped.addAndGet(batch.size());
                        }
                        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
                    }
                    loadNs[1] = System.nanoTime();
                },
                "llmprof-bench-load");
        load.setDaemon(true);
        load.start();
        long perProbe = Math.max(TimeUnit.SECONDS.toNanos(5), timeout.toNanos() / 20);
        BenchHttp.Probes p;
        try {
            BenchHttp http = new BenchHttp();
            BenchHttp.Probes warm =
                    http.probe(ingestPort, dashboardUrl, JOB, PROBED, 0, probeWarmup, perProbe, probeWholeScrape);
            if (warm.stopped() != null) {
                out.printf("latency: unmeasured %s%n", warm.stopped());
                out.flush();
                return 1;
            }
            p = http.probe(ingestPort, dashboardUrl, JOB, PROBED, probeWarmup, probes, perProbe, probeWholeScrape);
        } finally {
            running.set(false);
            load.join(TimeUnit.SECONDS.toMillis(30));
        }
        double achieved = shipped.get() / ((loadNs[1] - loadNs[0]) / 1e9);
        out.printf(
                Locale.ROOT,
                "latency: HTTP ingest -> /metrics (%s) under a load of %,.0f events/s (target %,.0f = %.2f x the"
                        + " service maximum), %d probes after %d unmeasured: %s%n",
                probeWholeScrape ? "whole scrapes" : "the counter's series",
                achieved,
                rate,
                loadFraction,
                p.done(),
                probeWarmup,
                p.done() > 0 ? p.summary() : "none measured");
        if (p.done() > 0) {
            out.printf("latency: slowest probes: %s%n", p.slowest());
        }
        if (p.stopped() != null) {
            out.printf("latency: %s%n", p.stopped());
        }
        out.flush();
        return p.done() == probes ? 0 : 1;
    }

    /** A round's exit code and the JIT threads' share of its process CPU (0-1, NaN where not readable). */
    private record RoundOutcome(int exit, double jitShare) {}

    /** One warm-up round of a part, under the run or instance {@code name}. */
    private interface WarmupRound {
        RoundOutcome run(String name) throws Exception;
    }

    /**
     * Runs a part's warm-up rounds: {@code --warmup}, then under {@code --settle-jit} more until the JIT threads'
     * share of one round's process CPU is at most the given percentage, and prints each round's share (if any were
     * run under --settle-jit) and whether it settled.
     */
    private int warmUp(PrintWriter out, String part, WarmupRound round) throws Exception {
        int exit = 0;
        List<Double> shares = new ArrayList<>();
        while (warmMore(shares, warmup, settleJit)) {
            RoundOutcome outcome = round.run(WARMUP + shares.size());
            exit |= outcome.exit();
            shares.add(outcome.jitShare());
        }
        if (settleJit != null) {
            out.println(settleLine(part, shares, settleJit));
            out.flush();
        }
        return exit;
    }

    /**
     * Whether to run another warm-up round after {@code shares} (each done round's JIT share, 0-1, NaN where not
     * readable): below {@code minRounds} always; then, under {@code settlePct}, while the last share is above it and
     * readable, up to {@link #MAX_WARMUP} rounds (at least one round, so that there is a share to look at).
     */
    static boolean warmMore(List<Double> shares, int minRounds, Double settlePct) {
        int done = shares.size();
        if (done < minRounds) {
            return true;
        }
        if (settlePct == null || done >= Math.max(minRounds, MAX_WARMUP)) {
            return false;
        }
        if (done == 0) {
            return true;
        }
        double last = shares.get(done - 1);
        return !Double.isNaN(last) && last * 100 > settlePct;
    }

    /** The --settle-jit outcome of a part's warm-up: the rounds' JIT shares, and settled or not. */
    static String settleLine(String part, List<Double> shares, double settlePct) {
        String each = shares.stream()
                .map(s -> Double.isNaN(s) ? "n/a" : String.format(Locale.ROOT, "%.0f %%", 100 * s))
                .collect(java.util.stream.Collectors.joining(", "));
        double last = shares.isEmpty() ? Double.NaN : shares.get(shares.size() - 1);
        String outcome;
        if (Double.isNaN(last)) {
            outcome = "not settled: the JIT threads' CPU is not readable here (Linux /proc only)";
        } else if (last * 100 <= settlePct) {
            outcome = String.format(Locale.ROOT, "settled at or below %.0f %%", settlePct);
        } else {
            outcome = String.format(
                    Locale.ROOT, "NOT settled at or below %.0f %% within %d rounds", settlePct, shares.size());
        }
        return String.format(
                Locale.ROOT,
                "warm-up (%s): %s, JIT threads' share of the process CPU per round: %s; %s",
                part,
                shares.size() == 1 ? "1 round" : shares.size() + " rounds",
                each,
                outcome);
    }

    /** One measured round of a part: its run or instance name's suffix, and where its live figures go. */
    private interface Round {
        RoundOutcome run(String suffix, List<Figure> figures) throws Exception;
    }

    /**
     * The live figures of each measured round, the rounds' exit codes or'ed, and each round's JIT share of the
     * process CPU (0-1, NaN where not readable).
     */
    private record Measured(int exit, List<List<Figure>> rounds, List<Double> jitShares) {}

    /** Runs the {@code --rounds} measured rounds of a part. */
    private Measured measure(Round round) throws Exception {
        int exit = 0;
        List<List<Figure>> all = new ArrayList<>();
        List<Double> shares = new ArrayList<>();
        for (int r = 0; r < rounds; r++) {
            List<Figure> live = new ArrayList<>();
            RoundOutcome outcome = round.run(suffix(r), live);
            exit |= outcome.exit();
            shares.add(outcome.jitShare());
            all.add(live);
        }
        return new Measured(exit, all, shares);
    }

    /** Above this JIT share in a measured round, the part's figures are said to be a JVM still compiling. */
    static final double STILL_COMPILING = 0.20;

    /**
     * A note under a part's figures when the JIT threads took more than {@link #STILL_COMPILING} of a measured
     * round's CPU: those figures are a warm-up, not the steady state a live monitor runs at; null otherwise.
     */
    static String jitNote(List<Double> shares) {
        double max = shares.stream()
                .filter(s -> !Double.isNaN(s))
                .mapToDouble(Double::doubleValue)
                .max()
                .orElse(0);
        if (max <= STILL_COMPILING) {
            return null;
        }
        return String.format(
                Locale.ROOT,
                "  note: the JIT threads took up to %.0f %% of the CPU in the measured rounds: these figures include"
                        + " the JIT's warm-up; for steady state (hours of serving) measure longer rounds after it has"
                        + " settled, e.g. --passes 3000 --service-requests 200000 --settle-jit 15",
                100 * max);
    }

    /** The run or instance of measured round {@code r}: the first keeps the plain name. */
    private static String suffix(int r) {
        return r == 0 ? "" : "-" + (r + 1);
    }

    /**
     * Per figure (the rounds list the same figures in the same order), the round whose rate is the median: the lower
     * middle one for an even count.
     */
    static List<Figure> medians(List<List<Figure>> rounds) {
        List<Figure> out = new ArrayList<>();
        for (int i = 0; i < rounds.get(0).size(); i++) {
            int at = i;
            List<Figure> sorted = rounds.stream()
                    .map(r -> r.get(at))
                    .sorted(java.util.Comparator.comparingDouble(Figure::perSecond))
                    .toList();
            out.add(sorted.get((sorted.size() - 1) / 2));
        }
        return out;
    }

    /** With more than one round: each figure's min, median and max rate over the rounds. */
    static void printSpread(PrintWriter out, List<List<Figure>> rounds) {
        if (rounds.size() < 2) {
            return;
        }
        out.printf(Locale.ROOT, "  over %d measured rounds (events/s):%n", rounds.size());
        List<Figure> medians = medians(rounds);
        for (int i = 0; i < medians.size(); i++) {
            int at = i;
            java.util.DoubleSummaryStatistics stats =
                    rounds.stream().mapToDouble(r -> r.get(at).perSecond()).summaryStatistics();
            out.printf(
                    Locale.ROOT,
                    "  %-46s min %,10.0f  median %,10.0f  max %,10.0f%n",
                    medians.get(i).what(),
                    stats.getMin(),
                    medians.get(i).perSecond(),
                    stats.getMax());
        }
        out.flush();
    }

    private static void printNote(PrintWriter out, String note) {
        if (note != null) {
            out.println(note);
            out.flush();
        }
    }

    private static void printFigures(PrintWriter out, String what, List<Figure> figures, long events) {
        out.printf(Locale.ROOT, "%s (%,d events):%n", what, events);
        for (Figure f : figures) {
            out.println(f.line());
        }
        out.flush();
    }

    /**
     * The stream thread's own figures (Kafka Streams' thread metrics, averaged over its last sample windows):
     * shares of its time in process, poll, commit and punctuate, and the commits' rate and mean latency.
     */
    static String streamThread(MeterRegistry registry) {
        StringBuilder b = new StringBuilder("  stream thread (Kafka Streams metrics, last ~30-60 s):");
        for (String ratio : List.of("process", "poll", "commit", "punctuate")) {
            b.append(String.format(
                    Locale.ROOT,
                    " %s %.0f %%,",
                    ratio,
                    100 * gauge(registry, "kafka.stream.thread." + ratio + ".ratio")));
        }
        b.append(String.format(
                Locale.ROOT,
                " commits %.1f/s of %.0f ms mean, poll %.0f ms mean",
                gauge(registry, "kafka.stream.thread.commit.rate"),
                gauge(registry, "kafka.stream.thread.commit.latency.avg"),
                gauge(registry, "kafka.stream.thread.poll.latency.avg")));
        return b.toString();
    }

    /** The mean of the gauges of that name (one per stream thread), NaN when there is none. */
    private static double gauge(MeterRegistry registry, String name) {
        return registry.find(name).gauges().stream()
                .mapToDouble(io.micrometer.core.instrument.Gauge::value)
                .average()
                .orElse(Double.NaN);
    }

    /**
     * The sum of every counter of that name (all tags), as a supplier for a {@link Stage}; 0 while none is
     * registered. The counters are collected as they are registered (and dropped as they are removed), so a read adds
     * up those counters only. {@code registry.find(name)} copies and filters every meter of the registry, about 1,400
     * with Kafka's; three stages read every 5 ms that way took the sampler thread a fifth as much CPU as the stream
     * thread it measured, on the same two cores.
     */
    static DoubleSupplier sum(MeterRegistry registry, String name) {
        CopyOnWriteArrayList<Counter> counters = new CopyOnWriteArrayList<>();
        registry.config()
                .onMeterAdded(m -> {
                    if (m instanceof Counter c && m.getId().getName().equals(name)) {
                        counters.addIfAbsent(c);
                    }
                })
                .onMeterRemoved(counters::remove);
        registry.find(name).counters().forEach(counters::addIfAbsent);
        return () -> {
            double total = 0;
            for (Counter c : counters) {
                total += c.count();
            }
            return total;
        };
    }

    /** A stage's progress: when its value first moved and when it last changed. */
    static final class Stage {
        final DoubleSupplier value;
        private final long everyNs;
        private long sampledNs = Long.MIN_VALUE;
        volatile double last;
        volatile long firstMovedNs;
        volatile long lastMovedNs;

        Stage(DoubleSupplier value) {
            this(value, 0);
        }

        /** @param everyNs least time between two reads of {@code value} (an HTTP read costs the stack CPU) */
        Stage(DoubleSupplier value, long everyNs) {
            this.value = value;
            this.everyNs = everyNs;
            this.last = value.getAsDouble();
        }

        void sample(long now) {
            if (sampledNs != Long.MIN_VALUE && now - sampledNs < everyNs) {
                return;
            }
            sampledNs = now;
            double v = value.getAsDouble();
            if (v != last) {
                if (firstMovedNs == 0) {
                    firstMovedNs = now;
                }
                lastMovedNs = now;
                last = v;
            }
        }

        double activeSeconds() {
            return firstMovedNs == 0 ? 0 : (lastMovedNs - firstMovedNs) / 1e9;
        }

        double firstSeconds(long t0) {
            return firstMovedNs == 0 ? 0 : (firstMovedNs - t0) / 1e9;
        }

        double lastSeconds(long t0) {
            return lastMovedNs == 0 ? 0 : (lastMovedNs - t0) / 1e9;
        }
    }

    /** When each stage saw its first record: where the end-to-end time before the stages' own goes. */
    private static String firstMoved(long t0, Stage agent, Stage streams, Stage dashboard) {
        return String.format(
                Locale.ROOT,
                "  first record after start: agent acknowledged %.2f s, streams ingested %.2f s, dashboard %.2f s",
                agent.firstSeconds(t0),
                streams.firstSeconds(t0),
                dashboard.firstSeconds(t0));
    }

    /** Samples every stage every 5 ms on its own thread. */
    static final class Sampler {
        private final List<Stage> stages;
        private final AtomicBoolean running = new AtomicBoolean(true);
        private final Thread thread;

        Sampler(List<Stage> stages) {
            this.stages = List.copyOf(stages);
            this.thread = new Thread(
                    () -> {
                        while (running.get()) {
                            long now = System.nanoTime();
                            stages.forEach(s -> s.sample(now));
                            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
                        }
                    },
                    "llmprof-bench-sampler");
            thread.setDaemon(true);
        }

        Sampler start() {
            thread.start();
            return this;
        }

        /** Waits until every stage has reached its target or the deadline (nanoTime) passed. */
        boolean awaitAll(double[] targets, long deadlineNs) {
            while (System.nanoTime() < deadlineNs) {
                boolean all = true;
                for (int i = 0; i < targets.length; i++) {
                    all &= stages.get(i).last >= targets[i];
                }
                if (all) {
                    return true;
                }
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
            }
            return false;
        }

        void stop() throws InterruptedException {
            running.set(false);
            thread.join(TimeUnit.SECONDS.toMillis(5));
        }
    }

    private static double seconds(long since) {
        return (System.nanoTime() - since) / 1e9;
    }
}
