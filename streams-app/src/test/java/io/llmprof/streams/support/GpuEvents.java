package io.llmprof.streams.support;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.zip.GZIPInputStream;

/**
 * An independent reading of a (small) Kineto trace's GPU events for test expectations: Jackson tree,
 * exact decimal µs -> ns, sorted by start. Deliberately not the agent's streaming reader, so that the
 * expectations do not share code with what they check.
 */
public final class GpuEvents {
    /** One kernel / memcpy / memset. */
    public record Gpu(String name, String cat, long startNs, long durNs, int stream) {
        public long endNs() {
            return startNs + durNs;
        }

        public boolean kernel() {
            return cat.equals("kernel");
        }
    }

    private GpuEvents() {}

    public static List<Gpu> read(Path file) throws IOException {
        ObjectMapper m = new ObjectMapper().enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS);
        JsonNode root;
        try (InputStream raw = Files.newInputStream(file);
                InputStream in = file.toString().endsWith(".gz") ? new GZIPInputStream(raw) : raw) {
            root = m.readTree(in);
        }
        JsonNode events = root.isArray() ? root : root.get("traceEvents");
        List<Gpu> out = new ArrayList<>();
        for (JsonNode e : events) {
            String cat = e.path("cat").asText();
            if (!"X".equals(e.path("ph").asText())
                    || !(cat.equals("kernel") || cat.equals("gpu_memcpy") || cat.equals("gpu_memset"))) {
                continue;
            }
            out.add(new Gpu(
                    e.path("name").asText(),
                    cat,
                    ns(e.get("ts")),
                    ns(e.get("dur")),
                    e.path("args").path("stream").asInt(-1)));
        }
        out.sort(Comparator.comparingLong(Gpu::startNs));
        return out;
    }

    static long ns(JsonNode us) {
        return new BigDecimal(us.asText()).movePointRight(3).longValueExact();
    }

    /** Events starting in [from, to]. */
    public static List<Gpu> between(List<Gpu> all, long fromNs, long toNs) {
        return all.stream()
                .filter(g -> g.startNs() >= fromNs && g.startNs() <= toNs)
                .toList();
    }

    public static List<Gpu> kernels(List<Gpu> events) {
        return events.stream().filter(Gpu::kernel).toList();
    }

    public static long wall(List<Gpu> events) {
        return events.stream().mapToLong(Gpu::endNs).max().orElse(0)
                - events.stream().mapToLong(Gpu::startNs).min().orElse(0);
    }

    public static long sum(List<Gpu> events) {
        return events.stream().mapToLong(Gpu::durNs).sum();
    }

    /** Length of the union of the intervals. */
    public static long busy(List<Gpu> events) {
        List<Gpu> s = new ArrayList<>(events);
        s.sort(Comparator.comparingLong(Gpu::startNs));
        long total = 0;
        long cs = Long.MIN_VALUE;
        long ce = Long.MIN_VALUE;
        for (Gpu g : s) {
            if (g.startNs() > ce) {
                total += ce - cs;
                cs = g.startNs();
                ce = g.endNs();
            } else {
                ce = Math.max(ce, g.endNs());
            }
        }
        return total + (ce - cs);
    }

    /** µs with 3 decimals, as the JSON views write them. */
    public static BigDecimal us(long ns) {
        return BigDecimal.valueOf(ns, 3);
    }
}
