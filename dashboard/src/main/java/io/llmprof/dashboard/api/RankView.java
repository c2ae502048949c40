package io.llmprof.dashboard.api;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import io.llmprof.dashboard.store.RankSummary;
import io.llmprof.events.PassRecord;
import io.llmprof.events.view.Micros;
import java.math.BigDecimal;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;

/**
 * One rank in {@code GET /api/ranks}. The last_* fields describe the pass received last and are absent
 * while only layers of the rank have arrived.
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
    "passes_url"
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
        @JsonProperty("passes_url") String passesUrl) {

    static RankView of(RankSummary s) {
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
                passesUrl(s.job(), s.rank()));
    }

    static String passesUrl(String job, String rank) {
        return "/api/ranks/" + encode(rank).replace("+", "%20") + "/passes?job="
                + encode(job).replace("+", "%20");
    }

    private static String encode(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }
}
