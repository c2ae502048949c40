package io.llmprof.dashboard.bench;

import io.javalin.Javalin;
import io.llmprof.dashboard.DashboardConfig;
import io.llmprof.dashboard.api.DashboardApi;
import io.llmprof.dashboard.feed.FeedHandler;
import io.llmprof.dashboard.feed.FeedStatus;
import io.llmprof.dashboard.live.LiveConfig;
import io.llmprof.dashboard.live.LiveHub;
import io.llmprof.dashboard.metrics.DashboardMeters;
import io.llmprof.dashboard.store.HostStore;
import io.llmprof.dashboard.store.PassStore;
import io.llmprof.dashboard.store.QualityStore;
import io.llmprof.dashboard.store.ServiceLimits;
import io.llmprof.dashboard.store.ServiceStore;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * The dashboard's feed alone: the records {@code bench live} hands it (written by the streams app's {@code
 * DashboardFeedCapture}), applied through {@link FeedHandler} to the stores and meters the dashboard server builds,
 * timed by the CPU time of the applying thread, per part (trace topics, service topics), over fresh stores each round.
 * {@code time FILE ROUNDS}: CPU per record. {@code dump FILE DIR}: applies the records once, then writes {@code
 * /metrics} (the llmprof series) and REST answers to DIR, to compare two builds with {@code diff -r}. How to run:
 * docs/benchmarks.md.
 */
public final class FeedCpuTime {
    private FeedCpuTime() {}

    public static void main(String[] args) throws Exception {
        List<ConsumerRecord<byte[], byte[]>> records = read(Path.of(args[1]));
        if (args[0].equals("dump")) {
            dump(records, Path.of(args[2]));
        } else {
            time(records, Integer.parseInt(args[2]));
        }
    }

    private record Stack(
            PrometheusMeterRegistry registry,
            PassStore passes,
            HostStore host,
            ServiceStore service,
            QualityStore quality,
            DashboardMeters meters,
            LiveHub live,
            FeedHandler handler) {
        static Stack create() {
            PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
            DashboardConfig config = DashboardConfig.defaults("unused:9092");
            DashboardMeters meters = new DashboardMeters(registry, config.maxRanks());
            PassStore passes = new PassStore(config.storeLimits());
            HostStore host = new HostStore(config.maxRanks(), HostStore.DEFAULT_MAX_JOBS);
            ServiceStore service = new ServiceStore(ServiceLimits.defaults());
            QualityStore quality = new QualityStore(config.showInternals());
            LiveHub live = new LiveHub(LiveConfig.defaults(), meters);
            return new Stack(
                    registry,
                    passes,
                    host,
                    service,
                    quality,
                    meters,
                    live,
                    new FeedHandler(passes, host, service, quality, meters, live));
        }
    }

    private static void time(List<ConsumerRecord<byte[], byte[]>> records, int rounds) {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        for (int round = 0; round < rounds; round++) {
            Stack s = Stack.create();
            long traceNs = 0;
            long serviceNs = 0;
            int traceRecords = 0;
            int serviceRecords = 0;
            int bad = 0;
            int from = 0;
            while (from < records.size()) {
                boolean service = records.get(from).topic().startsWith("llmprof.service-");
                int to = from;
                while (to < records.size()
                        && to - from < 5_000
                        && records.get(to).topic().startsWith("llmprof.service-") == service) {
                    to++;
                }
                long cpu0 = threads.getCurrentThreadCpuTime();
                for (int i = from; i < to; i++) {
                    if (!s.handler().handle(records.get(i))) {
                        bad++;
                    }
                }
                long ns = threads.getCurrentThreadCpuTime() - cpu0;
                if (service) {
                    serviceNs += ns;
                    serviceRecords += to - from;
                } else {
                    traceNs += ns;
                    traceRecords += to - from;
                }
                from = to;
            }
            System.out.printf(
                    "round %d: traces %d records %.3f s CPU (%.2f us/record), service %d records %.3f s CPU (%.2f"
                            + " us/record), %d bad%n",
                    round,
                    traceRecords,
                    traceNs / 1e9,
                    traceNs / 1e3 / traceRecords,
                    serviceRecords,
                    serviceNs / 1e9,
                    serviceNs / 1e3 / serviceRecords,
                    bad);
        }
    }

