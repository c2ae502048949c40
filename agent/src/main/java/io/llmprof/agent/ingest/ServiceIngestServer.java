package io.llmprof.agent.ingest;

import io.javalin.Javalin;
import io.javalin.http.Context;
import io.javalin.json.JavalinJackson;
import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.agent.metrics.AgentMeters.IngestOutcome;
import io.llmprof.agent.produce.DeliveryException;
import io.llmprof.agent.service.BadLines;
import io.llmprof.agent.service.ServiceBatchSink;
import io.llmprof.agent.service.ServiceJsonLines;
import io.llmprof.events.Json;
import io.llmprof.events.access.ApiToken;
import io.llmprof.events.service.ServiceEvent;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Semaphore;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * HTTP ingest for live emitters (docs/service-events.md): {@code POST /ingest/service-events?job=J&instance=I}
 * with a JSON-lines v1 body ({@link ServiceJsonLines}) and {@code Content-Type: application/x-ndjson} (or {@code
 * application/json}). All or nothing, so a client can always resend a body:
 *
 * <ul>
 *   <li>202 {@code {"accepted": n}} once Kafka acknowledged all n events;
 *   <li>400 when {@code job}/{@code instance} is missing or any line is bad: {@code {"error", "bad_lines",
 *       "lines": [{"line", "error"}]}} naming the first {@value BadLines#LISTED} bad lines; nothing of the body is
 *       shipped; the bad lines are counted, the body gets ONE dead letter (count, kinds, first lines) and at most
 *       one anomaly per source and kind every {@link #ANOMALY_INTERVAL} (the next one says how many were held back);
 *   <li>413 when the body, a line or the number of events is over the limits, or Kafka refuses an event for good
 *       (too large): resending cannot help;
 *   <li>415 without an NDJSON/JSON Content-Type (a plain form POST from any web page cannot reach the ingest without
 *       a CORS preflight);
 *   <li>401 without {@code Authorization: Bearer <token>} when {@link Options#token()} is set;
 *   <li>429 with {@code Retry-After} when {@link Options#maxInFlight()} bodies are already being read;
 *   <li>503 with {@code Retry-After} when Kafka did not acknowledge (nothing is known to be lost: resend).
 * </ul>
 *
 * <p>Memory: the body is read line by line (a line at most {@link Options#maxLineChars()} characters); only the
 * good events are held until the body ends (at most {@link Options#maxEvents()}), the bad ones are counted, so
 * a body of bad lines costs a few kilobytes whatever its size; in total at most {@link Options#maxInFlight()}
 * bodies. Every request is counted by outcome ({@code llmprof.agent.ingest.requests}), truncated bodies included.
 *
 * <p>Also {@code GET /health}. The source of shipped batches is {@code http:<remote address>@<server start ms>}, so
 * a restarted agent starts a new index sequence instead of colliding with its previous one.
 */
public final class ServiceIngestServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ServiceIngestServer.class);

    /** Default body limit: 16 MiB. */
    public static final long DEFAULT_MAX_BODY_BYTES = 16L << 20;

    /** Default line limit: an event well below what one Kafka record may carry. */
    public static final int DEFAULT_MAX_LINE_CHARS = 256 * 1024;

    /** Default events per body. */
    public static final int DEFAULT_MAX_EVENTS = 100_000;

    /** Default bodies read at once. */
    public static final int DEFAULT_MAX_IN_FLIGHT = 2;

    /** Anomalies per source and kind: at most one per this interval. */
    public static final Duration ANOMALY_INTERVAL = Duration.ofSeconds(10);

    /** Seconds a 429 or 503 asks the client to wait. */
    static final int RETRY_AFTER_SECONDS = 1;

    public static final String PATH = "/ingest/service-events";

    /**
     * @param host address to bind
     * @param port port, 0 for an ephemeral one
     * @param maxBodyBytes largest accepted body
     * @param maxLineChars longest accepted line (a longer one is a bad line)
     * @param maxEvents most events in one body
     * @param maxInFlight most bodies read at once (more: 429)
     */
    public record Options(
            String host,
            int port,
            long maxBodyBytes,
            int maxLineChars,
            int maxEvents,
            int maxInFlight,
            ApiToken token) {
        public Options {
            Objects.requireNonNull(host, "host");
            Objects.requireNonNull(token, "token");
            if (port < 0 || port > 65535 || maxBodyBytes < 1 || maxLineChars < 1 || maxEvents < 1 || maxInFlight < 1) {
                throw new IllegalArgumentException("port " + port + ", maxBodyBytes " + maxBodyBytes + ", maxLineChars "
                        + maxLineChars + ", maxEvents " + maxEvents + ", maxInFlight " + maxInFlight);
            }
        }

        /** No token. */
        public Options(String host, int port, long maxBodyBytes, int maxLineChars, int maxEvents, int maxInFlight) {
            this(host, port, maxBodyBytes, maxLineChars, maxEvents, maxInFlight, ApiToken.none());
        }

        /** The default line, event and in-flight limits, no token. */
        public Options(String host, int port, long maxBodyBytes) {
            this(host, port, maxBodyBytes, DEFAULT_MAX_LINE_CHARS, DEFAULT_MAX_EVENTS, DEFAULT_MAX_IN_FLIGHT);
        }

        /** Loopback, the default limits. */
        public static Options defaults(int port) {
            return new Options("127.0.0.1", port, DEFAULT_MAX_BODY_BYTES);
        }

        /** The same options; posts need {@code Authorization: Bearer <token>} when it is set. */
        public Options withToken(ApiToken t) {
            return new Options(host, port, maxBodyBytes, maxLineChars, maxEvents, maxInFlight, t);
        }
    }

    private final ServiceBatchSink sink;
    private final AgentMeters meters;
    private final Options options;
    private final long startedMs = System.currentTimeMillis();
    private final Semaphore inFlight;
    private final AnomalyLimiter anomalies;
    private final Javalin app;

    public ServiceIngestServer(ServiceBatchSink sink, AgentMeters meters, Options options) {
        this(sink, meters, options, System::nanoTime);
    }

    ServiceIngestServer(ServiceBatchSink sink, AgentMeters meters, Options options, LongSupplier clock) {
        this.sink = Objects.requireNonNull(sink, "sink");
        this.meters = Objects.requireNonNull(meters, "meters");
        this.options = Objects.requireNonNull(options, "options");
        this.inFlight = new Semaphore(options.maxInFlight());
        this.anomalies = new AnomalyLimiter(ANOMALY_INTERVAL.toNanos(), clock);
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
        if (options.token().required()) {
            app.before(PATH, ctx -> {
                if (!options.token().accepts(ctx.header("Authorization"))) {
                    meters.ingestRequest(IngestOutcome.UNAUTHORIZED);
                    ctx.header("WWW-Authenticate", ApiToken.challenge())
                            .status(401)
                            .json(Map.of(
                                    "error", "this ingest requires the API token: send Authorization: Bearer <token>"));
                    ctx.skipRemainingHandlers();
                }
            });
        }
        app.exception(Exception.class, (e, ctx) -> {
            LOG.error("ingest request failed: {}", e.toString());
            meters.ingestRequest(IngestOutcome.FAILED);
            ctx.status(500).json(Map.of("error", "internal error; the ingest logged it"));
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

    /** Whether a Content-Type header names NDJSON or JSON (parameters such as charset allowed). */
    static boolean acceptedContentType(String header) {
        if (header == null) {
            return false;
        }
        int semi = header.indexOf(';');
        String type = (semi < 0 ? header : header.substring(0, semi)).strip().toLowerCase(Locale.ROOT);
        return type.equals("application/x-ndjson") || type.equals("application/json");
    }

    private void ingest(Context ctx) throws IOException {
        if (!acceptedContentType(ctx.header("Content-Type"))) {
            meters.ingestRequest(IngestOutcome.UNSUPPORTED_MEDIA_TYPE);
            ctx.status(415)
                    .json(Map.of(
                            "error",
                            "send the body as Content-Type: application/x-ndjson (JSON lines) or application/json"));
            return;
        }
        String job = ctx.queryParam("job");
        String instance = ctx.queryParam("instance");
        if (job == null || job.isBlank() || instance == null || instance.isBlank()) {
            meters.ingestRequest(IngestOutcome.BAD_REQUEST);
            ctx.status(400).json(Map.of("error", "query parameters job and instance are required"));
            return;
        }
        long declared = ctx.req().getContentLengthLong();
        if (declared > options.maxBodyBytes()) {
            tooLarge(ctx, "body larger than " + options.maxBodyBytes() + " bytes: split it into smaller bodies");
            return;
        }
        if (!inFlight.tryAcquire()) {
            meters.ingestRequest(IngestOutcome.BUSY);
            ctx.header("Retry-After", String.valueOf(RETRY_AFTER_SECONDS))
                    .status(429)
                    .json(Map.of("error", options.maxInFlight() + " bodies are being read already: retry shortly"));
            return;
        }
        try {
            ingestBody(ctx, job, instance);
        } finally {
            inFlight.release();
        }
    }

    private void ingestBody(Context ctx, String job, String instance) {
        String source = "http:" + ctx.ip() + "@" + startedMs;
        List<ServiceEvent> events = new ArrayList<>();
        BadLines bad = new BadLines();
        ServiceJsonLines.Summary summary;
        try {
            Reader body = new BufferedReader(
                    new InputStreamReader(
                            new LimitedInputStream(ctx.req().getInputStream(), options.maxBodyBytes()),
                            StandardCharsets.UTF_8),
                    1 << 16);
            summary = ServiceJsonLines.read(
                    source,
                    body,
                    options.maxLineChars(),
                    e -> {
                        if (events.size() >= options.maxEvents()) {
                            throw new TooManyEvents();
                        }
                        events.add(e);
                    },
                    bad);
        } catch (LimitedInputStream.TooLarge e) {
            tooLarge(ctx, "body larger than " + options.maxBodyBytes() + " bytes: split it into smaller bodies");
            return;
        } catch (TooManyEvents e) {
            tooLarge(ctx, "more than " + options.maxEvents() + " events in one body: split it into smaller bodies");
            return;
        } catch (IOException e) {
            meters.ingestRequest(IngestOutcome.TRUNCATED);
            LOG.warn("ingest body from {} ended early or could not be read: {}", source, e.toString());
            ctx.status(400).json(Map.of("error", "the body ended early or could not be read: resend it whole"));
            return;
        }
        if (bad.count() > 0) {
            long[] suppressed = {0};
            boolean anomaly = anomalies.allow(ctx.ip(), bad.kind(), suppressed);
            sink.rejectedLines(
                    job, instance, bad.summary(source, summary.lines(), suppressed[0]), bad.count(), anomaly);
            meters.ingestRequest(IngestOutcome.BAD_REQUEST);
            Map<String, Object> out = new LinkedHashMap<>();
            out.put(
                    "error",
                    bad.count() + " bad line(s) of " + summary.lines()
                            + ": nothing of this body was accepted; fix the lines and resend the whole body");
            out.put("bad_lines", bad.count());
            out.put("lines", bad.listed());
            ctx.status(400).json(out);
            return;
        }
        try {
            sink.ship(job, instance, source, events, false);
        } catch (DeliveryException e) {
            if (refusedForGood(e)) {
                tooLarge(ctx, "an event of this body is too large to be stored: make its attributes smaller");
                return;
            }
            meters.ingestRequest(IngestOutcome.FAILED);
            ctx.header("Retry-After", String.valueOf(RETRY_AFTER_SECONDS))
                    .status(503)
                    .json(Map.of("error", "the events were not stored (Kafka did not acknowledge): resend"));
            return;
        }
        meters.ingestRequest(IngestOutcome.ACCEPTED);
        ctx.status(202).json(Map.of("accepted", events.size()));
    }

    /** A delivery failure that a resend cannot fix: a record over the broker's or producer's size limit. */
    static boolean refusedForGood(Throwable e) {
        int depth = 0;
        for (Throwable c = e; c != null && depth++ < 16; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof org.apache.kafka.common.errors.RecordTooLargeException
                    || c instanceof org.apache.kafka.common.errors.RecordBatchTooLargeException) {
                return true;
            }
        }
        return false;
    }

    private void tooLarge(Context ctx, String message) {
        meters.ingestRequest(IngestOutcome.TOO_LARGE);
        ctx.status(413).json(Map.of("error", message));
    }

    /** Thrown by the event consumer to stop reading a body with too many events. */
    private static final class TooManyEvents extends RuntimeException {
        private static final long serialVersionUID = 1L;

        TooManyEvents() {
            super(null, null, false, false);
        }
    }

    /** A parsed body. */
    public record Parsed(long lines, List<ServiceEvent> events, List<InputProblem> problems) {}

    /** Parses a whole JSON-lines body held in memory (tests, tools); problems name their line. */
    public static Parsed parse(String source, byte[] body) throws IOException {
        List<ServiceEvent> events = new ArrayList<>();
        List<InputProblem> problems = new ArrayList<>();
        ServiceJsonLines.Summary s = ServiceJsonLines.read(
                source,
                new InputStreamReader(new ByteArrayInputStream(body), StandardCharsets.UTF_8),
                events::add,
                problems::add);
        return new Parsed(s.lines(), events, problems);
    }

    @Override
    public void close() {
        app.stop();
    }
}
