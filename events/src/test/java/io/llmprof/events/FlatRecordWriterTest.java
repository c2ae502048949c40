package io.llmprof.events;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/** The flat writer against data binding: the same bytes for every output record it takes, else it declines. */
public class FlatRecordWriterTest {
    @Test
    void writesTheServiceRecordsAndLeavesNestedOnesToDataBinding() {
        TreeSet<String> flat = new TreeSet<>();
        for (Topic<?, ?> topic : Topics.registry()) {
            if (topic.valueSerde() instanceof JsonSerde<?> json
                    && FlatRecordWriter.of(json.type()).isPresent()) {
                flat.add(json.type().getSimpleName());
            }
        }
        // PdRecord holds a list of records, the trace and host records nested records: data binding writes those.
        // The four busiest service records travel as protobuf (OutputRecordSerde).
        assertThat(flat).containsExactly("CoordinatorRecord", "EpBalanceRecord", "KvCacheRecord", "MoeRecord");
    }

    /** Every flat record type, random values (nulls, extremes, escapes, non-ASCII): the mapper's bytes exactly. */
    @Test
    void writesTheBytesTheMapperWrites() throws Exception {
        Random random = new Random(27);
        int types = 0;
        for (Topic<?, ?> topic : Topics.registry()) {
            if (!(topic.valueSerde() instanceof JsonSerde<?> json)) {
                continue;
            }
            @SuppressWarnings("unchecked")
            Class<Object> type = (Class<Object>) json.type();
            FlatRecordWriter<Object> writer = FlatRecordWriter.of(type).orElse(null);
            if (writer == null) {
                continue;
            }
            types++;
            int compared = 0;
            for (int n = 0; n < 2_000; n++) {
                Object record = RandomRecords.record(type, random, false);
                if (record == null) {
                    continue;
                }
                byte[] expected = Json.mapper().writeValueAsBytes(record);
                byte[] written = writer.write(record);
                assertThat(written)
                        .as("%s %s", type.getSimpleName(), new String(expected, StandardCharsets.UTF_8))
                        .isNotNull();
                assertThat(new String(written, StandardCharsets.UTF_8))
                        .isEqualTo(new String(expected, StandardCharsets.UTF_8));
                assertThat(Arrays.equals(written, expected)).isTrue();
                compared++;
            }
            assertThat(compared).as(type.getSimpleName()).isGreaterThan(1_000);
        }
        assertThat(types).isEqualTo(4);
    }

    /** A record type of the writer's kinds whose lists and maps may hold nulls (the output records copy theirs). */
    public record Probe(String name, List<String> tags, Map<String, Long> counts, double share) {}

    /** A null inside a list or a map: the writer declines, and the serde writes data binding's bytes. */
    @Test
    void aNullInsideAListOrMapGoesToDataBinding() throws Exception {
        FlatRecordWriter<Probe> writer = FlatRecordWriter.of(Probe.class).orElseThrow();
        JsonSerde<Probe> serde = new JsonSerde<>(Probe.class);
        Map<String, Long> nullValue = new LinkedHashMap<>();
        nullValue.put("a", 1L);
        nullValue.put("b", null);
        List<Probe> declined = List.of(
                new Probe("x", Arrays.asList("a", null), Map.of(), 0.5), new Probe("x", List.of(), nullValue, 0.5));
        for (Probe p : declined) {
            assertThat(writer.write(p)).as("%s", p).isNull();
            assertThat(serde.serializer().serialize("t", p))
                    .isEqualTo(Json.mapper().writeValueAsBytes(p));
        }
        Probe plain = new Probe(null, List.of("a"), Map.of("k", 2L), Double.NaN);
        assertThat(writer.write(plain))
                .isNotNull()
                .isEqualTo(Json.mapper().writeValueAsBytes(plain))
                .isEqualTo(serde.serializer().serialize("t", plain));
    }
}