    private static void dump(List<ConsumerRecord<byte[], byte[]>> records, Path dir) throws Exception {
        Stack s = Stack.create();
        int bad = 0;
        for (ConsumerRecord<byte[], byte[]> r : records) {
            if (!s.handler().handle(r)) {
                bad++;
            }
        }
        System.out.println(bad + " bad records");
        FeedStatus up = new FeedStatus(
                FeedStatus.State.RUNNING, 1, records.size(), bad, Optional.of(Instant.EPOCH), Optional.empty());
        Javalin app = DashboardApi.create(
                        s.passes(),
                        s.host(),
                        s.service(),
                        s.quality(),
                        s.live(),
                        (job, run) -> {},
                        s.registry(),
                        () -> up)
                .start("127.0.0.1", 0);
        try {
            Files.createDirectories(dir);
            HttpClient http = HttpClient.newHttpClient();
            String base = "http://127.0.0.1:" + app.port();
            List<String> paths = new ArrayList<>(List.of(
                    "/api/ranks",
                    "/api/jobs",
                    "/api/jobs/t/passes",
                    "/api/jobs/t/stragglers",
                    "/api/requests?limit=1000",
                    "/api/batches?limit=1000",
                    "/api/forwards?limit=1000",
                    "/api/kvcache",
                    "/api/request-states?limit=1000",
                    "/api/service/summary",
                    "/api/anomalies",
                    "/api/ranks/0/passes?job=t",
                    "/api/ranks/0/host?job=t",
                    "/api/ranks/1/passes?job=t&limit=1000",
                    "/api/ranks/1/clusters?job=t",
                    "/api/ranks/1/passes/500/layers/3/kernels?job=t",
                    "/api/requests?slowest=" + ServiceLimits.defaults().slowestPerInstance() + "&by=e2e",
                    "/api/requests?slowest=" + ServiceLimits.defaults().slowestPerInstance() + "&by=ttft",
                    "/api/requests?slowest=" + ServiceLimits.defaults().slowestPerInstance() + "&by=tpot",
                    "/api/requests?slowest=" + ServiceLimits.defaults().slowestPerInstance() + "&by=queue"));
            int n = 0;
            for (String p : paths) {
                HttpResponse<String> res = http.send(
                        HttpRequest.newBuilder(URI.create(base + p)).build(), HttpResponse.BodyHandlers.ofString());
                Files.writeString(
                        dir.resolve(String.format("%02d.json", n++)), p + " " + res.statusCode() + "\n" + res.body());
            }
            HttpResponse<String> metrics = http.send(
                    HttpRequest.newBuilder(URI.create(base + "/metrics")).build(),
                    HttpResponse.BodyHandlers.ofString());
            List<String> lines = new ArrayList<>(Arrays.asList(metrics.body().split("\n")));
            lines.removeIf(l -> !l.contains("llmprof"));
            lines.sort(null);
            Files.write(dir.resolve("metrics.txt"), lines);
        } finally {
            app.stop();
        }
    }

    private static List<ConsumerRecord<byte[], byte[]>> read(Path file) throws java.io.IOException {
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        try (DataInputStream in = new DataInputStream(new BufferedInputStream(Files.newInputStream(file), 1 << 16))) {
            long offset = 0;
            while (true) {
                String topic;
                try {
                    topic = in.readUTF();
                } catch (EOFException e) {
                    break;
                }
                byte[] key = bytes(in);
                byte[] value = bytes(in);
                out.add(new ConsumerRecord<>(topic, 0, offset++, key, value));
            }
        }
        return out;
    }

    private static byte[] bytes(DataInputStream in) throws java.io.IOException {
        int n = in.readInt();
        if (n < 0) {
            return null;
        }
        byte[] b = new byte[n];
        in.readFully(b);
        return b;
    }
}
