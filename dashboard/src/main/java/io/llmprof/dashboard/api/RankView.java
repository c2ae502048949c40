package io.llmprof.dashboard.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import io.llmprof.dashboard.store.RankSummary;
import io.llmprof.events.PassRecord;
import io.llmprof.events.view.HardwareView;
import io.llmprof.events.view.Micros;
import java.math.BigDecimal;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;

/**
 * One rank in {@code GET /api/ranks}. The last_* fields describe the pass received last and are absent
 * while only layers of the rank have arrived. State: {@code state} is {@value #LIVE} while a pass or layer of
 * the rank arrived within the last {@link #LIVE_WINDOW_MS} ms (by the dashboard's clock, so a dashboard
 * replaying its topics after a restart shows every rank live for that long), else {@value #IDLE} since {@code
 * last_seen_ms}; {@code incomplete_held} counts the held passes closed early; {@code anomalies} the anomalies
 * of this job and rank since the dashboard started. Where it ran: {@code hardware} is the {@link HardwareView} of its
 * latest {@code llmprof.rank-hardware} record (as `analyze layers --format json` prints it under {@code
 * ranks[].hardware}) and {@code hardware_line} its one-line text; both null (written) until that record arrives.
 */
@JsonPropertyOrder({
    "key",
    "job",
    "rank",
    "passes_seen",
    "passes_held",
    "last_pass_index",
    "last_wall_us",
    "last_run",
    "state",
    "last_seen_ms",
    "incomplete_held",
    "anomalies",
    "passes_url",
    "hardware",
    "hardware_line"
})
public record RankView(
        @JsonProperty("key") String key,
        @JsonProperty("job") String job,
        @JsonProperty("rank") String rank,
        @JsonProperty("passes_seen") long passesSeen,
        @JsonProperty("passes_held") int passesHeld,
        @JsonProperty("last_pass_index") Long lastPassIndex,
        @JsonProperty("last_wall_us") BigDecimal lastWallUs,
        @JsonProperty("last_run") String lastRun,
        @JsonProperty("state") String state,
        @JsonProperty("last_seen_ms") long lastSeenMs,
        @JsonProperty("incomplete_held") int incompleteHeld,
        @JsonProperty("anomalies") long anomalies,
        @JsonProperty("passes_url") String passesUrl,
        @JsonProperty("hardware") @JsonInclude(JsonInclude.Include.ALWAYS) HardwareView hardware,
        @JsonProperty("hardware_line") @JsonInclude(JsonInclude.Include.ALWAYS) String hardwareLine) {
    public static final String LIVE = "live";
    public static final String IDLE = "idle";
    public static final long LIVE_WINDOW_MS = 30_000;

    /** @param hardware where the rank ran, null when no record of it arrived */
    static RankView of(RankSummary s, long nowMs, long anomalies, HardwareView hardware) {
        PassRecord last = s.lastPass().orElse(null);
        return new RankView(
                s.key(),
                s.job(),
                s.rank(),
                s.passesSeen(),
                s.passesHeld(),
                last == null ? null : last.index(),
                last == null ? null : Micros.of(last.wallNs()),
                last == null ? null : last.run(),
                nowMs - s.lastSeenMs() <= LIVE_WINDOW_MS ? LIVE : IDLE,
                s.lastSeenMs(),
                s.incompleteHeld(),
                anomalies,
                passesUrl(s.job(), s.rank()),
                hardware,
                hardware == null ? null : hardware.line(s.rank()));
    }

    static String passesUrl(String job, String rank) {
        return "/api/ranks/" + encode(rank).replace("+", "%20") + "/passes?job="
                + encode(job).replace("+", "%20");
    }

    private static String encode(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }
}
