package io.llmprof.agent.ingest;

import io.javalin.Javalin;
import io.javalin.http.Context;
import io.javalin.json.JavalinJackson;
import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.agent.metrics.AgentMeters.IngestOutcome;
import io.llmprof.agent.produce.DeliveryException;
import io.llmprof.agent.service.ServiceBatchSink;
import io.llmprof.agent.service.ServiceJsonLines;
import io.llmprof.events.Json;
import io.llmprof.events.service.ServiceEvent;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * HTTP ingest for live emitters (docs/service-events.md): {@code POST /ingest/service-events?job=J&instance=I}
 * with a JSON-lines v1 body ({@link ServiceJsonLines}). All or nothing, so a client can always resend a body:
 *
 * <ul>
 *   <li>202 {@code {"accepted": n}} once Kafka acknowledged all n events;
 *   <li>400 when {@code job}/{@code instance} is missing or any line is bad: {@code {"error", "lines": [{"line",
 *       "error"}]}} naming each bad line; nothing of the body is shipped, each bad line is counted and
 *       dead-lettered;
 *   <li>413 when the body is larger than the limit (default 16 MiB);
 *   <li>503 when Kafka did not acknowledge (nothing is known to be lost: resend).
 * </ul>
 *
 * Also {@code GET /health}. The source of shipped batches is {@code http:<remote address>@<server start ms>}, so a
 * restarted agent starts a new index sequence instead of colliding with its previous one.
 */
