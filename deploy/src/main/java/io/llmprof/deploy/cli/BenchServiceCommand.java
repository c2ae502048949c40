package io.llmprof.deploy.cli;

import io.llmprof.agent.ingest.ServiceIngestServer;
import io.llmprof.agent.service.ServiceFixtures;
import io.llmprof.agent.service.ServiceShipper;
import io.llmprof.agent.service.ServiceSynth;
import io.llmprof.dashboard.DashboardServer;
import io.llmprof.deploy.FileTrees;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * The closing-note figures of service profiling, on an embedded broker in this JVM: (a) service events per second
 * through agent -> Kafka -> streams -> REST, (b) the delay from an event's arrival at the HTTP ingest to its effect
 * in /metrics (p50, p99).
 */
@Command(
        name = "bench-service",
        mixinStandardHelpOptions = true,
        description = {
            "Measures service profiling end to end on an embedded broker: (a) ships a synth-service run with the",
            "agent and times it until every request is in /api/requests (events/s); (b) posts one finished request",
            "at a time to the HTTP ingest and times each until /metrics counts it (p50, p99)."
        })
public final class BenchServiceCommand implements Callable<Integer> {
    static final String JOB = "bench";
    static final String SHIPPED = "synth";
    static final String PROBED = "probe";

    @Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Option(
            names = "--requests",
            defaultValue = "100000",
            description = "Requests of the shipped synth-service run (0: skip part a). Default: ${DEFAULT-VALUE}.")
    long requests;

    @Option(names = "--dp-ranks", defaultValue = "2", description = "DP ranks of that run. Default: ${DEFAULT-VALUE}.")
    int dpRanks;

    @Option(
            names = "--format",
            defaultValue = "SLICE",
            description = "Layout of that run: ${COMPLETION-CANDIDATES}. Default: ${DEFAULT-VALUE}.")
    ServiceFixtures.Format format;

    @Option(
            names = "--probes",
            defaultValue = "200",
            description = "Ingest-to-metrics probes (0: skip part b). Default: ${DEFAULT-VALUE}.")
    int probes;

    @Option(
            names = "--timeout",
            defaultValue = "PT10M",
            description = "Deadline of part a, and of each probe / 20. ISO-8601. Default: ${DEFAULT-VALUE}.")
    Duration timeout;

    @Option(names = "--work-dir", description = "Where the input and the broker's data go. Default: a temp dir.")
    Path workDir;

    /**
     * Made when the command runs, not when picocli builds the command tree: an HttpClient initializes TLS (~200
     * classes) and a selector thread, which every other llmprof command would pay for at start-up.
     */
    private BenchHttp http;

    @Override
    public Integer call() throws Exception {
        http = new BenchHttp();
        PrintWriter out = spec.commandLine().getOut();
        Path dir = workDir != null ? Files.createDirectories(workDir) : Files.createTempDirectory("llmprof-bench-");
        ServiceSynth.Truth truth = null;
        if (requests > 0) {
            long t = System.nanoTime();
            truth = ServiceSynth.write(new ServiceSynth.Spec(requests, dpRanks, 1), format, dir.resolve("input"));
            out.printf(
                    Locale.ROOT,
                    "input: synth-service %,d requests, %d DP ranks, %s, %,d events, written in %.1f s%n",
                    truth.requests(),
                    dpRanks,
                    format,
                    truth.events(),
                    seconds(t));
            out.flush();
        }
        try (BenchStack stack = new BenchStack(dir, null, java.util.Map.of())) {
            DashboardServer dashboard = stack.dashboard;
            ServiceIngestServer ingest = stack.ingest;
            out.printf("broker %s, dashboard %s, ingest port %d%n", stack.bootstrap, dashboard.url(), ingest.port());
            out.flush();
            int exit = 0;
            if (truth != null) {
                exit |= throughput(out, stack.shipper(), dir.resolve("input"), truth, dashboard.url());
            }
            if (probes > 0) {
                exit |= probeLatency(out, ingest.port(), dashboard.url());
            }
            return exit;
        } finally {
            if (workDir == null) {
                FileTrees.deleteTree(dir);
            }
        }
    }

