package io.llmprof.agent.produce;

import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What Kafka last answered each producer whose batch it retries by itself. With the agent's infinite delivery
 * timeout a retried error never reaches a callback: the producer's I/O thread ({@code Sender}) only logs it, at WARN,
 * on every retry. The launcher's console logger hands those lines here instead of printing them (they repeat every
 * backoff, and most are a leader moving), so that the agent's own "waiting for Kafka" line and its give-up report can
 * say what Kafka answers ({@code NOT_ENOUGH_REPLICAS on llmprof.traces-3}) instead of "no acknowledgement yet".
 *
 * <p>Bounded: one entry per client id, at most {@link #MAX_CLIENTS} (all forgotten when a new one would pass that).
 */
public final class ProducerRetries {
    /** The logger Kafka's producer I/O thread logs its retries to. */
    public static final String SENDER_LOGGER = "org.apache.kafka.clients.producer.internals.Sender";

    static final int MAX_CLIENTS = 256;
    static final int MAX_REASON = 200;

    /** {@code [Producer clientId=ID] } or {@code [Producer clientId=ID, transactionalId=T] }: LogContext's prefix. */
    private static final Pattern PREFIX = Pattern.compile("^\\[Producer clientId=([^,\\]]+)[^\\]]*\\] ?");
    /** Sender.completeBatch: "... on topic-partition T-3, retrying (N attempts left). Error: NOT_ENOUGH_REPLICAS". */
    private static final Pattern RETRY =
            Pattern.compile("on topic-partition (\\S+?), .*?retrying .*?Error: (.+)$", Pattern.DOTALL);

    private static final Map<String, Heard> LAST = new ConcurrentHashMap<>();

    private ProducerRetries() {}

    /**
     * What Kafka answered, when, and how often in a row.
     *
     * @param reason the error, one line ({@code NOT_ENOUGH_REPLICAS on llmprof.traces-3})
     * @param atNanos {@link System#nanoTime()} when it was last heard
     * @param times how many times in a row it was heard
     */
    public record Heard(String reason, long atNanos, long times) {}

    /**
     * One WARN line of Kafka's {@code Sender} logger, as formatted. Lines without a producer's client id are ignored.
     */
    public static void heardFromSender(String message) {
        if (message == null) {
            return;
        }
        Matcher p = PREFIX.matcher(message);
        if (!p.find()) {
            return;
        }
        String clientId = p.group(1);
        String rest = message.substring(p.end());
        Matcher r = RETRY.matcher(rest);
        String reason = r.find() ? r.group(2).strip() + " on " + r.group(1) : rest.strip();
        heard(clientId, oneLine(reason));
    }

    static void heard(String clientId, String reason) {
        long now = System.nanoTime();
        if (LAST.size() >= MAX_CLIENTS && !LAST.containsKey(clientId)) {
            LAST.clear();
        }
        LAST.merge(
                clientId,
                new Heard(reason, now, 1),
                (old, fresh) -> new Heard(reason, now, old.reason().equals(reason) ? old.times() + 1 : 1));
    }

    /** What Kafka last answered this producer, if it was heard at or after {@code sinceNanos}. */
    public static Optional<Heard> last(String clientId, long sinceNanos) {
        if (clientId == null) {
            return Optional.empty();
        }
        Heard h = LAST.get(clientId);
        return h == null || h.atNanos() - sinceNanos < 0 ? Optional.empty() : Optional.of(h);
    }

    /** Forgets everything (tests). */
    static void clear() {
        LAST.clear();
    }

    private static String oneLine(String s) {
        String flat = s.replaceAll("\\s+", " ");
        return flat.length() <= MAX_REASON ? flat : flat.substring(0, MAX_REASON) + "...";
    }
}
