package io.llmprof.dashboard.api;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import io.llmprof.events.view.PassView;
import java.util.List;

/**
 * {@code GET /api/ranks/{rank}/passes}: the rank's most recent passes, newest first, each a {@link
 * PassView} without its {@code layers} field (a list stays small; one pass with layers is {@code
 * /passes/{index}}).
 */
@JsonPropertyOrder({"key", "job", "rank", "passes"})
public record PassesResponse(
        @JsonProperty("key") String key,
        @JsonProperty("job") String job,
        @JsonProperty("rank") String rank,
        @JsonProperty("passes") List<PassView> passes) {}