public final class ServiceIngestServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ServiceIngestServer.class);

    /** Default body limit: 16 MiB. */
    public static final long DEFAULT_MAX_BODY_BYTES = 16L << 20;

    public static final String PATH = "/ingest/service-events";

    /** At most this many bad lines are listed in a 400 (all are counted and dead-lettered). */
    static final int MAX_LISTED_LINES = 100;

    /**
     * @param host address to bind ({@code 0.0.0.0} for all)
     * @param port port, 0 for an ephemeral one
     * @param maxBodyBytes largest accepted body
     */
    public record Options(String host, int port, long maxBodyBytes) {
        public Options {
            Objects.requireNonNull(host, "host");
            if (port < 0 || port > 65535 || maxBodyBytes < 1) {
                throw new IllegalArgumentException("port " + port + ", maxBodyBytes " + maxBodyBytes);
            }
        }

        public static Options defaults(int port) {
            return new Options("0.0.0.0", port, DEFAULT_MAX_BODY_BYTES);
        }
    }

    private final ServiceBatchSink sink;
    private final AgentMeters meters;
    private final Options options;
    private final long startedMs = System.currentTimeMillis();
    private final Javalin app;

    public ServiceIngestServer(ServiceBatchSink sink, AgentMeters meters, Options options) {
        this.sink = Objects.requireNonNull(sink, "sink");
        this.meters = Objects.requireNonNull(meters, "meters");
        this.options = Objects.requireNonNull(options, "options");
        this.app = Javalin.create(config -> {
            config.showJavalinBanner = false;
            config.startupWatcherEnabled = false;
            config.jsonMapper(new JavalinJackson(Json.mapper(), false));
            // The handler reads the stream itself with its own limit; Javalin's limit only as a backstop.
            config.http.maxRequestSize = options.maxBodyBytes() + 1;
            config.router.mount(router -> {
                router.post(PATH, this::ingest);
                router.get("/health", ctx -> ctx.json(Map.of("status", "ok")));
            });
        });
        app.exception(Exception.class, (e, ctx) -> {
            LOG.error("ingest request failed", e);
            meters.ingestRequest(IngestOutcome.FAILED);
            ctx.status(500).json(Map.of("error", "internal error: " + e));
        });
    }

    public ServiceIngestServer start() {
        app.start(options.host(), options.port());
        return this;
    }

    /** The bound port (the ephemeral one when 0 was asked). */
    public int port() {
        return app.port();
    }

    private void ingest(Context ctx) throws IOException {
        String job = ctx.queryParam("job");
        String instance = ctx.queryParam("instance");
        if (job == null || job.isBlank() || instance == null || instance.isBlank()) {
            meters.ingestRequest(IngestOutcome.BAD_REQUEST);
            ctx.status(400).json(Map.of("error", "query parameters job and instance are required"));
            return;
        }
        long declared = ctx.req().getContentLengthLong();
        if (declared > options.maxBodyBytes()) {
            tooLarge(ctx);
            return;
        }
        byte[] body = readLimited(ctx.req().getInputStream(), options.maxBodyBytes());
        if (body == null) {
            tooLarge(ctx);
            return;
        }
        String source = "http:" + ctx.ip() + "@" + startedMs;
        Parsed parsed = parse(source, body);
        if (!parsed.problems().isEmpty()) {
            for (InputProblem p : parsed.problems()) {
                sink.rejected(job, instance, p);
            }
            meters.ingestRequest(IngestOutcome.BAD_REQUEST);
            List<Map<String, Object>> lines = new ArrayList<>();
            for (InputProblem p : parsed.problems()
                    .subList(0, Math.min(MAX_LISTED_LINES, parsed.problems().size()))) {
                Map<String, Object> line = new LinkedHashMap<>();
                line.put("line", p.position());
                line.put("error", p.message());
                lines.add(line);
            }
            Map<String, Object> out = new LinkedHashMap<>();
            out.put(
                    "error",
                    parsed.problems().size() + " bad line(s) of " + parsed.lines()
                            + ": nothing of this body was accepted; fix the lines and resend the whole body");
            out.put("lines", lines);
            ctx.status(400).json(out);
            return;
        }
        try {
            sink.ship(job, instance, source, parsed.events(), false);
        } catch (DeliveryException e) {
            meters.ingestRequest(IngestOutcome.FAILED);
            ctx.status(503).json(Map.of("error", "Kafka did not acknowledge the events (resend): " + e.getMessage()));
            return;
        }
        meters.ingestRequest(IngestOutcome.ACCEPTED);
        ctx.status(202).json(Map.of("accepted", parsed.events().size()));
    }

    private void tooLarge(Context ctx) {
        meters.ingestRequest(IngestOutcome.TOO_LARGE);
        ctx.status(413)
                .json(Map.of(
                        "error",
                        "body larger than " + options.maxBodyBytes() + " bytes: split it into smaller bodies"));
    }

    /** A parsed body. */
    public record Parsed(long lines, List<ServiceEvent> events, List<InputProblem> problems) {}

    /** Parses a JSON-lines body; problems name their line ({@link InputProblem#position()}). */
    public static Parsed parse(String source, byte[] body) throws IOException {
        List<ServiceEvent> events = new ArrayList<>();
        List<InputProblem> problems = new ArrayList<>();
        ServiceJsonLines.Summary s = ServiceJsonLines.read(
                source,
                new InputStreamReader(new ByteArrayInputStream(body), StandardCharsets.UTF_8),
                events::add,
                problems::add);
        List<InputProblem> reported = problems;
        if (!problems.isEmpty()) {
            // The dead letter carries the whole bad line, not the reader's 80-character snippet.
            String[] lines = new String(body, StandardCharsets.UTF_8).split("\n", -1);
            List<InputProblem> full = new ArrayList<>(problems.size());
            for (InputProblem p : problems) {
                int i = (int) p.position() - 1;
                String raw = i >= 0 && i < lines.length ? lines[i].strip() : p.rawSnippet();
                full.add(new InputProblem(p.kind(), p.file(), p.position(), p.message(), raw, p.exception()));
            }
            reported = full;
        }
        return new Parsed(s.lines(), events, reported);
    }

    /** The stream's bytes, or null when there are more than {@code max}. */
    static byte[] readLimited(InputStream in, long max) throws IOException {
        byte[] out = in.readNBytes((int) Math.min(Integer.MAX_VALUE - 8, max));
        if (in.read() != -1) {
            return null;
        }
        return out;
    }

    @Override
    public void close() {
        app.stop();
    }
}
