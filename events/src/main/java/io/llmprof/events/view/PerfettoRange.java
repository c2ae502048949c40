package io.llmprof.events.view;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import java.math.BigDecimal;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;

/**
 * A pass or layer as a range to open in the Perfetto UI: relative to the trace start (µs, exact to the ns: three
 * decimals of a second cannot resolve a layer), the absolute trace timestamps, a ui.perfetto.dev link and the
 * Perfetto SQL that lists the range's slices.
 *
 * <p>The Perfetto UI reads {@code visStart} / {@code visEnd} (ns in the trace's own clock; a Kineto JSON trace's
 * ts µs x 1000) from the query string and, with {@code url=}, opens a trace hosted over HTTPS with CORS at that
 * window (perfetto.dev/docs/visualization/deep-linking-to-perfetto-ui). No URL can open a local file: without a
 * trace URL the link only positions a trace pushed by postMessage; a person opening the file by hand pastes the
 * query into the Query (SQL) page, or uses the relative times. {@code start_s} / {@code end_s} are the same relative
 * times in seconds (the unit of the Perfetto UI's ruler and of the seed's time mapper), exact to the ns. Rules:
 * docs/analysis.md.
 */
@JsonInclude(JsonInclude.Include.ALWAYS)
@JsonPropertyOrder({
    "label",
    "start_us",
    "end_us",
    "dur_us",
    "start_s",
    "end_s",
    "abs_start_ns",
    "abs_end_ns",
    "link",
    "query"
})
public record PerfettoRange(
        @JsonProperty("label") String label,
        @JsonProperty("start_us") BigDecimal startUs,
        @JsonProperty("end_us") BigDecimal endUs,
        @JsonProperty("dur_us") BigDecimal durUs,
        @JsonProperty("start_s") BigDecimal startS,
        @JsonProperty("end_s") BigDecimal endS,
        @JsonProperty("abs_start_ns") long absStartNs,
        @JsonProperty("abs_end_ns") long absEndNs,
        @JsonProperty("link") String link,
        @JsonProperty("query") String query) {
    public static final String UI = "https://ui.perfetto.dev/";

    /**
     * @param traceStartNs the zero of the relative times (the rank's first event), in the trace's clock
     * @param traceUrl where the trace is served (HTTPS, CORS open to ui.perfetto.dev), or null
     */
    public static PerfettoRange of(String label, long startNs, long endNs, long traceStartNs, String traceUrl) {
        String args = "visStart=" + startNs + "&visEnd=" + endNs;
        String link = UI + "?"
                + (traceUrl == null || traceUrl.isBlank()
                        ? ""
                        : "url=" + URLEncoder.encode(traceUrl, StandardCharsets.UTF_8) + "&")
                + args;
        String query =
                "SELECT ts, dur, name FROM slice WHERE ts >= " + startNs + " AND ts + dur <= " + endNs + " ORDER BY ts";
        return new PerfettoRange(
                label,
                Micros.of(startNs - traceStartNs),
                Micros.of(endNs - traceStartNs),
                Micros.of(endNs - startNs),
                BigDecimal.valueOf(startNs - traceStartNs, 9),
                BigDecimal.valueOf(endNs - traceStartNs, 9),
                startNs,
                endNs,
                link,
                query);
    }
}
