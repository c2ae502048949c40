package io.llmprof.dashboard.api;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;

/** {@code GET /api/ranks}. */
public record RanksResponse(@JsonProperty("ranks") List<RankView> ranks) {}
