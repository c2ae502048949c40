package io.llmprof.dashboard.api;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/** Where the page's files and its chart library are served from. */
final class WebAssets {
    /** Classpath folder of the page (index.html, app.js, ...), served at {@code /}. */
    static final String WEB_DIRECTORY = "/web";

    static final String ECHARTS_POM = "/META-INF/maven/org.webjars.npm/echarts/pom.properties";
    static final String ECHARTS_VERSION = echartsVersion();
    /** Javalin serves WebJars at {@code /webjars/<name>/<version>/...}. */
    static final String ECHARTS_PATH = "/webjars/echarts/" + ECHARTS_VERSION + "/dist/echarts.min.js";

    private WebAssets() {}

    /**
     * {@code GET /api/ui-config}: what the page needs to know about this server.
     *
     * @param echarts path of the chart library script
     * @param live path of the Server-Sent Events stream
     * @param flushMs how often live events are flushed at most
     * @param timelinePoints default points of {@code /api/ranks/{rank}/timeline}
     */
    @JsonPropertyOrder({"echarts", "live", "flush_ms", "timeline_points"})
    record UiConfig(
            @JsonProperty("echarts") String echarts,
            @JsonProperty("live") String live,
            @JsonProperty("flush_ms") long flushMs,
            @JsonProperty("timeline_points") int timelinePoints) {}

    private static String echartsVersion() {
        try (InputStream in = WebAssets.class.getResourceAsStream(ECHARTS_POM)) {
            if (in == null) {
                throw new IllegalStateException(
                        "the ECharts WebJar is missing from the classpath (" + ECHARTS_POM + ")");
            }
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("version");
        } catch (IOException e) {
            throw new IllegalStateException("cannot read " + ECHARTS_POM + ": " + e.getMessage(), e);
        }
    }
}