    /** (a): ship the input, then wait until /api/requests has seen every request. */
    private int throughput(
            PrintWriter out, ServiceShipper shipper, Path input, ServiceSynth.Truth truth, String dashboardUrl)
            throws IOException {
        URI uri = URI.create(dashboardUrl + "/api/requests?limit=1&job=" + JOB + "&instance=" + SHIPPED);
        long t0 = System.nanoTime();
        ServiceShipper.Result shipped = shipper.shipFile(input, JOB, SHIPPED);
        double shipS = seconds(t0);
        long deadline = t0 + timeout.toNanos();
        long seen = 0;
        while (System.nanoTime() < deadline && (seen = http.requestsSeen(uri)) < truth.requests()) {
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
        }
        double totalS = seconds(t0);
        out.printf(
                Locale.ROOT,
                "(a) agent -> Kafka -> streams -> REST: %,d events (%,d requests) in %.2f s = %,.0f events/s"
                        + " (%,.0f requests/s); agent shipping alone %.2f s (%,.0f events/s); requests in REST: %,d%n",
                shipped.events(),
                truth.requests(),
                totalS,
                shipped.events() / totalS,
                truth.requests() / totalS,
                shipS,
                shipped.events() / shipS,
                seen);
        out.flush();
        return seen >= truth.requests() ? 0 : 1;
    }

    /** (b): one finished request per POST; the delay until the finished counter of the probe instance moves. */
    private int probeLatency(PrintWriter out, int ingestPort, String dashboardUrl) {
        long perProbe = Math.max(TimeUnit.SECONDS.toNanos(5), timeout.toNanos() / 20);
        BenchHttp.Probes p = http.probe(ingestPort, dashboardUrl, JOB, PROBED, probes, perProbe, false);
        if (p.stopped() != null) {
            out.printf("(b) %s; stopping%n", p.stopped());
        }
        if (p.done() == 0) {
            return 1;
        }
        out.printf(
                Locale.ROOT,
                "(b) HTTP ingest -> /metrics (the counter's series) over %d probes: %s%n",
                p.done(),
                p.summary());
        out.printf("(b) slowest probes: %s%n", p.slowest());
        out.flush();
        return p.done() == probes ? 0 : 1;
    }

    /**
     * One request that finishes in its body: httpReq, Enqueue, Dequeue, a prefill forward, httpRes; probe i at i
     * seconds of its own time base, so probes never overlap.
     */
    static String probeBody(int i) {
        long t0 = 1_000_000_000L * (i + 1);
        String rid = "\"rid\":\"probe-" + i + "\"";
        return String.join(
                "\n",
                "{\"ts_ns\":" + t0 + ",\"dur_ns\":1000,\"domain\":\"Request\",\"name\":\"httpReq\",\"pid\":1," + rid
                        + ",\"recvTokenSize=\":8}",
                "{\"ts_ns\":" + (t0 + 2_000) + ",\"domain\":\"Schedule\",\"name\":\"Enqueue\",\"pid\":1," + rid + "}",
                "{\"ts_ns\":" + (t0 + 3_000) + ",\"domain\":\"Schedule\",\"name\":\"Dequeue\",\"pid\":1," + rid + "}",
                "{\"ts_ns\":" + (t0 + 4_000) + ",\"dur_ns\":5000,\"domain\":\"ModelExecute\",\"name\":\"modelExec\","
                        + "\"pid\":1," + rid + "}",
                "{\"ts_ns\":" + (t0 + 10_000) + ",\"dur_ns\":1000,\"domain\":\"Request\",\"name\":\"httpRes\","
                        + "\"pid\":1," + rid + ",\"replyTokenSize=\":1}");
    }

    /** Nearest-rank percentile of sorted values. */
    static long percentile(long[] sorted, double p) {
        int rank = (int) Math.ceil(p / 100.0 * sorted.length);
        return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
    }

    /** The value of one exact series of a Prometheus text exposition ({@code name{labels} }), 0 when absent. */
    static double value(String exposition, String series) {
        int at = exposition.indexOf(series);
        if (at < 0) {
            return 0;
        }
        int end = exposition.indexOf('\n', at);
        return Double.parseDouble(exposition
                .substring(at + series.length(), end < 0 ? exposition.length() : end)
                .trim());
    }

    private static double seconds(long since) {
        return (System.nanoTime() - since) / 1e9;
    }
}
