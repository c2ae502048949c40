package io.llmprof.deploy.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.events.Json;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** The few HTTP reads and posts the bench commands make against the dashboard and the ingest. */
final class BenchHttp {
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    /** The value of one exact series in {@code /metrics}, 0 while unreachable or absent. */
    double counter(URI metrics, String series) {
        try {
            HttpResponse<String> r = http.send(
                    HttpRequest.newBuilder(metrics)
                            .timeout(Duration.ofSeconds(5))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            return r.statusCode() == 200 ? BenchServiceCommand.value(r.body(), series) : 0;
        } catch (IOException e) {
            return 0;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /** {@code requests_seen} of a {@code /api/requests} answer, 0 while unreachable. */
    long requestsSeen(URI uri) {
        try {
            HttpResponse<byte[]> r = http.send(
                    HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(5)).build(),
                    HttpResponse.BodyHandlers.ofByteArray());
            if (r.statusCode() != 200) {
                return 0;
            }
            JsonNode body = Json.mapper().readTree(r.body());
            return body.path("requests_seen").asLong(0);
        } catch (IOException e) {
            return 0;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /**
     * Ingest-to-metrics probes, one at a time.
     *
     * @param delaysNs POST sent -> the probe counted in /metrics, sorted, {@code done} of them
     * @param acksNs POST sent -> the ingest's 202 (after Kafka's ack), sorted
     * @param done probes measured
     * @param stopped why probing stopped early, null when every probe was measured
     * @param slowest the slowest probes, slowest first, each as its delay and when it was posted (JVM uptime, to set
     *     beside a GC log or a flight recording)
     */
    record Probes(long[] delaysNs, long[] acksNs, int done, String stopped, String slowest) {
        String summary() {
            return String.format(
                    java.util.Locale.ROOT,
                    "p50 %.1f ms, p99 %.1f ms, max %.1f ms (of which the ingest's 202 after Kafka's ack: p50 %.1f ms,"
                            + " p99 %.1f ms)",
                    BenchServiceCommand.percentile(delaysNs, 50) / 1e6,
                    BenchServiceCommand.percentile(delaysNs, 99) / 1e6,
                    delaysNs[delaysNs.length - 1] / 1e6,
                    BenchServiceCommand.percentile(acksNs, 50) / 1e6,
                    BenchServiceCommand.percentile(acksNs, 99) / 1e6);
        }
    }

    /** Slowest probes {@link Probes#slowest} names. */
    static final int SLOWEST_SHOWN = 3;

    /**
     * Posts {@code probes} finished requests ({@link BenchServiceCommand#probeBody}) to the HTTP ingest as instance
     * {@code instance} of {@code job}, one at a time, each timed until the finished-requests counter of that
     * instance in {@code /metrics} counts it (at most {@code perProbeNs} each).
     *
     * @param wholeScrape read the whole of {@code /metrics} at every look (every Kafka meter rendered, about 40 ms of
     *     the dashboard's CPU each, back to back on the box being measured) instead of only the counter it waits for
     *     ({@code name[]}, as Prometheus' exporters take it): the figures before the fourteenth session
     */
    Probes probe(
            int ingestPort,
            String dashboardUrl,
            String job,
            String instance,
            int probes,
            long perProbeNs,
            boolean wholeScrape) {
        return probe(ingestPort, dashboardUrl, job, instance, 0, probes, perProbeNs, wholeScrape);
    }

    /**
     * The same, for probes {@code first} to {@code first + probes - 1} of the instance: after {@code first} probes
     * already made (unmeasured ones, say), each waits for the counter to count it.
     */
    Probes probe(
            int ingestPort,
            String dashboardUrl,
            String job,
            String instance,
            int first,
            int probes,
            long perProbeNs,
            boolean wholeScrape) {
        URI ingest = URI.create("http://127.0.0.1:" + ingestPort + io.llmprof.agent.ingest.ServiceIngestServer.PATH
                + "?job=" + job + "&instance=" + instance);
        URI metrics = URI.create(
                dashboardUrl + "/metrics" + (wholeScrape ? "" : "?name%5B%5D=llmprof_service_requests_finished_total"));
        String series = "llmprof_service_requests_finished_total{instance=\"" + instance + "\",job=\"" + job
                + "\",reason=\"stop\"} ";
        long[] delays = new long[probes];
        long[] acks = new long[probes];
        long[] postedAtUptimeMs = new long[probes];
        java.lang.management.RuntimeMXBean runtime = java.lang.management.ManagementFactory.getRuntimeMXBean();
        int done = 0;
        String stopped = null;
        for (int i = 0; i < probes; i++) {
            postedAtUptimeMs[i] = runtime.getUptime();
            long t = System.nanoTime();
            int status = post(ingest, BenchServiceCommand.probeBody(first + i));
            acks[i] = System.nanoTime() - t;
            if (status != 202) {
                stopped = "probe " + (first + i) + ": ingest answered " + status;
                break;
            }
            long deadline = t + perProbeNs;
            boolean seen = false;
            while (System.nanoTime() < deadline) {
                if (counter(metrics, series) >= first + i + 1) {
                    seen = true;
                    break;
                }
                java.util.concurrent.locks.LockSupport.parkNanos(2_000_000L);
            }
            delays[i] = System.nanoTime() - t;
            if (!seen) {
                stopped = "probe " + (first + i) + ": not in /metrics within " + perProbeNs / 1_000_000_000L + " s";
                break;
            }
            done++;
        }
        Integer[] bySlowest = new Integer[done];
        for (int i = 0; i < done; i++) {
            bySlowest[i] = i;
        }
        java.util.Arrays.sort(bySlowest, (x, y) -> Long.compare(delays[y], delays[x]));
        StringBuilder slowest = new StringBuilder();
        for (int k = 0; k < Math.min(SLOWEST_SHOWN, done); k++) {
            int i = bySlowest[k];
            slowest.append(k == 0 ? "" : ", ")
                    .append(String.format(
                            java.util.Locale.ROOT,
                            "%.1f ms posted at JVM uptime %.3f s",
                            delays[i] / 1e6,
                            postedAtUptimeMs[i] / 1e3));
        }
        long[] d = java.util.Arrays.copyOf(delays, done);
        long[] a = java.util.Arrays.copyOf(acks, done);
        java.util.Arrays.sort(d);
        java.util.Arrays.sort(a);
        return new Probes(d, a, done, stopped, slowest.toString());
    }

    /** POSTs an NDJSON body; the status. */
    int post(URI uri, String body) {
        try {
            return http.send(
                            HttpRequest.newBuilder(uri)
                                    .timeout(Duration.ofSeconds(30))
                                    .header("Content-Type", "application/x-ndjson")
                                    .POST(HttpRequest.BodyPublishers.ofString(body))
                                    .build(),
                            HttpResponse.BodyHandlers.discarding())
                    .statusCode();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }
}
